import Foundation
import HaulKit
import Testing
@testable import HaulWeb

/// The dashboard's promises (docs/web.md) at the HTTP level, in-process: the one-time login, the Host allowlist,
/// Origin and CSRF on every state change, no state-changing GET, the API key, the headers of every answer, and the
/// event stream's checks. What needs a listener (TLS, deadlines, connection limits, the stream's bytes) is
/// WebSecurityTests' and DashboardLimitsTests' in HaulCLITests.
@Suite struct WebAccessRouteTests {
    @Test func aLoginLinkLogsInOnceWithAStrictHttpOnlyCookieAndAKeyInTheFragment() async throws {
        try await InProcessWeb.with { web in
            let token = web.dashboard.mintLogin()
            let first = await web.request("GET", "/login?token=" + token)
            let location = try #require(first.header("Location"), "\(first)")
            #expect(first.status == 303 && location.hasPrefix("/#key="), "\(first)")
            let key = String(location.dropFirst("/#key=".count))
            #expect(key.count == 64 && key.allSatisfy(\.isHexDigit), "a fresh 32-byte key, only in the fragment: \(location)")
            let cookie = try #require(first.header("Set-Cookie"))
            #expect(cookie.hasPrefix("haul_session="))
            for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] { #expect(cookie.contains(flag), "\(cookie)") }
            #expect(!cookie.contains("Secure"), "no Secure flag over plain HTTP")
            #expect(!cookie.contains(key), "the key is not the cookie")
            let second = await web.request("GET", "/login?token=" + token)
            #expect(second.status == 403 && second.body.contains("already used or has expired"), "\(second)")
            #expect(!second.has("Set-Cookie"))
            let session = String(cookie.split(separator: ";")[0])
            let me = await web.request("GET", "/api/me", headers: [("Cookie", session), ("X-Haul-Key", key)])
            #expect(me.status == 200 && me.json?["csrf"]?.stringValue?.count == 64, "\(me)")
            #expect(me.json?["version"]?.stringValue == HaulVersion.string && me.json?["sessions"]?.arrayValue != nil, "\(me)")
            #expect(me.json?["csrf"]?.stringValue != key, "the CSRF token is not the key")
            for guessed in [String(repeating: "0", count: 64), "", String(token.dropLast())] {
                let reply = await web.request("GET", "/login?token=" + guessed)
                #expect(reply.status == 403 && !reply.has("Set-Cookie"), "\(guessed): \(reply)")
            }
            let noToken = await web.request("GET", "/login")
            #expect(noToken.status == 403, "\(noToken)")
            // Nothing secret in the daemon's log.
            #expect(web.log.text.contains("logged in"), "the login is logged: \(web.log.text)")
            #expect(!web.log.text.contains(token) && !web.log.text.contains(session.dropFirst(13)) && !web.log.text.contains(key))
        }
    }

    @Test func aWrongHostGets421AndDoesNotSpendTheToken() async throws {
        try await InProcessWeb.with { web in
            let login = try await web.login()
            let token = web.dashboard.mintLogin()
            let port = InProcessWeb.port
            for host in ["evil.example:\(port)", "evil.example", "127.0.0.1:\(port + 1)", "localhost.:\(port)", "127.0.0.1:\(port)@evil.example"] {
                for (method, path) in [("GET", "/"), ("GET", "/login?token=" + token), ("GET", "/api/me"), ("GET", "/api/events"), ("GET", "/nope")] {
                    let reply = await web.request(method, path, headers: [("Host", host)] + login.headers)
                    #expect(reply.status == 421 && reply.body.isEmpty, "\(host) \(path): \(reply)")
                }
                let rpc = await web.rpc("tasks.add", ["session": "default", "tasks": [["url": "http://127.0.0.1:1/x"]]], as: login,
                                        origin: "http://\(host)", extra: [("Host", host)])
                #expect(rpc.status == 421 && !rpc.bodyRead, "refused on its head: \(rpc)")
            }
            // Two Host headers are as bad as a foreign one.
            let twice = await web.request("GET", "/", headers: [("Host", "127.0.0.1:\(port)"), ("Host", "evil.example")])
            #expect(twice.status == 421, "\(twice)")
            #expect(try await web.tasks().isEmpty)
            // The link still works with our own Host, by any of its loopback names: a refused request spent nothing.
            let later = await web.request("GET", "/login?token=" + token, headers: [("Host", "localhost:\(port)")])
            #expect(later.status == 303, "\(later)")
        }
    }

