#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import HaulWeb
import Testing

/// The web dashboard's promises (docs/web.md) that need a real daemon and its listener: the event stream's bytes and
/// replay, `haul web --api-key` and its file, the listener's refusals, a download through the bridge and its segment
/// map. The login, Host, Origin, CSRF, method and header checks of every route are HaulWebTests' (in-process).
@Suite(.serialized) struct WebSecurityTests {
    @Test func anEventStreamOpensWithItsCursor() async throws {
        try await WebDashboardHarness.with { web in
            let login = try await web.login()
            let stream = try WebHTTP(port: web.port)
            defer { stream.close() }
            try stream.send("GET", "/api/events?session=default", headers: login.headers + [("Origin", web.origin)])
            let open = try stream.read { $0.body.contains(": ready") }
            #expect(open.status == 200 && open.header("Content-Type") == "text/event-stream", "\(open)")
            #expect(open.body.hasPrefix("id: ") && open.body.hasSuffix(".0\n: ready\n\n"), "a new stream learns its cursor first: \(open.body)")
            #expect(!open.has("Access-Control-Allow-Origin"))
        }
    }

    /// Which requests the key lets in is HaulWebTests' (WebAccessRouteTests); here, `haul web --api-key`: one key,
    /// the same every time, in a private file, that opens the real listener and is never logged.
    @Test func haulWebPrintsOneAPIKeyInAPrivateFileThatLetsAScriptIn() async throws {
        try await WebDashboardHarness.with { web in
            let printed = try await web.sandbox.run(["web", "--api-key"])
            #expect(printed.exitCode == 0 && printed.stdoutLines.count == 1, "\(printed.stderr)")
            let key = printed.stdoutLines.first ?? ""
            #expect(key.count == 64)
            let again = try await web.sandbox.run(["web", "--api-key"])
            #expect(again.stdoutLines == [key], "the same key every time")
            var info = stat()
            #expect(stat(web.sandbox.home + "/web/api-key", &info) == 0 && info.st_mode & 0o777 == 0o600)
            #expect(stat(web.sandbox.home + "/web", &info) == 0 && info.st_mode & 0o777 == 0o700)
            let status = try web.rpc("daemon.status", [:], as: nil, origin: .some(nil), extra: [("Authorization", "Bearer " + key)])
            #expect(status.status == 200 && (status.json?["result"] as? [String: Any])?["pid"] != nil, "\(status)")
            #expect(!web.daemon.stderrSoFar().contains(key))
        }
    }

    @Test func aNonLoopbackListenerNeedsTheFlagAndTLS() async throws {
        try await Sandbox.with { sandbox in
            let socket = DaemonHarness.socket(sandbox)
            for extra in [["--web", "0.0.0.0:0"], ["--web", "0.0.0.0:0", "--web-allow-remote"], ["--web", "0.0.0.0:0", "--web-cert", "/nonexistent.pem"]] {
                let result = try await sandbox.run(["daemon", "--socket", socket] + extra, timeout: .seconds(20))
                #expect(result.exitCode == 2 && !result.signalled, "\(extra): exit \(result.exitCode): \(result.stderr)")
                #expect(result.stderrLines.count == 1, "one line: \(result.stderr)")
                #expect(!RawSocketClient.canConnect(socket))
            }
        }
    }

