import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A batch through squid's `CONNECT` tunnel to an HTTPS nginx that offers HTTP/2: the server chooses `h2` inside the
/// tunnel, and the files are streams of one tunnelled connection (one `CONNECT`, one connection at nginx), byte-exact.
/// Resume, a wrong proxy password and a server that speaks only HTTP/1.1 behave as before.
@Suite(.enabled(if: Squid.enabled, "needs squid (apt-get install squid; scripts/test installs it)"),
       .enabled(if: HTTPSNginx.enabled, "needs nginx-light and openssl (scripts/test installs them)"))
struct ProxiedHTTP2Tests {
    /// `haul get -i LIST` of `urls` through `proxy`, files into `D/`.
    static func batch(_ box: Sandbox, _ urls: [String], proxy: String, nginx: HTTPSNginx, json: Bool = true, jobs: Int = 6) async throws -> HaulResult {
        try (urls.joined(separator: "\n") + "\n").write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
        return try await box.run(
            ["get", "-i", box.path("list.txt"), "-j", String(jobs), "--dir", "D", "--cacert", nginx.certificates.caCertificate, "--proxy", proxy]
                + (json ? ["--json"] : []),
            timeout: .seconds(90))
    }

    /// Every file of `bodies` is in `D/`, byte-exact.
    static func expectExact(_ box: Sandbox, _ bodies: [String: [UInt8]], sourceLocation: SourceLocation = #_sourceLocation) {
        for (path, body) in bodies {
            #expect(contentMismatch(box.path("D/" + (path as NSString).lastPathComponent), expected: body) == nil, "\(path)",
                    sourceLocation: sourceLocation)
        }
    }

    /// The tunnels squid opened to `port` (squid logs a `CONNECT` when its tunnel closes).
    static func tunnels(_ squid: Squid, to port: Int, atLeast count: Int) async -> [String] {
        await squid.loggedRequests(atLeast: count).filter { $0.hasPrefix("CONNECT 127.0.0.1:\(port) ") }
    }

    @Test func aBatchThroughSquidIsStreamsOfOneTunnelledHTTP2Connection() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            let bodies = try HTTP2CLITests.put(nginx, "many", count: 12, size: 40_000, seed: 2500)
            let squid = try Squid(tlsPorts: [nginx.port(.valid)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                let result = try await Self.batch(box, bodies.keys.sorted().map { nginx.url($0) }, proxy: "http://127.0.0.1:\(squid.port)", nginx: nginx)
                #expect(result.exitCode == 0, "\(result.stderr)")
                Self.expectExact(box, bodies)
                let protocols = try HTTP2CLITests.finishedProtocols(result)
                #expect(protocols.count == 12 && protocols.allSatisfy { $0 == "HTTP/2" }, "\(protocols)")
                let served = nginx.accessLog().filter { $0.uri.hasPrefix("/many/") }
                #expect(served.count == 12 && served.allSatisfy { $0.protocolVersion == "HTTP/2.0" && [200, 206].contains($0.status) }, "\(served)")
                #expect(Set(served.map(\.connection)).count == 1, "one connection at nginx for all: \(served)")
                let tunnels = await Self.tunnels(squid, to: nginx.port(.valid), atLeast: 1)
                #expect(tunnels.count == 1 && tunnels.allSatisfy { $0.hasSuffix(" 200") }, "one CONNECT for all: \(squid.requests())")
            }
        }
    }

    @Test func aBatchKilledPartWayThroughSquidResumesItsStreamWithRangeAndIfRange() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            // Under /slow/ a fresh download crawls (256 KiB/s), its resume does not.
            let body = TestData.bytes(3 << 20, seed: 2600)
            try nginx.put("slow/big.bin", body)
            let small = try HTTP2CLITests.put(nginx, "small", count: 3, size: 10_000, seed: 2610)
            let squid = try Squid(tlsPorts: [nginx.port(.valid)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                let args = ["get", nginx.url("/slow/big.bin")] + small.keys.sorted().map { nginx.url($0) }
                    + ["-j", "4", "--dir", "D", "--cacert", nginx.certificates.caCertificate, "--proxy", "127.0.0.1:\(squid.port)"]
                let held = try await killOnceRecorded(box, args, destinationSuffix: "/D/big.bin", atLeast: 512 << 10, timeout: .seconds(60))
                let again = try await box.run(args + ["--json"], timeout: .seconds(90))
                #expect(again.exitCode == 0, "\(again.stderr)")
                #expect(contentMismatch(box.path("D/big.bin"), expected: body) == nil)
                let resumed = nginx.accessLog().filter { $0.uri == "/slow/big.bin" && !$0.range.isEmpty }
                #expect(resumed.contains {
                    $0.protocolVersion == "HTTP/2.0" && $0.status == 206 && $0.range == "bytes=\(resumeStart(held))-" && !$0.ifRange.isEmpty
                }, "the rest asked for over HTTP/2 with If-Range, from 64 KiB before the \(held) bytes held: \(resumed)")
                #expect(try HTTP2CLITests.finishedProtocols(again).allSatisfy { $0 == "HTTP/2" })
            }
        }
    }

    @Test func aWrongProxyPasswordIsStillOneLineAskedOncePerFileAndNeverShown() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            let bodies = try HTTP2CLITests.put(nginx, "viaauth", count: 3, size: 20_000, seed: 2700)
            let squid = try Squid(tlsPorts: [nginx.port(.valid)], basicAuth: ("pu", "right-pass-25"))
            defer { squid.stop() }
            let urls = bodies.keys.sorted().map { nginx.url($0) }
            try await Sandbox.with { box in
                let wrong = try await Self.batch(box, urls, proxy: "http://pu:wrong-pass-25@127.0.0.1:\(squid.port)", nginx: nginx, json: false)
                #expect(wrong.exitCode == 3, "\(wrong.stderr)")
                // The batch's line for each file that failed: the URL and the proxy's answer, in one line.
                let errors = wrong.stderr.split(separator: "\n").filter { $0.hasPrefix("haul: error: ") }
                #expect(errors.count == 3, "one line per file: \(wrong.stderr)")
                for url in urls {
                    #expect(errors.filter { $0.contains(url + ": the proxy http://127.0.0.1:\(squid.port) answered 407") && $0.contains("wrong user or password") }.count == 1,
                            "\(url): \(wrong.stderr)")
                }
                #expect(!wrong.stderr.contains("retry"), "\(wrong.stderr)")
                for output in [wrong.stderr, wrong.stdout] { #expect(!output.contains("wrong-pass-25")) }
                let refused = await Self.tunnels(squid, to: nginx.port(.valid), atLeast: 3)
                #expect(refused.count == 3 && refused.allSatisfy { $0.hasSuffix(" 407") }, "each file asks once: \(squid.requests())")
                #expect(nginx.accessLog().filter { $0.uri.hasPrefix("/viaauth/") }.isEmpty, "nothing got past the proxy")
            }
            try await Sandbox.with { box in
                let right = try await Self.batch(box, urls, proxy: "http://pu:right-pass-25@127.0.0.1:\(squid.port)", nginx: nginx)
                #expect(right.exitCode == 0, "\(right.stderr)")
                Self.expectExact(box, bodies)
                #expect(try HTTP2CLITests.finishedProtocols(right) == ["HTTP/2", "HTTP/2", "HTTP/2"])
                for output in [right.stderr, right.stdout] { #expect(!output.contains("right-pass-25")) }
                let served = nginx.accessLog().filter { $0.uri.hasPrefix("/viaauth/") }
                #expect(served.count == 3 && Set(served.map(\.connection)).count == 1, "\(served)")
            }
        }
    }

    /// Two downloads in the daemon are streams of one tunnelled connection; pausing one resets its stream only: the
    /// other finishes on the same connection, and the paused one resumes on it with Range and If-Range.
    @Test func pausingOneStreamLeavesTheSharedTunnelToTheOthers() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            // Under /crawl/ every request (every stream) is sent at 64 KiB/s: both run for seconds.
            let bodies = try HTTP2CLITests.put(nginx, "crawl", count: 2, size: 512 << 10, seed: 3000)
            let squid = try Squid(tlsPorts: [nginx.port(.valid)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                let paths = bodies.keys.sorted()
                let added = try await box.run(["add"] + paths.map { nginx.url($0) }
                    + ["--dir", "D", "--cacert", nginx.certificates.caCertificate, "--proxy", "127.0.0.1:\(squid.port)", "--no-autostart"])
                let ids = added.stdoutLines
                try #require(ids.count == 2, "add: \(added.stderr)")
                // The one to pause holds more than a resume's overlap (64 KiB, compared again before appending): its
                // resume then asks for a range past byte 0.
                try await eventuallyAsync("both download", timeout: .seconds(30), step: .milliseconds(100)) {
                    let tasks = try await box.run(["ls", "--json", "--no-autostart"]).jsonEvents()
                    let running = tasks.filter { ids.contains($0["id"] as? String ?? "") && $0["state"] as? String == "running" && ($0["bytes"] as? Int ?? 0) > 0 }
                    return running.count == 2 && running.contains { $0["id"] as? String == ids[0] && ($0["bytes"] as? Int ?? 0) > 2 * 65_536 }
                }
                #expect(try await box.run(["pause", ids[0], "--no-autostart"]).exitCode == 0)
                let other = try await box.run(["wait", ids[1], "--no-autostart"], timeout: .seconds(60))
                #expect(other.exitCode == 0, "\(other.stderr)")
                let tasks = try await box.run(["ls", "--json", "--no-autostart"]).jsonEvents()
                #expect(tasks.first { $0["id"] as? String == ids[0] }?["state"] as? String == "paused", "\(tasks)")
                #expect(try await box.run(["resume", ids[0], "--no-autostart"]).exitCode == 0)
                let resumed = try await box.run(["wait", ids[0], "--no-autostart"], timeout: .seconds(60))
                #expect(resumed.exitCode == 0, "\(resumed.stderr)")
                Self.expectExact(box, bodies)
                let served = await nginx.loggedRequests(.valid, uri: paths[0], atLeast: 2) + nginx.accessLog(.valid, uri: paths[1])
                #expect(served.count == 3 && served.allSatisfy { $0.protocolVersion == "HTTP/2.0" }, "\(served)")
                #expect(Set(served.map(\.connection)).count == 1, "the pause reset a stream, not the connection: \(served)")
                let rest = served.filter { $0.uri == paths[0] && $0.range != "bytes=0-" && !$0.range.isEmpty }
                #expect(rest.count == 1 && rest.allSatisfy { $0.status == 206 && !$0.ifRange.isEmpty }, "\(served)")
                let tunnels = await Self.tunnels(squid, to: nginx.port(.valid), atLeast: 0)
                #expect(tunnels.isEmpty, "the tunnel is still open (squid logs it when it closes): \(squid.requests())")
            }
        }
    }

    /// Through the proxy too, a large file keeps a connection of its own over HTTP/1.1, credentials go only to their
    /// origin, and a redirect to another origin is a tunnel (and a connection) of its own.
    @Test func aLargeFileCredentialsAndRedirectsBehaveAsWithoutTheProxy() async throws {
        try await HTTPSNginx.with(fileSize: 200_000) { nginx in
            let big = TestData.bytes(9 << 20, seed: 3100)
            try nginx.put("auth/big.bin", big)
            let squid = try Squid(tlsPorts: [nginx.port(.valid), nginx.port(.otherOrigin)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                let urls = [nginx.url("/auth/file.bin"), nginx.url("/auth/moved"), nginx.url("/auth/big.bin")]
                try (urls.joined(separator: "\n") + "\n").write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let result = try await box.run([
                    "get", "-i", box.path("list.txt"), "-u", "\(HTTPSNginx.user):\(HTTPSNginx.password)", "-j", "3", "--dir", "D",
                    "--cacert", nginx.certificates.caCertificate, "--proxy", "127.0.0.1:\(squid.port)", "--json",
                ], timeout: .seconds(90))
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(!result.stderr.contains(HTTPSNginx.password) && !result.stdout.contains(HTTPSNginx.password))
                #expect(try HTTP2CLITests.finishedProtocols(result).sorted() == ["HTTP/1.1", "HTTP/2", "HTTP/2"])
                #expect(contentMismatch(box.path("D/big.bin"), expected: big) == nil)
                let small = nginx.accessLog(.valid, uri: "/auth/file.bin")
                #expect(!small.isEmpty && small.allSatisfy { $0.protocolVersion == "HTTP/2.0" && !$0.authorization.isEmpty }, "\(small)")
                let large = nginx.accessLog(.valid, uri: "/auth/big.bin")
                #expect(large.filter { $0.protocolVersion == "HTTP/1.1" }.reduce(0) { $0 + $1.bytesSent } >= big.count * 9 / 10, "\(large)")
                let redirected = await nginx.loggedRequests(.otherOrigin, uri: "/file.bin")
                #expect(!redirected.isEmpty && redirected.allSatisfy { $0.authorization.isEmpty && $0.protocolVersion == "HTTP/2.0" },
                        "no credentials to another origin: \(redirected)")
                let tunnels = await Self.tunnels(squid, to: nginx.port(.otherOrigin), atLeast: 1)
                #expect(tunnels.count == 1, "the other origin has a tunnel of its own: \(squid.requests())")
            }
        }
    }

    /// A server that allows 2 streams at once per connection: 6 downloads at once through the proxy become 3
    /// tunnelled connections of 2 streams each, none queued past the server's limit.
    @Test func theServersStreamLimitOpensAnotherTunnelledConnection() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            // 64 KiB/s per stream under /crawl/: the six run at once for seconds.
            let bodies = try HTTP2CLITests.put(nginx, "crawl", count: 6, size: 384 << 10, seed: 3200)
            let squid = try Squid(tlsPorts: [nginx.port(.fewStreams)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                let result = try await Self.batch(box, bodies.keys.sorted().map { nginx.url($0, .fewStreams) }, proxy: "127.0.0.1:\(squid.port)", nginx: nginx)
                #expect(result.exitCode == 0, "\(result.stderr)")
                Self.expectExact(box, bodies)
                #expect(try HTTP2CLITests.finishedProtocols(result) == Array(repeating: "HTTP/2", count: 6))
                let served = nginx.accessLog().filter { $0.port == nginx.port(.fewStreams) && $0.uri.hasPrefix("/crawl/") }
                let perConnection = Dictionary(grouping: served, by: \.connection).mapValues(\.count)
                #expect(served.count == 6 && perConnection.count == 3 && perConnection.values.allSatisfy { $0 == 2 }, "\(served)")
                let tunnels = await Self.tunnels(squid, to: nginx.port(.fewStreams), atLeast: 3)
                #expect(tunnels.count == 3, "\(squid.requests())")
            }
        }
    }

    /// A server that sends GOAWAY after 3 requests on a connection: the connection leaves the pool, the requests it
    /// refused go on another tunnel, and every file arrives.
    @Test func aConnectionThatGoesAwayIsReplaced() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            let bodies = try HTTP2CLITests.put(nginx, "away", count: 10, size: 30_000, seed: 3300)
            let squid = try Squid(tlsPorts: [nginx.port(.fewRequests)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                let result = try await Self.batch(box, bodies.keys.sorted().map { nginx.url($0, .fewRequests) }, proxy: "127.0.0.1:\(squid.port)", nginx: nginx)
                #expect(result.exitCode == 0, "\(result.stderr)")
                Self.expectExact(box, bodies)
                #expect(try HTTP2CLITests.finishedProtocols(result) == Array(repeating: "HTTP/2", count: 10))
                let served = nginx.accessLog().filter { $0.port == nginx.port(.fewRequests) && $0.uri.hasPrefix("/away/") && $0.status < 300 }
                let perConnection = Dictionary(grouping: served, by: \.connection).mapValues(\.count)
                #expect(perConnection.count >= 4 && perConnection.values.allSatisfy { $0 <= 3 }, "\(served)")
            }
        }
    }

    /// Ctrl-C during a batch whose files are streams of one tunnel: the command stops at once (the pooled connection
    /// does not hold it open), and the next run continues every file with Range and If-Range through the proxy.
    @Test func ctrlCStopsABatchOfStreamsAtOnceAndTheNextRunResumesThem() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            // Under /slow/ a fresh download crawls (256 KiB/s per stream), the rest of one does not.
            let bodies = try HTTP2CLITests.put(nginx, "slow", count: 3, size: 2 << 20, seed: 3400)
            let squid = try Squid(tlsPorts: [nginx.port(.valid)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                let args = ["get"] + bodies.keys.sorted().map { nginx.url($0) }
                    + ["-j", "3", "--dir", "D", "--cacert", nginx.certificates.caCertificate, "--proxy", "127.0.0.1:\(squid.port)"]
                let first = try box.start(args)
                try await signalWhen(first, SIGINT, "every file has ≥ 64 KiB", timeout: .seconds(60)) {
                    bodies.keys.allSatisfy { path in
                        (fileSize(box.path("D/" + (path as NSString).lastPathComponent + ".haul-part")) ?? 0) >= 64 << 10
                    }
                }
                let stopped = try await first.wait(timeout: .seconds(10))
                #expect(stopped.exitCode == 130, "\(stopped.stderr)")
                let again = try await box.run(args + ["--json"], timeout: .seconds(90))
                #expect(again.exitCode == 0, "\(again.stderr)")
                Self.expectExact(box, bodies)
                #expect(try HTTP2CLITests.finishedProtocols(again) == ["HTTP/2", "HTTP/2", "HTTP/2"])
                for path in bodies.keys {
                    let resumed = nginx.accessLog(.valid, uri: path).filter { $0.range != "bytes=0-" && !$0.range.isEmpty }
                    #expect(resumed.count == 1 && resumed.allSatisfy { $0.status == 206 && !$0.ifRange.isEmpty && $0.protocolVersion == "HTTP/2.0" },
                            "\(path): \(nginx.accessLog(.valid, uri: path))")
                }
            }
        }
    }

    /// A server that speaks only HTTP/1.1 behind the proxy: every file arrives over HTTP/1.1, and a tunnel whose
    /// response ended is kept for the next file (keep-alive): 8 files 2 at a time take 2 tunnels, not 8.
    @Test func aServerThatSpeaksOnlyHTTP1BehindTheProxyStillServesEveryFileOverKeptTunnels() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            let bodies = try HTTP2CLITests.put(nginx, "one", count: 8, size: 30_000, seed: 2800)
            let squid = try Squid(tlsPorts: [nginx.port(.http1Only)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                let urls = bodies.keys.sorted().map { nginx.url($0, .http1Only) }
                let result = try await Self.batch(box, urls, proxy: "http://127.0.0.1:\(squid.port)", nginx: nginx, jobs: 2)
                #expect(result.exitCode == 0, "\(result.stderr)")
                Self.expectExact(box, bodies)
                let protocols = try HTTP2CLITests.finishedProtocols(result)
                #expect(protocols.count == 8 && protocols.allSatisfy { $0 == "HTTP/1.1" }, "\(protocols)")
                let served = nginx.accessLog().filter { $0.uri.hasPrefix("/one/") }
                #expect(served.count == 8 && served.allSatisfy { $0.protocolVersion == "HTTP/1.1" }, "\(served)")
                #expect(Set(served.map(\.connection)).count == 2, "two kept connections at nginx: \(served)")
                let tunnels = await Self.tunnels(squid, to: nginx.port(.http1Only), atLeast: 2)
                #expect(tunnels.count == 2, "\(squid.requests())")
            }
        }
    }
}

