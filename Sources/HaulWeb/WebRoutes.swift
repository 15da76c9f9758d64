import Foundation
import HaulDaemon
import HaulKit
import NIOCore
import NIOHTTP1

/// A request as the routes see it.
struct WebRequest: Sendable {
    var method: String
    var target: String
    var headers: HTTPHeaders
    /// nil when it was too large.
    var body: ByteBuffer?

    init(head: HTTPRequestHead, body: ByteBuffer?) {
        method = head.method.rawValue
        target = head.uri
        headers = head.headers
        self.body = body
    }

    /// The single value of a header; nil when absent or repeated (a repeated `Host` or `Origin` is refused).
    func header(_ name: String) -> String? {
        let values = headers[name]
        return values.count == 1 ? values[0] : nil
    }
}

/// A full answer.
struct WebResponse: Sendable {
    var status: HTTPResponseStatus
    var headers: [(String, String)] = []
    var body: [UInt8] = []

    static func text(_ status: HTTPResponseStatus, _ text: String) -> WebResponse {
        WebResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array((text + "\n").utf8))
    }

    static func json(_ status: HTTPResponseStatus, _ value: JSONValue) -> WebResponse {
        WebResponse(status: status, headers: [("Content-Type", "application/json")], body: Array(value.serialized.utf8))
    }

    static func error(_ status: HTTPResponseStatus, _ message: String) -> WebResponse {
        json(status, ["error": .string(message)])
    }
}

/// What the server does with a request: a full answer, or an event stream.
enum WebAnswer: Sendable {
    case full(WebResponse)
    case events(session: String, cursor: WebDashboard.Cursor)
}

extension WebAnswer {
    static func text(_ status: HTTPResponseStatus, _ text: String) -> WebAnswer { .full(.text(status, text)) }
}

/// The dashboard's routes (docs/web.md). Every decision is ``WebAccess``'s or ``WebLogins``'s; this reads the
/// request and writes the answer.
enum WebRoutes {
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

    /// On every answer. Never `Access-Control-Allow-Origin`.
    static let commonHeaders: HTTPHeaders = [
        "Content-Security-Policy": contentSecurityPolicy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Frame-Options": "DENY",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
    ]

    static let cookieName = "haul_session"
    /// The header the page sends its session's key in (``WebLogins``): a cookie alone, which a browser also sends to
    /// every other port of the host, opens nothing.
    static let keyHeader = "X-Haul-Key"

    /// The head a full answer is written with: the common headers, the answer's own, its length, and
    /// `Connection: close` unless the request keeps the connection open.
    static func responseHead(_ response: WebResponse, for head: HTTPRequestHead) -> HTTPResponseHead {
        var headers = commonHeaders
        for (name, value) in response.headers { headers.replaceOrAdd(name: name, value: value) }
        headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
        if !head.isKeepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        return HTTPResponseHead(version: head.version, status: response.status, headers: headers)
    }

    /// What a request line asks for; the page's files are those of ``WebAssets``.
    static func route(_ method: String, _ path: String) -> WebAccess.Route {
        WebAccess.route(method: method, path: path, assets: WebAssets.paths)
    }

    static func answer(_ request: WebRequest, _ access: WebAccess, _ dashboard: WebDashboard) async -> WebAnswer {
        // The Host first: a name that is not ours (DNS rebinding) gets nothing else.
        let host = request.header("Host")
        guard let host, access.allowsHost(host) else { return .full(WebResponse(status: .misdirectedRequest)) }
        guard let target = WebAccess.splitTarget(request.target) else { return .text(.badRequest, "bad request") }
        let query = target.query
        switch route(request.method, target.path) {
        case .notFound:
            return .text(.notFound, "not found")
        case .methodNotAllowed(let allow):
            var response = WebResponse.error(.methodNotAllowed, "method not allowed")
            response.headers.append(("Allow", allow))
            return .full(response)
        case .asset(let path):
            guard let asset = WebAssets.asset(at: path) else { return .text(.notFound, "not found") }
            return .full(WebResponse(status: .ok, headers: [("Content-Type", asset.contentType)], body: asset.bytes))
        case .login:
            return .full(login(query["token"], secure: access.secure, dashboard))
        case .me:
            return .full(await me(request, dashboard))
        case .rpc:
            return .full(await rpc(request, host: host, access, dashboard))
        case .events:
            return events(request, query: query, host: host, access, dashboard)
        }
    }