    @Test func stateChangesNeedCookieCSRFAndOurOrigin() async throws {
        try await InProcessWeb.with { web in
            let login = try await web.login()
            let add: JSONValue = ["session": "default", "tasks": [["url": "http://127.0.0.1:1/never", "directory": .string(web.work)]]]
            let refusals: [(String, WebReply, Int)] = [
                ("no cookie", await web.rpc("tasks.add", add, as: WebLogin(cookie: nil, key: login.key, csrf: login.csrf)), 401),
                ("unknown cookie", await web.rpc("tasks.add", add, as: WebLogin(cookie: "haul_session=" + String(repeating: "a", count: 64), key: login.key, csrf: login.csrf)), 401),
                ("no key", await web.rpc("tasks.add", add, as: WebLogin(cookie: login.cookie, key: nil, csrf: login.csrf)), 401),
                ("no CSRF token", await web.rpc("tasks.add", add, as: WebLogin(cookie: login.cookie, key: login.key, csrf: nil)), 403),
                ("wrong CSRF token", await web.rpc("tasks.add", add, as: WebLogin(cookie: login.cookie, key: login.key, csrf: login.csrf.map { String($0.reversed()) })), 403),
                ("foreign Origin", await web.rpc("tasks.add", add, as: login, origin: "http://evil.example"), 403),
                ("null Origin", await web.rpc("tasks.add", add, as: login, origin: "null"), 403),
                ("other scheme", await web.rpc("tasks.add", add, as: login, origin: "https://127.0.0.1:\(InProcessWeb.port)"), 403),
                ("other port", await web.rpc("tasks.add", add, as: login, origin: "http://127.0.0.1:\(InProcessWeb.port + 1)"), 403),
                ("no Origin", await web.rpc("tasks.add", add, as: login, origin: .some(nil)), 403),
                ("web.start", await web.rpc("web.start", [:], as: login), 403),
                ("events.subscribe", await web.rpc("events.subscribe", ["session": "default"], as: login), 403),
            ]
            for (why, reply, status) in refusals {
                #expect(reply.status == status, "\(why): \(reply)")
                #expect(!reply.has("Access-Control-Allow-Origin"), "\(why)")
            }
            #expect(try await web.tasks().isEmpty, "a refused request changed nothing")
            let plain = await web.request("POST", "/api/rpc", headers: login.headers + [("X-CSRF-Token", login.csrf ?? ""), ("Origin", web.origin), ("Content-Type", "text/plain")],
                                          body: #"{"method":"tasks.add","params":{}}"#)
            #expect(plain.status == 415, "\(plain)")
            for body in ["not json", "[1]", #"{"params":{}}"#, #"{"method":"daemon.status","params":[1]}"#] {
                let bad = await web.request("POST", "/api/rpc", headers: login.headers + [("X-CSRF-Token", login.csrf ?? ""), ("Origin", web.origin), ("Content-Type", "application/json")],
                                            body: body)
                #expect(bad.status == 400, "\(body): \(bad)")
            }
            let ok = await web.rpc("tasks.add", add, as: login)
            let id = try #require(ok.result?["ids"]?.arrayValue?.first?.stringValue, "\(ok)")
            #expect(try await web.tasks().count == 1)
            // A GET never changes anything, whatever it carries.
            for target in ["/api/rpc", "/api/rpc?method=tasks.remove&session=default&all=true", "/api/rpc?callback=x"] {
                for method in ["GET", "HEAD"] {
                    let reply = await web.request(method, target, headers: login.headers + [("X-CSRF-Token", login.csrf ?? ""), ("Origin", web.origin)])
                    #expect(reply.status == 405 && reply.header("Allow") == "POST", "\(method) \(target): \(reply)")
                }
            }
            for method in ["PUT", "DELETE", "PATCH"] {
                let reply = await web.request(method, "/api/rpc", headers: login.headers + [("X-CSRF-Token", login.csrf ?? ""), ("Origin", web.origin)])
                #expect(reply.status == 405, "\(method): \(reply)")
            }
            #expect(try await web.tasks().map { $0["id"]?.stringValue } == [id], "the task is still there")
            // An error of the daemon comes back as its JSON-RPC error object.
            let wrong = await web.rpc("tasks.pause", ["session": "default", "ids": ["nope"]], as: login)
            #expect(wrong.status == 200 && wrong.errorCode == -32001, "\(wrong)")
        }
    }

    @Test func theEventStreamChecksCredentialOriginAndSessionName() async throws {
        try await InProcessWeb.with { web in
            let login = try await web.login()
            let none = await web.request("GET", "/api/events?session=default")
            #expect(none.status == 401 && !none.bodyRead, "\(none)")
            let foreign = await web.request("GET", "/api/events?session=default", headers: login.headers + [("Origin", "http://evil.example")])
            #expect(foreign.status == 403, "\(foreign)")
            for bad in ["../x", "a%2Fb", String(repeating: "n", count: 300)] {
                let reply = await web.request("GET", "/api/events?session=" + bad, headers: login.headers)
                #expect(reply.status == 400, "\(bad): \(reply)")
            }
            let fresh = await web.request("GET", "/api/events", headers: login.headers + [("Origin", web.origin)])
            let stream = try #require(fresh.stream, "\(fresh)")
            #expect(stream.session == "default", "the default session when none is named")
            guard case .fresh = stream.cursor else { Issue.record("a new stream starts from now: \(fresh)"); return }
            let resumed = await web.request("GET", "/api/events?session=s&lastEventId=q", headers: login.headers + [("Last-Event-ID", "run.7")])
            guard case .header("run.7")? = resumed.stream?.cursor, resumed.stream?.session == "s" else {
                Issue.record("Last-Event-ID is the cursor, over the query's: \(resumed)")
                return
            }
        }
    }

    @Test func everyAnswerCarriesTheSecurityHeaders() async throws {
        try await InProcessWeb.with { web in
            for path in ["/"] + WebAssets.all.map(\.path) + ["/api/me", "/nope", "/login?token=x", "/api/rpc"] {
                let reply = await web.request("GET", path, headers: [("Origin", "http://evil.example")])
                #expect(reply.header("Content-Security-Policy")?.contains("script-src 'self'") == true, "\(path): \(reply)")
                #expect(reply.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true, "\(path)")
                #expect(reply.header("X-Content-Type-Options") == "nosniff", "\(path)")
                #expect(reply.header("Referrer-Policy") == "no-referrer", "\(path)")
                #expect(reply.header("Cache-Control") == "no-store", "\(path)")
                #expect(reply.header("X-Frame-Options") == "DENY", "\(path)")
                #expect(reply.header("Content-Length") == String(reply.body.utf8.count), "\(path)")
                #expect(!reply.has("Access-Control-Allow-Origin"), "\(path)")
            }
            let page = await web.request("GET", "/")
            #expect(page.status == 200 && page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(!page.body.contains("<script>") && !page.body.lowercased().contains("onclick="), "no inline script")
            for module in WebAssets.all where WebAssets.isScript(module.path) {
                let script = await web.request("GET", module.path)
                #expect(script.status == 200 && script.header("Content-Type")?.hasPrefix("text/javascript") == true, "\(module.name)")
            }
            let head = await web.request("HEAD", "/")
            #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == String(page.body.utf8.count), "\(head)")
            let me = await web.request("GET", "/api/me")
            #expect(me.status == 401 && me.json?["error"] == "not logged in", "\(me)")
        }
    }

    @Test func theAPIKeyLetsScriptsInButNotForeignPages() async throws {
        try await InProcessWeb.with { web in
            let guessed = ("Authorization", "Bearer " + String(repeating: "b", count: 64))
            let noKeyYet = await web.rpc("daemon.status", [:], as: nil, origin: .some(nil), extra: [guessed])
            #expect(noKeyYet.status == 401, "\(noKeyYet)")
            let key = try WebSecrets.apiKeyCreatingIfNeeded(home: web.home)
            #expect(try WebSecrets.apiKeyCreatingIfNeeded(home: web.home) == key, "the same key every time")
            let bearer = ("Authorization", "Bearer " + key)
            let status = await web.rpc("daemon.status", [:], as: nil, origin: .some(nil), extra: [bearer])
            #expect(status.status == 200 && status.result?["pid"] != nil, "\(status)")
            let own = await web.rpc("daemon.status", [:], as: nil, extra: [bearer])
            #expect(own.status == 200, "the dashboard's own Origin is fine too: \(own)")
            let wrong = await web.rpc("daemon.status", [:], as: nil, origin: .some(nil), extra: [("Authorization", "Bearer " + String(key.reversed()))])
            #expect(wrong.status == 401 && !wrong.bodyRead, "\(wrong)")
            let foreign = await web.rpc("tasks.add", ["session": "default", "tasks": [["url": "http://127.0.0.1:1/x"]]], as: nil,
                                        origin: "http://evil.example", extra: [bearer])
            #expect(foreign.status == 403, "\(foreign)")
            let none = await web.rpc("daemon.status", [:], as: nil, origin: .some(nil))
            #expect(none.status == 401, "\(none)")
            let events = await web.request("GET", "/api/events?session=default", headers: [bearer])
            #expect(events.stream?.session == "default", "a script may follow events with the key: \(events)")
            #expect(try await web.tasks().isEmpty)
            #expect(!web.log.text.contains(key))
        }
    }
}
