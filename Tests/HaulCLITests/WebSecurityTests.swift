#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import HaulWeb
import Testing

/// The web dashboard's promises (docs/web.md) over plain HTTP against a real daemon: the one-time login, the
/// Host allowlist, Origin and CSRF on every state change, no state-changing GET, the API key, the headers, the
/// listener's refusals, a download through the bridge, the event stream's replay and the segment map.
@Suite(.serialized) struct WebSecurityTests {
    @Test func aLoginLinkLogsInOnceWithAStrictHttpOnlyCookie() async throws {
        try await WebDashboardHarness.with { web in
            let link = try await web.loginLink()
            #expect(link.hasPrefix("http://127.0.0.1:\(web.port)/login?token="), "\(link)")
            let target = WebDashboardHarness.target(link)
            let first = try WebHTTP.call(web.port, "GET", target)
            #expect(first.status == 303 && first.header("Location") == "/", "\(first)")
            let cookie = try #require(first.header("Set-Cookie"))
            #expect(cookie.hasPrefix("haul_session="))
            for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] { #expect(cookie.contains(flag), "\(cookie)") }
            #expect(!cookie.contains("Secure"), "no Secure flag over plain HTTP")
            let second = try WebHTTP.call(web.port, "GET", target)
            #expect(second.status == 403 && second.body.contains("already used or has expired"), "\(second)")
            #expect(!second.has("Set-Cookie"))
            let session = String(cookie.split(separator: ";")[0])
            let me = try WebHTTP.call(web.port, "GET", "/api/me", headers: [("Cookie", session)])
            #expect(me.status == 200 && (me.json?["csrf"] as? String)?.count == 64, "\(me)")
            #expect((me.json?["version"] as? String) != nil && (me.json?["sessions"] as? [String]) != nil, "\(me)")
            let guessed = try WebHTTP.call(web.port, "GET", "/login?token=" + String(repeating: "0", count: 64))
            #expect(guessed.status == 403, "\(guessed)")
            // Nothing secret in the daemon's log.
            let token = String(target.split(separator: "=").last ?? "")
            #expect(!web.daemon.stderrSoFar().contains(token) && !web.daemon.stderrSoFar().contains(session.dropFirst(13)))
        }
    }

    @Test func aWrongHostGets421AndDoesNotSpendTheToken() async throws {
        try await WebDashboardHarness.with { web in
            let (cookie, csrf) = try await web.login()
            let target = WebDashboardHarness.target(try await web.loginLink())
            for host in ["evil.example:\(web.port)", "evil.example", "127.0.0.1:\(web.port + 1)", "localhost.:\(web.port)"] {
                for (method, path) in [("GET", "/"), ("GET", target), ("GET", "/api/me"), ("GET", "/api/events")] {
                    let reply = try WebHTTP.call(web.port, method, path, headers: [("Host", host), ("Cookie", cookie)])
                    #expect(reply.status == 421 && reply.body.isEmpty, "\(host) \(path): \(reply)")
                }
                let rpc = try web.rpc("tasks.add", ["session": "default", "tasks": [["url": "http://127.0.0.1:1/x"]]], cookie: cookie, csrf: csrf,
                                      origin: "http://\(host)", extra: [("Host", host)])
                #expect(rpc.status == 421, "\(rpc)")
            }
            #expect(try web.tasksOverSocket().isEmpty)
            // The link still works with our own Host: a refused request spent nothing.
            let login = try WebHTTP.call(web.port, "GET", target, headers: [("Host", "localhost:\(web.port)")])
            #expect(login.status == 303, "\(login)")
        }
    }