    // MARK: Before the body

    /// Who a request's head shows it comes from: `cookie:<id>` for a session cookie, `api-key` for the API key; nil
    /// without a valid credential. It makes the connection trusted and names the login whose event streams are counted.
    static func login(of head: HTTPRequestHead, _ dashboard: WebDashboard) -> String? {
        let request = WebRequest(head: head, body: nil)
        if let key = hasAPIKey(request, dashboard) { return key ? "api-key" : nil }
        let cookie = WebAccess.cookie(cookieName, in: request.headers["Cookie"].joined(separator: "; "))
        guard let cookie, loggedIn(request, dashboard) != nil else { return nil }
        return "cookie:" + cookie
    }

    /// The answer a request gets on its head alone, before its body is read (which then never is): a foreign
    /// `Host`, or no valid credential on a route that needs one. nil when the request goes on.
    static func refusal(beforeBodyOf head: HTTPRequestHead, login: String?, _ access: WebAccess, _ dashboard: WebDashboard) -> WebResponse? {
        let request = WebRequest(head: head, body: nil)
        guard let host = request.header("Host"), access.allowsHost(host) else { return WebResponse(status: .misdirectedRequest) }
        guard login == nil, let target = WebAccess.splitTarget(request.target) else { return nil }
        switch route(request.method, target.path) {
        case .rpc, .me, .events:
            return hasAPIKey(request, dashboard) == false ? .error(.unauthorized, "wrong API key") : .error(.unauthorized, "not logged in")
        case .notFound, .methodNotAllowed, .asset, .login:
            return nil
        }
    }

    /// Whether a request's body is read into memory: only a call to the bridge has one.
    static func takesBody(_ head: HTTPRequestHead) -> Bool {
        guard let target = WebAccess.splitTarget(head.uri) else { return false }
        if case .rpc = route(head.method.rawValue, target.path) { return true }
        return false
    }

    // MARK: Login

    static let spentPage = """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Haul</title></head><body>\
        <p>This login link was already used or has expired: run <code>haul web</code> again.</p></body></html>
        """

    /// Spends a login token: a session cookie, and the session's key in the redirect's fragment (`/#key=…`), which
    /// the browser never sends to any server; the page moves it into its origin's `sessionStorage` and out of the
    /// address bar.
    private static func login(_ token: String?, secure: Bool, _ dashboard: WebDashboard) -> WebResponse {
        let cookie = WebSecrets.token(), csrf = WebSecrets.token(), key = WebSecrets.token()
        let spent = dashboard.state.withLockedValue { state -> Bool in
            guard let token, state.logins.spend(token: token, at: .now) else { return false }
            state.logins.open(session: cookie, csrf: csrf, key: key, at: .now)
            return true
        }
        // Spent (or never valid): the page `haul web --open` may have written for it goes too.
        if let token { WebLoginPage.remove(token: token, home: dashboard.home) }
        guard spent else {
            return WebResponse(status: .forbidden, headers: [("Content-Type", "text/html; charset=utf-8")], body: Array(spentPage.utf8))
        }
        dashboard.logger.info("web dashboard: a browser logged in")
        let flags = "; HttpOnly; SameSite=Strict; Path=/" + (secure ? "; Secure" : "")
        return WebResponse(status: .seeOther, headers: [("Location", "/#key=" + key), ("Set-Cookie", cookieName + "=" + cookie + flags)])
    }

    /// The request's login session: its cookie with the session's key in ``keyHeader``; nil without either.
    private static func loggedIn(_ request: WebRequest, _ dashboard: WebDashboard) -> WebLogins.Session? {
        let cookie = WebAccess.cookie(cookieName, in: request.headers["Cookie"].joined(separator: "; "))
        let key = request.header(keyHeader)
        return dashboard.state.withLockedValue { $0.logins.session(cookie, key: key, at: .now) }
    }

    /// Whether the request carries the API key (`Authorization: Bearer …`).
    private static func hasAPIKey(_ request: WebRequest, _ dashboard: WebDashboard) -> Bool? {
        guard let offered = WebAccess.bearer(request.header("Authorization")) else { return nil }
        guard let key = WebSecrets.apiKey(home: dashboard.home) else { return false }
        return WebAccess.constantTimeEquals(key, offered)
    }