/// A kept HTTP/1.1 tunnel that the server closes while it waits is not used again: the next download opens another.
@Suite(.enabled(if: Squid.enabled, "needs squid (apt-get install squid; scripts/test installs it)"),
       .enabled(if: HTTPSNginx.enabled, "needs nginx-light and openssl (scripts/test installs them)"))
struct KeptTunnelTests {
    @Test func aKeptTunnelTheServerClosedIsReplaced() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            let bodies = try HTTP2CLITests.put(nginx, "kept", count: 2, size: 30_000, seed: 3500)
            let paths = bodies.keys.sorted()
            let squid = try Squid(tlsPorts: [nginx.port(.http1Only)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                for (index, path) in paths.enumerated() {
                    let added = try await box.run(["add", nginx.url(path, .http1Only), "--dir", "D", "--cacert", nginx.certificates.caCertificate,
                                                   "--proxy", "127.0.0.1:\(squid.port)", "--no-autostart"])
                    let id = try #require(added.stdoutLines.first, "add: \(added.stderr)")
                    let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                    #expect(waited.exitCode == 0, "\(waited.stderr)")
                    if index == 0 {
                        // nginx closes the idle connection after 2 s (keepalive_timeout), and squid the tunnel with it.
                        try await eventuallyAsync("squid logs the closed tunnel", timeout: .seconds(20), step: .milliseconds(200)) {
                            Self.closedTunnels(squid, nginx).count == 1
                        }
                    }
                }
                ProxiedHTTP2Tests.expectExact(box, bodies)
                let served = nginx.accessLog().filter { $0.uri.hasPrefix("/kept/") }
                #expect(served.count == 2 && Set(served.map(\.connection)).count == 2, "the closed tunnel was not used: \(served)")
            }
        }
    }

    static func closedTunnels(_ squid: Squid, _ nginx: HTTPSNginx) -> [String] {
        squid.requests().filter { $0.hasPrefix("CONNECT 127.0.0.1:\(nginx.port(.http1Only)) ") }
    }
}

