import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// After a redirect to another host, that host's own netrc entry and the jar's cookies whose domain matches it go with
/// the request, as curl `-L --netrc`, wget and aria2c send them; the first host's login, `-u` and `-b NAME=VALUE`
/// never do. (`127.0.0.1` and `localhost` are two hosts of the one test server.)
@Suite struct RedirectLoginsCLITests {
    let body = TestData.bytes(200_000, seed: 3_508)

    static func basic(_ login: String) -> String { "Basic " + Data(login.utf8).base64EncodedString() }

    static func authorization(_ request: RecordedRequest) -> String? { request.header("Authorization") }

    /// Whether `request` came for `localhost` (the redirect target), by its `Host`.
    static func toLocalhost(_ request: RecordedRequest) -> Bool { request.header("Host")?.hasPrefix("localhost") == true }

    @Test func aRedirectTargetGetsItsOwnNetrcEntryAndNeverTheFirstHosts() async throws {
        try await withTestServer { server in
            let resource = Resource(body: body, etag: "\"n\"")
            let target = server.url("/auth/f.bin").replacingOccurrences(of: "127.0.0.1", with: "localhost")
            server.route("/redir") { _ in redirectPlan(to: target) }
            server.route("/auth/f.bin") { request in
                request.header("Authorization") == Self.basic("ub:pb")
                    ? resource.response(to: request) : .text(401, "no", headers: [("WWW-Authenticate", "Basic realm=\"b\"")])
            }
            try await Sandbox.with { box in
                try writeBytes(Array("machine 127.0.0.1 login ua password pa\nmachine localhost login ub password pb\n".utf8), to: box.path(".netrc"))
                chmod(box.path(".netrc"), 0o600)
                let viaFile = try await box.run(["get", "--netrc-file", box.path(".netrc"), server.url("/redir"), "-o", "a.bin"])
                #expect(viaFile.exitCode == 0, "\(viaFile.stderr)")
                let viaHome = try await box.start(["get", "--netrc", server.url("/redir"), "-o", "b.bin"], environment: ["HOME": box.work]).wait()
                #expect(viaHome.exitCode == 0, "\(viaHome.stderr)")
                // Through the daemon: the task carries the logins to where it runs.
                let added = try await box.run(["add", "--netrc-file", box.path(".netrc"), server.url("/redir"), "-o", "c.bin"])
                let id = try #require(added.stdoutLines.first, "\(added.stderr)")
                let waited = try await box.run(["wait", id], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                for name in ["a.bin", "b.bin", "c.bin"] { #expect(contentMismatch(box.path(name), expected: body) == nil, "\(name)") }
                #expect(server.requests("/redir").allSatisfy { Self.authorization($0) == Self.basic("ua:pa") })
                let targets = server.requests("/auth/f.bin")
                #expect(targets.count >= 3 && targets.allSatisfy(Self.toLocalhost))
                #expect(targets.allSatisfy { Self.authorization($0) == Self.basic("ub:pb") }, "only its own entry, never ua's")

                // -u is for the URL given only; the target gets nothing, and the line says how to give it its own.
                let given = try await box.run(["get", "-u", "ua:s3cretA", server.url("/redir"), "-o", "d.bin"])
                #expect(given.exitCode == 4, "\(given.stderr)")
                #expect(given.stderr.contains("\"machine localhost login USER password PASSWORD\""), "\(given.stderr)")
                #expect(!given.stderr.contains("s3cretA"), "\(given.stderr)")
                #expect(Self.authorization(try #require(server.requests("/auth/f.bin").last)) == nil)
            }
        }
    }

    @Test func aRedirectTargetGetsTheJarsCookiesForItsDomainButNotTheGivenPairs() async throws {
        try await withTestServer { server in
            let resource = Resource(body: body, etag: "\"j\"")
            let target = server.url("/gated/f.bin").replacingOccurrences(of: "127.0.0.1", with: "localhost")
            server.route("/redir") { _ in redirectPlan(to: target) }
            server.route("/gated/f.bin") { request in
                request.header("Cookie") == "sid=ok" ? resource.response(to: request) : .text(403, "no")
            }
            try await Sandbox.with { box in
                let jar = "127.0.0.1\tFALSE\t/\tFALSE\t0\tfirst\t1\nlocalhost\tFALSE\t/\tFALSE\t0\tsid\tok\n"
                    + "other.example\tTRUE\t/\tFALSE\t0\telse\t1\n"
                try writeBytes(Array(jar.utf8), to: box.path("jar.txt"))
                for (index, flag) in ["-b", "--load-cookies"].enumerated() {
                    let result = try await box.run(["get", flag, box.path("jar.txt"), server.url("/redir"), "-o", "j\(index).bin"])
                    #expect(result.exitCode == 0, "\(flag): \(result.stderr)")
                    #expect(contentMismatch(box.path("j\(index).bin"), expected: body) == nil)
                }
                #expect(server.requests("/redir").allSatisfy { $0.header("Cookie") == "first=1" })
                #expect(server.requests("/gated/f.bin").allSatisfy { $0.header("Cookie") == "sid=ok" && Self.toLocalhost($0) })

                // A NAME=VALUE pair names no domain: it stays with the URL given.
                let pair = try await box.run(["get", "-b", "sid=ok", server.url("/redir"), "-o", "p.bin"])
                #expect(pair.exitCode == 4, "\(pair.stderr)")
                #expect(server.requests("/gated/f.bin").last?.header("Cookie") == nil)
            }
        }
    }

    /// Through the daemon: a task behind a download gate (a redirect that sets the cookie the file needs), paused with
    /// bytes held and resumed, goes through the gate again; the bytes held are kept, never replaced by the page the
    /// file's URL answers without the cookie.
    @Test func aDaemonTaskBehindAGateIsResumedThroughTheGate() async throws {
        try await withTestServer { server in
            let big = TestData.bytes(3 << 20, seed: 3_509)
            var stalled = Resource(body: big, etag: "\"d\"")
            stalled.faults.stallAfterBytes = 600_000
            func serveFile(_ resource: Resource) {
                server.route("/file") { request in
                    (request.header("Cookie") ?? "").contains("sid=ok")
                        ? resource.response(to: request) : ResponsePlan(status: 200, headers: [("Content-Type", "text/html")], body: Array("<html>log in</html>".utf8))
                }
            }
            server.route("/gate") { _ in ResponsePlan(status: 302, headers: [("Location", "/file"), ("Set-Cookie", "sid=ok; Path=/")]) }
            serveFile(stalled)
            try await Sandbox.with { box in
                let added = try await box.run(["add", server.url("/gate"), "-o", "g.bin"])
                let id = try #require(added.stdoutLines.first, "\(added.stderr)")
                try await eventuallyAsync("the task to hold bytes", timeout: .seconds(30)) {
                    let tasks = try await box.run(["ls", "--json", "--no-autostart"]).jsonEvents()
                    return ((tasks.first { $0["id"] as? String == id }?["bytes"] as? NSNumber)?.intValue ?? 0) > 0
                }
                #expect(try await box.run(["pause", id, "--no-autostart"]).exitCode == 0)
                serveFile(Resource(body: big, etag: "\"d\""))
                let gateBefore = server.requests("/gate").count
                #expect(try await box.run(["resume", id, "--no-autostart"]).exitCode == 0)
                let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                #expect(contentMismatch(box.path("g.bin"), expected: big) == nil)
                #expect(server.requests("/gate").count > gateBefore, "resumed through the gate")
                #expect(server.requests("/file").allSatisfy { ($0.header("Cookie") ?? "").contains("sid=ok") })
            }
        }
    }
}