    private static func me(_ request: WebRequest, _ dashboard: WebDashboard) async -> WebResponse {
        guard let session = loggedIn(request, dashboard) else { return .error(.unauthorized, "not logged in") }
        let sessions = await dashboard.service.knownSessions()
        return .json(.ok, [
            "csrf": .string(session.csrf), "sessions": .array(sessions.map(JSONValue.string)), "version": .string(HaulVersion.string),
        ])
    }

    // MARK: RPC

    private static func rpc(_ request: WebRequest, host: String, _ access: WebAccess, _ dashboard: WebDashboard) async -> WebResponse {
        let origin = request.header("Origin")
        if let key = hasAPIKey(request, dashboard) {
            guard key else { return .error(.unauthorized, "wrong API key") }
            guard access.allowsOptionalOrigin(origin, host: host) else { return .error(.forbidden, "foreign origin") }
        } else {
            guard let session = loggedIn(request, dashboard) else { return .error(.unauthorized, "not logged in") }
            guard access.isOwnOrigin(origin, host: host) else { return .error(.forbidden, "foreign origin") }
            guard let csrf = request.header("X-CSRF-Token"), WebAccess.constantTimeEquals(session.csrf, csrf) else {
                return .error(.forbidden, "missing or wrong CSRF token")
            }
        }
        guard request.header("Content-Type")?.lowercased().hasPrefix("application/json") == true else {
            return .error(.unsupportedMediaType, "send Content-Type: application/json")
        }
        guard let body = request.body, let value = JSONValue.parse(body.readableBytesView), let call = value.objectValue,
              let method = call["method"]?.stringValue else {
            return .error(.badRequest, "the body must be {\"method\": \"…\", \"params\": {…}}")
        }
        guard WebAccess.bridges(method) else { return .error(.forbidden, "\(method) cannot be called from the dashboard") }
        let params: Params
        switch call["params"] {
        case nil, .null?: params = Params()
        case .object(let members)?: params = Params(members)
        default: return .error(.badRequest, "\"params\" must be an object")
        }
        let caller = DaemonCaller.dashboard(commandsAllowed: dashboard.configuration.allowCommands)
        let result = await dashboard.service.handle(JSONRPC.Request(id: .number(1), method: method, params: params), from: dashboard.outbox, caller: caller)
        switch result {
        case .success(let value):
            // The daemon answers in full; what leaves through the dashboard has its tasks' secrets masked.
            let answer = JSONValue.object(["result": WebRedaction.redacted(value)])
            guard answer.serialized.utf8.count <= DaemonProtocol.maxResponseBytes else {
                return .json(.ok, errorObject(.haul(HaulError(.server, "the answer to \(method) is too large; ask for less (see \"limit\")"))))
            }
            return .json(.ok, answer)
        case .failure(let error):
            return .json(.ok, errorObject(error))
        }
    }

    private static func errorObject(_ error: RPCError) -> JSONValue {
        var object: [String: JSONValue] = ["code": JSONValue(error.code), "message": .string(error.message)]
        if let data = error.data { object["data"] = data }
        return ["error": .object(object)]
    }

    // MARK: Events

    private static func events(_ request: WebRequest, query: [String: String], host: String, _ access: WebAccess, _ dashboard: WebDashboard) -> WebAnswer {
        if let key = hasAPIKey(request, dashboard) {
            guard key else { return .full(.error(.unauthorized, "wrong API key")) }
        } else {
            guard loggedIn(request, dashboard) != nil else { return .full(.error(.unauthorized, "not logged in")) }
        }
        guard access.allowsOptionalOrigin(request.header("Origin"), host: host) else { return .full(.error(.forbidden, "foreign origin")) }
        let session = query["session"] ?? "default"
        guard (try? SessionFolder.validate(identifier: session)) != nil else { return .full(.error(.badRequest, "bad session name")) }
        let cursor = request.header("Last-Event-ID") ?? query["lastEventId"]
        return .events(session: session, cursor: cursor.map { WebDashboard.Cursor.header($0) } ?? WebDashboard.Cursor.fresh)
    }
}
