import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Many files from one HTTPS host that offers HTTP/2 (a real nginx, by ALPN): a batch, a session and the daemon run
/// them as streams of one connection, as many at once as asked for, while a large file keeps a connection of its
/// own over HTTP/1.1. Resume, validators, credentials, redirects and rate limits behave as over HTTP/1.1.
@Suite(.enabled(if: HTTPSNginx.enabled, "needs nginx and openssl (apt-get install nginx-light openssl)"))
struct HTTP2CLITests {
    /// Files `name0` … under `folder`, each of its own bytes.
    static func put(_ nginx: HTTPSNginx, _ folder: String, count: Int, size: Int, seed: UInt64) throws -> [String: [UInt8]] {
        var bodies: [String: [UInt8]] = [:]
        for index in 0..<count {
            let body = TestData.bytes(size, seed: seed + UInt64(index))
            try nginx.put("\(folder)/f\(index).bin", body)
            bodies["/\(folder)/f\(index).bin"] = body
        }
        return bodies
    }

    static func finishedProtocols(_ result: HaulResult) throws -> [String] {
        try result.jsonEvents().filter { $0["type"] as? String == "finished" }.compactMap { $0["protocol"] as? String ?? ($0["task"] as? [String: Any])?["protocol"] as? String }
    }

    @Test func aBatchRunsItsFilesAsStreamsOfOneConnection() async throws {
        try await HTTPSNginx.with(fileSize: 1 << 20) { nginx in
            let bodies = try Self.put(nginx, "many", count: 40, size: 20_000, seed: 1300)
            try await Sandbox.with { box in
                let urls = bodies.keys.sorted().map { nginx.url($0) }
                let result = try await box.run(["get"] + urls + ["-j", "16", "--dir", "D", "--cacert", nginx.certificates.caCertificate, "--json"], timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result.stderr)")
                for (path, body) in bodies {
                    #expect(contentMismatch(box.path("D/" + (path as NSString).lastPathComponent), expected: body) == nil)
                }
                let protocols = try Self.finishedProtocols(result)
                #expect(protocols.count == 40 && protocols.allSatisfy { $0 == "HTTP/2" }, "\(protocols)")
                let logged = await nginx.loggedRequests(.valid, uri: "/many/f0.bin")
                #expect(logged.allSatisfy { $0.protocolVersion == "HTTP/2.0" }, "\(logged)")
                let all = nginx.accessLog().filter { $0.uri.hasPrefix("/many/") }
                #expect(all.count == 40 && all.allSatisfy { $0.protocolVersion == "HTTP/2.0" })
                #expect(Set(all.map(\.connection)).count == 1, "one connection for all: \(Set(all.map(\.connection)))")
            }
        }
    }