    @Test func aDownloadAddedThroughTheBridgeFinishesExactlyAndItsSegmentMapCoversTheFile() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(3 << 20, seed: 1_414)
            server.serve("/file.bin", Resource(body: body, etag: "\"w\""))
            try await WebDashboardHarness.with { web in
                let login = try await web.login()
                let stream = try web.openEventStream(as: login)
                defer { stream.close() }
                let destination = web.sandbox.path("file.bin")
                let id = try web.add(server.url("/file.bin"), to: destination, segments: 4, as: login)
                // The stream tells of the end: no polling.
                let events = try stream.read(timeout: .seconds(60)) { $0.body.contains("\"type\":\"finished\"") }
                #expect(events.body.contains("\"type\":\"added\""), "\(events.body.prefix(2_000))")
                #expect(contentMismatch(destination, expected: body) == nil, "\(contentMismatch(destination, expected: body) ?? "")")
                let segments = try web.rpc("tasks.segments", ["session": "default", "id": id], as: login)
                let map = try #require(segments.json?["result"] as? [String: Any], "\(segments)")
                #expect((map["total"] as? NSNumber)?.intValue == body.count)
                let done = (map["done"] as? [[NSNumber]])?.map { $0.map(\.intValue) }
                #expect(done == [[0, body.count]], "\(map)")
                #expect((map["active"] as? [Any])?.isEmpty == true, "\(map)")
                let unknown = try web.rpc("tasks.segments", ["session": "default", "id": "nope"], as: login)
                #expect((unknown.json?["error"] as? [String: Any]) != nil, "\(unknown)")
            }
        }
    }

    @Test func theStreamReplaysAfterLastEventIDAndResetsAnUnknownCursor() async throws {
        try await WebDashboardHarness.with { web in
            let login = try await web.login()
            let headers = login.headers + [("Origin", web.origin)]
            let first = try WebHTTP(port: web.port)
            defer { first.close() }
            try first.send("GET", "/api/events?session=default", headers: headers)
            let ready = try first.read { $0.body.contains(": ready") }
            let start = try #require(ready.body.split(separator: "\n").first { $0.hasPrefix("id: ") }.map { String($0.dropFirst(4)) })
            // Three tasks added while paused: three `added` events (and their state changes).
            _ = try web.rpc("session.open", ["session": "default", "configuration": ["maxConcurrentDownloads": 0]], as: login)
            for index in 0..<3 {
                let add = try web.rpc("tasks.add", ["session": "default", "tasks": [["url": "http://127.0.0.1:1/f\(index)", "directory": web.sandbox.work]]],
                                      as: login)
                #expect(add.json?["result"] != nil, "\(add)")
            }
            let seen = try first.read { $0.body.components(separatedBy: "\"type\":\"added\"").count == 4 }
            let ids = seen.body.split(separator: "\n").filter { $0.hasPrefix("id: ") }.map { String($0.dropFirst(4)) }
            #expect(ids.count >= 3, "\(seen.body)")
            let firstAdded = try #require(seen.body.components(separatedBy: "\n\n").first { $0.contains("\"type\":\"added\"") })
            let cursor = try #require(firstAdded.split(separator: "\n").first { $0.hasPrefix("id: ") }.map { String($0.dropFirst(4)) })
            // Reconnecting after the first `added`: the two others come again, and nothing before.
            let again = try WebHTTP(port: web.port)
            defer { again.close() }
            try again.send("GET", "/api/events?session=default", headers: headers + [("Last-Event-ID", cursor)])
            let replayed = try again.read { $0.body.components(separatedBy: "\"type\":\"added\"").count == 3 }
            #expect(!replayed.body.contains("\"type\":\"reset\""), "\(replayed.body)")
            #expect(!replayed.body.contains("id: \(cursor)\n"), "the event at the cursor is not sent again")
            // A stream that dropped before its first event resumes from the cursor it was given at the start.
            let fromStart = try WebHTTP(port: web.port)
            defer { fromStart.close() }
            try fromStart.send("GET", "/api/events?session=default", headers: headers + [("Last-Event-ID", start)])
            let all = try fromStart.read { $0.body.components(separatedBy: "\"type\":\"added\"").count == 4 }
            #expect(!all.body.contains("\"type\":\"reset\""), "\(all.body)")
            for bogus in ["another-run.1", "garbage", String(cursor.split(separator: ".")[0]) + ".999999"] {
                let reset = try WebHTTP(port: web.port)
                defer { reset.close() }
                try reset.send("GET", "/api/events?session=default", headers: headers + [("Last-Event-ID", bogus)])
                let answer = try reset.read { $0.body.contains("data: ") }
                let firstData = answer.body.split(separator: "\n").first { $0.hasPrefix("data: ") }
                #expect(firstData == "data: {\"type\":\"reset\"}", "\(bogus): \(answer.body)")
            }
        }
    }
}
#endif
