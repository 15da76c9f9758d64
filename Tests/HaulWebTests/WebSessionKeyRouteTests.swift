import Foundation
import HaulKit
import Testing
@testable import HaulWeb

/// A browser sends the `haul_session` cookie of 127.0.0.1 to every port of 127.0.0.1, so another user's server on
/// another port can receive it (docs/web.md, "Cookies ignore ports"). The cookie alone must therefore open nothing:
/// every `/api` route also needs the session's key (`X-Haul-Key`), which the page keeps in its own origin's storage.
/// In-process, over every route the API has and every way of not having the right key.
@Suite struct WebSessionKeyRouteTests {
    /// Every request the API answers for a login: `/api/me`, the event stream, and each method the bridge passes
    /// on (with a `tasks.add` that would overwrite a file).
    static func routes(_ web: InProcessWeb) -> [(method: String, target: String, body: String?)] {
        var routes: [(String, String, String?)] = [
            ("GET", "/api/me", nil),
            ("GET", "/api/events?session=default", nil),
            ("GET", "/api/events?session=other&lastEventId=x", nil),
        ]
        for method in WebAccess.bridgedMethods.map(\.rawValue).sorted() {
            var params: JSONValue = ["session": "default"]
            if method == "tasks.add" {
                params = ["session": "default", "tasks": [["url": "http://127.0.0.1:1/x", "path": .string(web.work + "/victim"), "options": ["overwrite": true]]]]
            }
            let body: JSONValue = ["method": .string(method), "params": params]
            routes.append(("POST", "/api/rpc", body.serialized))
        }
        return routes
    }

    /// The headers of a request from `login` to `route` (the CSRF token and the dashboard's Origin on a call).
    static func headers(_ login: WebLogin, for route: (method: String, target: String, body: String?), _ web: InProcessWeb) -> [(String, String)] {
        var headers = login.headers
        if route.method == "POST" {
            headers += [("Content-Type", "application/json"), ("Origin", web.origin)]
            if let csrf = login.csrf { headers.append(("X-CSRF-Token", csrf)) }
        }
        return headers
    }

    /// Keys of the right length that are not the key: each one differs from it in a single hex digit.
    static func sameLengthWrongKeys(_ key: String) -> [String] {
        let digits = Array(key)
        return digits.indices.map { index in
            var wrong = digits
            wrong[index] = digits[index] == "0" ? "1" : "0"
            return String(wrong)
        }
    }

    @Test func aCookieWithoutItsKeyIsRefusedOnEveryRouteBeforeItsBody() async throws {
        try await InProcessWeb.with { web in
            let login = try await web.login(), other = try await web.login()
            let key = try #require(login.key)
            var refused: [(String, WebLogin, [(String, String)])] = [
                ("the cookie alone", WebLogin(cookie: login.cookie, key: nil, csrf: login.csrf), []),
                ("an empty key", WebLogin(cookie: login.cookie, key: "", csrf: login.csrf), []),
                ("another login's key", WebLogin(cookie: login.cookie, key: other.key, csrf: login.csrf), []),
                ("the key cut short", WebLogin(cookie: login.cookie, key: String(key.dropLast()), csrf: login.csrf), []),
                ("the key too long", WebLogin(cookie: login.cookie, key: key + "0", csrf: login.csrf), []),
                ("the key in upper case", WebLogin(cookie: login.cookie, key: key.uppercased(), csrf: login.csrf), []),
                ("the key twice", WebLogin(cookie: login.cookie, key: key, csrf: login.csrf), [("X-Haul-Key", key)]),
                ("the key as a cookie", WebLogin(cookie: (login.cookie ?? "") + "; X-Haul-Key=" + key, key: nil, csrf: login.csrf), []),
                ("the key, no cookie", WebLogin(cookie: nil, key: key, csrf: login.csrf), []),
            ]
            for wrong in Self.sameLengthWrongKeys(key) {
                refused.append(("a wrong key of the same length", WebLogin(cookie: login.cookie, key: wrong, csrf: login.csrf), []))
            }
            var checked = 0
            for route in Self.routes(web) {
                for (why, credential, extra) in refused {
                    // The key in the query is no key either.
                    let target = why == "the cookie alone" ? route.target + (route.target.contains("?") ? "&" : "?") + "key=" + key : route.target
                    let reply = await web.request(route.method, target, headers: Self.headers(credential, for: route, web) + extra, body: route.body)
                    #expect(reply.status == 401 && reply.stream == nil && !reply.bodyRead, "\(why), \(route.method) \(target): \(reply)")
                    #expect(reply.json?["error"] == "not logged in", "\(why): \(reply)")
                    checked += 1
                }
            }
            #expect(checked == Self.routes(web).count * refused.count)
            #expect(try await web.tasks().isEmpty, "no refused call changed anything")
            #expect(!FileManager.default.fileExists(atPath: web.work + "/victim"))
        }
    }

    @Test func withItsKeyTheSameCookieWorksOnEveryRoute() async throws {
        try await InProcessWeb.with { web in
            let login = try await web.login()
            for route in Self.routes(web) {
                let reply = await web.request(route.method, route.target, headers: Self.headers(login, for: route, web), body: route.body)
                if route.target.hasPrefix("/api/events") {
                    #expect(reply.stream != nil, "\(route.target): \(reply)")
                } else {
                    #expect(reply.status == 200 && reply.json?["error"]?.stringValue == nil, "\(route.target) \(route.body ?? ""): \(reply)")
                }
            }
            #expect(try await web.tasks().count == 1, "the tasks.add went through")
            // Each login has its own key: another login's cookie with this key is refused, with its own it works.
            let other = try await web.login()
            #expect(other.key != login.key && other.cookie != login.cookie)
            let crossed = await web.request("GET", "/api/me", headers: WebLogin(cookie: other.cookie, key: login.key, csrf: nil).headers)
            #expect(crossed.status == 401, "\(crossed)")
            let own = await web.request("GET", "/api/me", headers: other.headers)
            #expect(own.status == 200, "\(own)")
        }
    }

    @Test func theAPIKeyNeedsNoCookieNorSessionKey() async throws {
        try await InProcessWeb.with { web in
            let apiKey = try WebSecrets.apiKeyCreatingIfNeeded(home: web.home)
            for route in Self.routes(web) where route.method == "POST" {
                let reply = await web.request(route.method, route.target, headers: [("Authorization", "Bearer " + apiKey), ("Content-Type", "application/json")],
                                              body: route.body)
                #expect(reply.status == 200, "\(route.body ?? ""): \(reply)")
            }
            let events = await web.request("GET", "/api/events?session=default", headers: [("Authorization", "Bearer " + apiKey)])
            #expect(events.stream != nil, "\(events)")
        }
    }
}