    /// A server that sends GOAWAY every few requests (nginx's `keepalive_requests`, 1,000 by default): the requests a
    /// closing connection never sent are sent again at once on another, as curl does, and every file arrives: none
    /// ends "paused" (AsyncHTTPClient reports such a request as cancelled), none is retried after a wait.
    @Test func requestsAConnectionGoingAwayNeverSentAreSentAgain() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            let bodies = try Self.put(nginx, "away", count: 150, size: 2_000, seed: 1350)
            try await Sandbox.with { box in
                try (bodies.keys.sorted().map { nginx.url($0, .fewRequests) }.joined(separator: "\n") + "\n")
                    .write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let result = try await box.run(
                    ["get", "-i", box.path("list.txt"), "-j", "16", "--dir", "D", "--cacert", nginx.certificates.caCertificate, "--json"],
                    timeout: .seconds(120))
                #expect(result.exitCode == 0, "\(result.stderr)")
                for (path, body) in bodies {
                    #expect(contentMismatch(box.path("D/" + (path as NSString).lastPathComponent), expected: body) == nil, "\(path)")
                }
                let events = try result.jsonEvents()
                #expect(events.filter { $0["type"] as? String == "finished" }.count == 150)
                #expect(!events.contains { $0["type"] as? String == "retrying" }, "\(events.filter { $0["type"] as? String == "retrying" })")
                let served = nginx.accessLog().filter { $0.port == nginx.port(.fewRequests) && $0.uri.hasPrefix("/away/") }
                #expect(served.count == 150 && served.allSatisfy { $0.status < 300 }, "each file asked for once: \(served.count), \(served.map(\.status).filter { $0 >= 300 })")
                #expect(Set(served.map(\.connection)).count >= 50, "at most 3 requests a connection")
            }
        }
    }

    /// `-j 16` runs 16 at once against one host over HTTP/2; over HTTP/1.1 the per-host limit (8 by default) holds
    /// the rest back, and the tasks say so.
    @Test func theConcurrencyAskedForIsHonouredAndAHeldBackTaskSaysWhy() async throws {
        try await HTTPSNginx.with(fileSize: 1 << 20) { nginx in
            // 64 KiB/s each (nginx's limit_rate under /crawl/, per request, so per stream): long enough that the first
            // ones are still running when the last ones start, on a busy machine too.
            let bodies = try Self.put(nginx, "crawl", count: 16, size: 1_500_000, seed: 1400)
            try await Sandbox.with { box in
                let session = try await box.run(["session", "set", "--max-concurrent", "16"])
                #expect(session.exitCode == 0, "\(session.stderr)")
                for (role, expectedRunning) in [(HTTPSNginx.Role.valid, 16), (.plain, 8)] {
                    let folder = role == .valid ? "h2" : "h1"
                    // One `haul add` for all: added one by one on a busy machine, the first could end before the last began.
                    let added = try await box.run(["add"] + bodies.keys.sorted().map { nginx.url($0, role) }
                        + ["--dir", folder, "--cacert", nginx.certificates.caCertificate])
                    let ids = added.stdoutLines
                    #expect(ids.count == 16, "\(added.stderr)")
                    var tasks: [[String: Any]] = []
                    try await eventuallyAsync("\(expectedRunning) downloads from \(role) run at once", timeout: .seconds(60), step: .milliseconds(200)) {
                        tasks = try await box.run(["ls", "--json"]).jsonEvents().filter { ids.contains($0["id"] as? String ?? "") }
                        return tasks.filter { $0["state"] as? String == "running" }.count >= expectedRunning
                    }
                    let running = tasks.filter { $0["state"] as? String == "running" }
                    #expect(running.count == expectedRunning, "\(role): \(tasks.map { ($0["state"] ?? "", $0["note"] ?? "") })")
                    if role == .plain {
                        let waiting = tasks.filter { $0["state"] as? String == "waiting" }
                        #expect(waiting.count == 8)
                        #expect(waiting.allSatisfy { ($0["note"] as? String)?.contains("per-host limit") == true }, "\(waiting.map { $0["note"] ?? "" })")
                    }
                    _ = try await box.run(["rm"] + ids)
                }
                _ = try await box.run(["daemon", "stop"])
            }
        }
    }

    /// `-v` with several URLs logs each request and each answer with the protocol it came over (as with one URL),
    /// never a credential, and writes a plain line per file instead of a live view.
    @Test func verboseSaysWhichProtocolEachFileOfABatchCameOver() async throws {
        try await HTTPSNginx.with(fileSize: 10_000) { nginx in
            let bodies = try Self.put(nginx, "verbose", count: 3, size: 20_000, seed: 1450)
            try await Sandbox.with { box in
                let urls = bodies.keys.sorted().map { nginx.url($0) }
                let result = try await box.run(
                    ["get"] + urls + ["--dir", "D", "--cacert", nginx.certificates.caCertificate, "-H", "Authorization: Bearer batch-secret-14", "-v"],
                    timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result.stderr)")
                ProxiedHTTP2Tests.expectExact(box, bodies)
                for path in bodies.keys {
                    #expect(result.stderr.contains("GET \(nginx.url(path))"), "a request logged for \(path): \(result.stderr)")
                }
                let answers = result.stderr.split(separator: "\n").filter { $0.contains(" from ") && $0.contains(" over HTTP/") }
                #expect(answers.count >= 3 && answers.allSatisfy { $0.contains("over HTTP/2") }, "\(answers)")
                #expect(!result.stderr.contains("batch-secret-14") && !result.stdout.contains("batch-secret-14"))
            }
        }
    }

    @Test func aLargeFileInABatchKeepsAConnectionOfItsOwn() async throws {
        try await HTTPSNginx.with(fileSize: 9 << 20) { nginx in
            let bodies = try Self.put(nginx, "small", count: 4, size: 30_000, seed: 1500)
            try await Sandbox.with { box in
                let urls = bodies.keys.sorted().map { nginx.url($0) } + [nginx.url("/file.bin")]
                let result = try await box.run(["get"] + urls + ["-j", "8", "--dir", "D", "--cacert", nginx.certificates.caCertificate, "--json"], timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(box.path("D/file.bin"), expected: nginx.file) == nil)
                let big = nginx.accessLog().filter { $0.uri == "/file.bin" && $0.bytesSent > 0 }
                let overHTTP1 = big.filter { $0.protocolVersion == "HTTP/1.1" }.reduce(0) { $0 + $1.bytesSent }
                #expect(overHTTP1 >= nginx.file.count * 9 / 10, "the large file came over HTTP/1.1: \(big)")
                let small = nginx.accessLog().filter { $0.uri.hasPrefix("/small/") }
                #expect(!small.isEmpty && small.allSatisfy { $0.protocolVersion == "HTTP/2.0" }, "\(small)")
                let protocols = try Self.finishedProtocols(result)
                #expect(protocols.sorted() == ["HTTP/1.1", "HTTP/2", "HTTP/2", "HTTP/2", "HTTP/2"], "\(protocols)")
            }
        }
    }

    @Test func aBatchKilledPartWayResumesItsStreamsWithRangeAndIfRange() async throws {
        try await HTTPSNginx.with(fileSize: 1 << 20) { nginx in
            let body = TestData.bytes(3 << 20, seed: 1600)
            try nginx.put("slow/big.bin", body)
            let small = try Self.put(nginx, "small", count: 3, size: 10_000, seed: 1610)
            try await Sandbox.with { box in
                let args = ["get", nginx.url("/slow/big.bin")] + small.keys.sorted().map { nginx.url($0) }
                    + ["-j", "4", "--dir", "D", "--cacert", nginx.certificates.caCertificate]
                let held = try await killOnceRecorded(box, args, destinationSuffix: "/D/big.bin", atLeast: 512 << 10)
                let again = try await box.run(args, timeout: .seconds(60))
                #expect(again.exitCode == 0, "\(again.stderr)")
                #expect(contentMismatch(box.path("D/big.bin"), expected: body) == nil)
                let resumed = nginx.accessLog().filter { $0.uri == "/slow/big.bin" && !$0.range.isEmpty }
                #expect(resumed.contains { $0.protocolVersion == "HTTP/2.0" && $0.range == "bytes=\(resumeStart(held))-" },
                        "the rest asked for over HTTP/2, from 64 KiB before the \(held) bytes held: \(resumed)")
            }
        }
    }

    @Test func credentialsGoOnlyToTheirOriginOverHTTP2() async throws {
        try await HTTPSNginx.with(fileSize: 200_000) { nginx in
            try await Sandbox.with { box in
                let result = try await box.run([
                    "get", nginx.url("/auth/file.bin"), nginx.url("/auth/moved"), "-u", "\(HTTPSNginx.user):\(HTTPSNginx.password)",
                    "-j", "2", "--dir", "D", "--cacert", nginx.certificates.caCertificate,
                ], timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(!result.stderr.contains(HTTPSNginx.password))
                let authenticated = nginx.accessLog(.valid, uri: "/auth/file.bin")
                #expect(!authenticated.isEmpty && authenticated.allSatisfy { $0.protocolVersion == "HTTP/2.0" && !$0.authorization.isEmpty })
                let redirected = await nginx.loggedRequests(.otherOrigin, uri: "/file.bin")
                #expect(!redirected.isEmpty && redirected.allSatisfy { $0.authorization.isEmpty }, "no credentials to another origin: \(redirected)")
            }
        }
    }

    @Test func aBatchsRateLimitHoldsOverHTTP2() async throws {
        try await HTTPSNginx.with(fileSize: 200_000) { nginx in
            let bodies = try Self.put(nginx, "limited", count: 4, size: 256 << 10, seed: 1700)
            try await Sandbox.with { box in
                let start = ContinuousClock.now
                let result = try await box.run(["get"] + bodies.keys.sorted().map { nginx.url($0) }
                    + ["-j", "4", "--dir", "D", "--limit-rate", "256K", "--cacert", nginx.certificates.caCertificate, "--json"], timeout: .seconds(60))
                let elapsed = ContinuousClock.now - start
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(try Self.finishedProtocols(result).allSatisfy { $0 == "HTTP/2" })
                // 1 MiB at 256 KiB/s together: a lower bound only, which a slow machine cannot break.
                #expect(elapsed >= .seconds(3), "the batch's limit was not kept: \(elapsed)")
            }
        }
    }
}