/// A server behind the proxy that accepts the tunnel and never answers TLS: the handshake fails after the time
/// allowed (it waited for ever), in one line, so the requests waiting for that tunnel are not held either.
@Suite(.enabled(if: Squid.enabled, "needs squid (apt-get install squid; scripts/test installs it)"))
struct SilentServerBehindProxyTests {
    @Test func aTLSHandshakeThatNeverEndsInsideTheTunnelTimesOut() async throws {
        let silent = try RefusingPort()
        defer { silent.close() }
        try silent.listenSilently()
        let squid = try Squid(tlsPorts: [silent.port])
        defer { squid.stop() }
        try await Sandbox.with { box in
            let result = try await box.run([
                "get", "https://127.0.0.1:\(silent.port)/f.bin", "-o", "f.bin", "--proxy", "127.0.0.1:\(squid.port)",
                "--connect-timeout", "1", "--stall-timeout", "1", "--retries", "0",
            ], timeout: .seconds(30))
            #expect(result.exitCode != 0, "\(result.stderr)")
            #expect(result.stderr.contains("the TLS handshake with 127.0.0.1") && result.stderr.contains("timed out"), "\(result.stderr)")
            #expect(!fileExists(box.path("f.bin")))
        }
    }
}

/// The same through a SOCKS5 proxy (dante): the files are streams of one connection through it.
@Suite(.enabled(if: Dante.enabled, "needs danted (apt-get install dante-server; scripts/test installs it)"),
       .enabled(if: HTTPSNginx.enabled, "needs nginx-light and openssl (scripts/test installs them)"))
struct SOCKSHTTP2Tests {
    @Test func aBatchThroughSOCKS5IsStreamsOfOneConnection() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            let bodies = try HTTP2CLITests.put(nginx, "socks", count: 8, size: 30_000, seed: 2900)
            let dante = try Dante(authenticated: false)
            defer { dante.stop() }
            try await Sandbox.with { box in
                let result = try await ProxiedHTTP2Tests.batch(box, bodies.keys.sorted().map { nginx.url($0) }, proxy: dante.url(scheme: "socks5h"), nginx: nginx)
                #expect(result.exitCode == 0, "\(result.stderr)")
                ProxiedHTTP2Tests.expectExact(box, bodies)
                #expect(try HTTP2CLITests.finishedProtocols(result) == Array(repeating: "HTTP/2", count: 8))
                let served = nginx.accessLog().filter { $0.uri.hasPrefix("/socks/") }
                #expect(served.count == 8 && Set(served.map(\.connection)).count == 1, "one connection at nginx for all: \(served)")
            }
        }
    }
}