    @Test func stateChangesNeedCookieCSRFAndOurOrigin() async throws {
        try await WebDashboardHarness.with { web in
            let (cookie, csrf) = try await web.login()
            let add: [String: Any] = ["session": "default", "tasks": [["url": "http://127.0.0.1:1/never", "directory": web.sandbox.work]]]
            let refusals: [(String, WebReply, Int)] = [
                ("no cookie", try web.rpc("tasks.add", add, cookie: nil, csrf: csrf), 401),
                ("unknown cookie", try web.rpc("tasks.add", add, cookie: "haul_session=" + String(repeating: "a", count: 64), csrf: csrf), 401),
                ("no CSRF token", try web.rpc("tasks.add", add, cookie: cookie, csrf: nil), 403),
                ("wrong CSRF token", try web.rpc("tasks.add", add, cookie: cookie, csrf: String(csrf.reversed())), 403),
                ("foreign Origin", try web.rpc("tasks.add", add, cookie: cookie, csrf: csrf, origin: "http://evil.example"), 403),
                ("null Origin", try web.rpc("tasks.add", add, cookie: cookie, csrf: csrf, origin: "null"), 403),
                ("other scheme", try web.rpc("tasks.add", add, cookie: cookie, csrf: csrf, origin: "https://127.0.0.1:\(web.port)"), 403),
                ("no Origin", try web.rpc("tasks.add", add, cookie: cookie, csrf: csrf, origin: .some(nil)), 403),
                ("web.start", try web.rpc("web.start", [:], cookie: cookie, csrf: csrf), 403),
                ("events.subscribe", try web.rpc("events.subscribe", ["session": "default"], cookie: cookie, csrf: csrf), 403),
            ]
            for (why, reply, status) in refusals {
                #expect(reply.status == status, "\(why): \(reply)")
                #expect(!reply.has("Access-Control-Allow-Origin"), "\(why)")
            }
            #expect(try web.tasksOverSocket().isEmpty, "a refused request changed nothing")
            let plain = try WebHTTP.call(web.port, "POST", "/api/rpc", headers: [("Cookie", cookie), ("X-CSRF-Token", csrf), ("Origin", web.origin), ("Content-Type", "text/plain")],
                                         body: #"{"method":"tasks.add","params":{}}"#)
            #expect(plain.status == 415, "\(plain)")
            let ok = try web.rpc("tasks.add", add, cookie: cookie, csrf: csrf)
            let ids = try #require((ok.json?["result"] as? [String: Any])?["ids"] as? [String], "\(ok)")
            #expect(try web.tasksOverSocket().count == 1)
            // A GET never changes anything, whatever it carries.
            let id = ids[0]
            for target in ["/api/rpc", "/api/rpc?method=tasks.remove&session=default&all=true", "/api/rpc?callback=x"] {
                for method in ["GET", "HEAD"] {
                    let reply = try WebHTTP.call(web.port, method, target, headers: [("Cookie", cookie), ("X-CSRF-Token", csrf), ("Origin", web.origin)])
                    #expect(reply.status == 405 && reply.header("Allow") == "POST", "\(method) \(target): \(reply)")
                }
            }
            for method in ["PUT", "DELETE"] {
                let reply = try WebHTTP.call(web.port, method, "/api/rpc", headers: [("Cookie", cookie), ("X-CSRF-Token", csrf), ("Origin", web.origin)])
                #expect(reply.status == 405, "\(method): \(reply)")
            }
            #expect(try web.tasksOverSocket().map { $0["id"] as? String } == [id], "the task is still there")
            // An error of the daemon comes back as its JSON-RPC error object.
            let wrong = try web.rpc("tasks.pause", ["session": "default", "ids": ["nope"]], cookie: cookie, csrf: csrf)
            let error = try #require(wrong.json?["error"] as? [String: Any], "\(wrong)")
            #expect(wrong.status == 200 && (error["code"] as? NSNumber)?.intValue == -32001, "\(wrong)")
        }
    }

    @Test func theEventStreamChecksCookieAndOrigin() async throws {
        try await WebDashboardHarness.with { web in
            let (cookie, _) = try await web.login()
            let none = try WebHTTP.call(web.port, "GET", "/api/events?session=default")
            #expect(none.status == 401, "\(none)")
            let foreign = try WebHTTP.call(web.port, "GET", "/api/events?session=default", headers: [("Cookie", cookie), ("Origin", "http://evil.example")])
            #expect(foreign.status == 403, "\(foreign)")
            let bad = try WebHTTP.call(web.port, "GET", "/api/events?session=../x", headers: [("Cookie", cookie)])
            #expect(bad.status == 400, "\(bad)")
            let stream = try WebHTTP(port: web.port)
            defer { stream.close() }
            try stream.send("GET", "/api/events?session=default", headers: [("Cookie", cookie), ("Origin", web.origin)])
            let open = try stream.read { $0.body.contains(": ready") }
            #expect(open.status == 200 && open.header("Content-Type") == "text/event-stream", "\(open)")
            #expect(open.body.hasPrefix("id: ") && open.body.hasSuffix(".0\n: ready\n\n"), "a new stream learns its cursor first: \(open.body)")
            #expect(!open.has("Access-Control-Allow-Origin"))
        }
    }

    @Test func everyAnswerCarriesTheSecurityHeaders() async throws {
        try await WebDashboardHarness.with { web in
            for path in ["/"] + WebAssets.all.map(\.path) + ["/api/me", "/nope", "/login?token=x"] {
                let reply = try WebHTTP.call(web.port, "GET", path, headers: [("Origin", "http://evil.example")])
                #expect(reply.header("Content-Security-Policy")?.contains("script-src 'self'") == true, "\(path): \(reply)")
                #expect(reply.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true, "\(path)")
                #expect(reply.header("X-Content-Type-Options") == "nosniff", "\(path)")
                #expect(reply.header("Referrer-Policy") == "no-referrer", "\(path)")
                #expect(reply.header("Cache-Control") == "no-store", "\(path)")
                #expect(!reply.has("Access-Control-Allow-Origin"), "\(path)")
            }
            let page = try WebHTTP.call(web.port, "GET", "/")
            #expect(page.status == 200 && page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(!page.body.contains("<script>") && !page.body.lowercased().contains("onclick="), "no inline script")
            for module in WebAssets.all where WebAssets.isScript(module.path) {
                let script = try WebHTTP.call(web.port, "GET", module.path)
                #expect(script.status == 200 && script.header("Content-Type")?.hasPrefix("text/javascript") == true, "\(module.name)")
            }
            let me = try WebHTTP.call(web.port, "GET", "/api/me")
            #expect(me.status == 401 && me.json?["error"] as? String == "not logged in", "\(me)")
        }
    }

    @Test func theAPIKeyLetsScriptsInButNotForeignPages() async throws {
        try await WebDashboardHarness.with { web in
            let noKeyYet = try web.rpc("daemon.status", [:], cookie: nil, csrf: nil, origin: .some(nil), extra: [("Authorization", "Bearer " + String(repeating: "b", count: 64))])
            #expect(noKeyYet.status == 401, "\(noKeyYet)")
            let printed = try await web.sandbox.run(["web", "--api-key"])
            #expect(printed.exitCode == 0 && printed.stdoutLines.count == 1, "\(printed.stderr)")
            let key = printed.stdoutLines.first ?? ""
            #expect(key.count == 64)
            let again = try await web.sandbox.run(["web", "--api-key"])
            #expect(again.stdoutLines == [key], "the same key every time")
            var info = stat()
            #expect(stat(web.sandbox.home + "/web/api-key", &info) == 0 && info.st_mode & 0o777 == 0o600)
            #expect(stat(web.sandbox.home + "/web", &info) == 0 && info.st_mode & 0o777 == 0o700)
            let bearer = ("Authorization", "Bearer " + key)
            let status = try web.rpc("daemon.status", [:], cookie: nil, csrf: nil, origin: .some(nil), extra: [bearer])
            #expect(status.status == 200 && (status.json?["result"] as? [String: Any])?["pid"] != nil, "\(status)")
            let wrong = try web.rpc("daemon.status", [:], cookie: nil, csrf: nil, origin: .some(nil), extra: [("Authorization", "Bearer " + String(key.reversed()))])
            #expect(wrong.status == 401, "\(wrong)")
            let foreign = try web.rpc("tasks.add", ["session": "default", "tasks": [["url": "http://127.0.0.1:1/x"]]], cookie: nil, csrf: nil,
                                      origin: "http://evil.example", extra: [bearer])
            #expect(foreign.status == 403, "\(foreign)")
            let none = try web.rpc("daemon.status", [:], cookie: nil, csrf: nil, origin: .some(nil))
            #expect(none.status == 401, "\(none)")
            #expect(try web.tasksOverSocket().isEmpty)
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
                let (cookie, csrf) = try await web.login()
                let stream = try web.openEventStream(cookie: cookie)
                defer { stream.close() }
                let destination = web.sandbox.path("file.bin")
                let id = try web.add(server.url("/file.bin"), to: destination, segments: 4, cookie: cookie, csrf: csrf)
                // The stream tells of the end: no polling.
                let events = try stream.read(timeout: .seconds(60)) { $0.body.contains("\"type\":\"finished\"") }
                #expect(events.body.contains("\"type\":\"added\""), "\(events.body.prefix(2_000))")
                #expect(contentMismatch(destination, expected: body) == nil, "\(contentMismatch(destination, expected: body) ?? "")")
                let segments = try web.rpc("tasks.segments", ["session": "default", "id": id], cookie: cookie, csrf: csrf)
                let map = try #require(segments.json?["result"] as? [String: Any], "\(segments)")
                #expect((map["total"] as? NSNumber)?.intValue == body.count)
                let done = (map["done"] as? [[NSNumber]])?.map { $0.map(\.intValue) }
                #expect(done == [[0, body.count]], "\(map)")
                #expect((map["active"] as? [Any])?.isEmpty == true, "\(map)")
                let unknown = try web.rpc("tasks.segments", ["session": "default", "id": "nope"], cookie: cookie, csrf: csrf)
                #expect((unknown.json?["error"] as? [String: Any]) != nil, "\(unknown)")
            }
        }
    }

    @Test func theStreamReplaysAfterLastEventIDAndResetsAnUnknownCursor() async throws {
        try await WebDashboardHarness.with { web in
            let (cookie, csrf) = try await web.login()
            let headers = [("Cookie", cookie), ("Origin", web.origin)]
            let first = try WebHTTP(port: web.port)
            defer { first.close() }
            try first.send("GET", "/api/events?session=default", headers: headers)
            let ready = try first.read { $0.body.contains(": ready") }
            let start = try #require(ready.body.split(separator: "\n").first { $0.hasPrefix("id: ") }.map { String($0.dropFirst(4)) })
            // Three tasks added while paused: three `added` events (and their state changes).
            _ = try web.rpc("session.open", ["session": "default", "configuration": ["maxConcurrentDownloads": 0]], cookie: cookie, csrf: csrf)
            for index in 0..<3 {
                let add = try web.rpc("tasks.add", ["session": "default", "tasks": [["url": "http://127.0.0.1:1/f\(index)", "directory": web.sandbox.work]]],
                                      cookie: cookie, csrf: csrf)
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
