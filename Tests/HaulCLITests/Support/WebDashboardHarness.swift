#if os(Linux)
import Foundation
import Testing

/// A real `haul daemon --web 127.0.0.1:0` in a sandbox, and the calls the dashboard's tests make of it.
struct WebDashboardHarness {
    let sandbox: Sandbox
    let daemon: HaulRun
    let socket: String
    let port: Int

    var origin: String { "http://127.0.0.1:\(port)" }

    /// Starts the daemon with its dashboard on a free loopback port, runs `body`, then checks it stops on SIGTERM.
    static func with(_ extra: [String] = [], _ body: (WebDashboardHarness) async throws -> Void) async throws {
        try await Sandbox.with { sandbox in
            let daemon = try await DaemonHarness.start(sandbox, ["--web", "127.0.0.1:0"] + extra)
            let socket = DaemonHarness.socket(sandbox)
            let link = try await loginLink(sandbox, socket: socket)
            guard let port = URLComponents(string: link)?.port else { throw HarnessError("no port in \(link)") }
            let harness = WebDashboardHarness(sandbox: sandbox, daemon: daemon, socket: socket, port: port)
            try await body(harness)
            try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
        }
    }

    /// `haul web`: its only stdout line, the login link.
    static func loginLink(_ sandbox: Sandbox, socket: String) async throws -> String {
        let result = try await sandbox.run(["web", "--socket", socket, "--no-autostart"])
        guard result.exitCode == 0, result.stdoutLines.count == 1 else { throw HarnessError("haul web: \(result.exitCode) \(result.stdout) \(result.stderr)") }
        return result.stdoutLines[0]
    }

    func loginLink() async throws -> String { try await Self.loginLink(sandbox, socket: socket) }

    /// The path and query of a login link (`/login?token=…`).
    static func target(_ link: String) -> String {
        guard let components = URLComponents(string: link) else { return link }
        return components.path + "?" + (components.percentEncodedQuery ?? "")
    }

    /// Logs in with a fresh link as a browser does: the session cookie (`haul_session=…`), the key the redirect's
    /// fragment hands the page (`/#key=…`) and the CSRF token of `/api/me`.
    func login() async throws -> DashboardLogin {
        let reply = try WebHTTP.call(port, "GET", Self.target(try await loginLink()))
        guard reply.status == 303, let setCookie = reply.header("Set-Cookie"),
              let cookie = setCookie.split(separator: ";").first.map(String.init),
              let location = reply.header("Location"), location.hasPrefix("/#key=") else { throw HarnessError("login: \(reply)") }
        let key = String(location.dropFirst("/#key=".count))
        let me = try WebHTTP.call(port, "GET", "/api/me", headers: [("Cookie", cookie), ("X-Haul-Key", key)])
        guard me.status == 200, let csrf = me.json?["csrf"] as? String else { throw HarnessError("/api/me: \(me)") }
        return DashboardLogin(cookie: cookie, key: key, csrf: csrf)
    }

    /// `POST /api/rpc` with the given credentials (the dashboard's own Origin unless `origin` says otherwise).
    func rpc(_ method: String, _ params: [String: Any] = [:], as login: DashboardLogin?, origin: String?? = .none,
             extra: [(String, String)] = []) throws -> WebReply {
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if let login { headers += login.headers + [("X-CSRF-Token", login.csrf)] }
        switch origin {
        case .none: headers.append(("Origin", self.origin))
        case .some(.some(let value)): headers.append(("Origin", value))
        case .some(.none): break
        }
        let body = try JSONSerialization.data(withJSONObject: ["method": method, "params": params])
        return try WebHTTP.call(port, "POST", "/api/rpc", headers: headers + extra, body: String(decoding: body, as: UTF8.self))
    }

    /// The event stream of `session`, opened with `login` from the dashboard's own Origin and read up to its
    /// `: ready` (from then on, every event of the session comes on it).
    func openEventStream(as login: DashboardLogin, session: String = "default") throws -> WebHTTP {
        let stream = try WebHTTP(port: port)
        do {
            try stream.send("GET", "/api/events?session=" + session, headers: login.headers + [("Origin", origin)])
            _ = try stream.read { $0.body.contains(": ready") }
        } catch {
            stream.close()
            throw error
        }
        return stream
    }

    /// Adds a download of `url` to `destination` through the bridge; returns its task id.
    func add(_ url: String, to destination: String, segments: Int, options: [String: Any] = [:], as login: DashboardLogin) throws -> String {
        var task: [String: Any] = ["url": url, "path": destination, "segments": segments]
        if !options.isEmpty { task["options"] = options }
        let added = try rpc("tasks.add", ["session": "default", "tasks": [task]], as: login)
        guard let id = ((added.json?["result"] as? [String: Any])?["ids"] as? [String])?.first else { throw HarnessError("tasks.add: \(added)") }
        return id
    }

    /// `tasks.list` of session `default` through the Unix socket (not the dashboard): what really happened.
    func tasksOverSocket() throws -> [[String: Any]] {
        let reply = try RawSocketClient(path: socket).call("tasks.list", ["session": "default"], id: 1)
        if reply.isNoSuchSession { return [] }
        return reply.result?["tasks"] as? [[String: Any]] ?? []
    }
}
/// A dashboard login as a browser holds it: the cookie, the session's key (sent as `X-Haul-Key`) and the CSRF token.
struct DashboardLogin {
    let cookie: String
    let key: String
    let csrf: String

    /// The cookie and key headers every request of the page carries.
    var headers: [(String, String)] { [("Cookie", cookie), ("X-Haul-Key", key)] }
}
#endif
