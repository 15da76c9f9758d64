import Foundation
import HaulKit
import HaulTestSupport
import Logging
import NIOCore
import NIOHTTP1
import Testing
@testable import HaulDaemon
@testable import HaulWeb

/// The web dashboard in this process: its routes over an in-process daemon service, handed HTTP requests (method,
/// target, headers, body) the way the listener hands them over — the head's refusal first (then the body is never
/// read), then the answer, written with the head every answer gets — in the manner of Hummingbird's router tests: no
/// socket, no process. The listener's own work (deadlines, connection limits, TLS, streaming) stays in HaulCLITests.
final class InProcessWeb: Sendable {
    /// The port the dashboard is told it listens on: only `Host` and `Origin` checks see it (nothing is bound).
    static let port = 8_180

    let root: String
    let home: HaulHome
    let service: DaemonService
    let dashboard: WebDashboard
    let access: WebAccess
    let log: CollectedLog

    var origin: String { "http://127.0.0.1:\(Self.port)" }
    var work: String { root + "/work" }

    private init(configuration: WebConfiguration) async throws {
        root = NSTemporaryDirectory() + "haul-web-test-" + UUID().uuidString
        home = HaulHome(path: root + "/home")
        try FileManager.default.createDirectory(atPath: root + "/work", withIntermediateDirectories: true)
        try home.prepare()
        let log = CollectedLog()
        self.log = log
        let logger = Logger(label: "haul.daemon") { _ in log }
        service = DaemonService(home: home, logger: logger)
        await service.restoreSessions()
        dashboard = WebDashboard(service: service, home: home, logger: logger, configuration: configuration)
        try await dashboard.attach(listen: false)
        // What `WebHTTPServer.listen` makes for a plain HTTP listener on this port.
        access = WebAccess(port: Self.port, secure: false, extraHosts: configuration.allowedHosts)
    }

    /// A dashboard for `body`, its service shut down and its folder removed afterwards.
    static func with(_ configuration: WebConfiguration = WebConfiguration(), _ body: (InProcessWeb) async throws -> Void) async throws {
        let web = try await InProcessWeb(configuration: configuration)
        defer { try? FileManager.default.removeItem(atPath: web.root) }
        do {
            try await body(web)
        } catch {
            await web.service.shutdown()
            throw error
        }
        await web.service.shutdown()
    }

    /// One request, as `WebHTTPServer` serves it. `Host: 127.0.0.1:<port>` unless `headers` has one.
    func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: String? = nil) async -> WebReply {
        var fields = HTTPHeaders(headers)
        if !fields.contains(name: "Host") { fields.add(name: "Host", value: "127.0.0.1:\(Self.port)") }
        if let body { fields.replaceOrAdd(name: "Content-Length", value: String(body.utf8.count)) }
        let head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: target, headers: fields)
        let login = WebRoutes.login(of: head, dashboard)
        if let refusal = WebRoutes.refusal(beforeBodyOf: head, login: login, access, dashboard) {
            var closing = head
            closing.headers.replaceOrAdd(name: "Connection", value: "close")
            return WebReply(refusal, head: closing, bodyRead: false)
        }
        let bytes = Array((body ?? "").utf8)
        guard bytes.count <= WebHTTPServer.maxBody else {
            return WebReply(.text(.payloadTooLarge, "the request is too large"), head: head, bodyRead: true)
        }
        let request = WebRequest(head: head, body: WebRoutes.takesBody(head) ? ByteBuffer(bytes: bytes) : ByteBuffer())
        switch await WebRoutes.answer(request, access, dashboard) {
        case .full(let response):
            return WebReply(response, head: head, bodyRead: true)
        case .events(let session, let cursor):
            return WebReply(stream: session, cursor: cursor)
        }
    }

    /// Logs in with a fresh one-time link, as a browser does: the session cookie (`haul_session=…`), the key the
    /// redirect's fragment hands the page (`/#key=…`), and the CSRF token of `/api/me`.
    func login() async throws -> WebLogin {
        let reply = await request("GET", "/login?token=" + dashboard.mintLogin())
        guard reply.status == 303, let cookie = reply.header("Set-Cookie")?.split(separator: ";").first.map(String.init),
              let location = reply.header("Location"), location.hasPrefix("/#key=") else {
            throw HarnessError("login: \(reply)")
        }
        var login = WebLogin(cookie: cookie, key: String(location.dropFirst("/#key=".count)), csrf: nil)
        let me = await request("GET", "/api/me", headers: login.headers)
        guard me.status == 200, let csrf = me.json?["csrf"]?.stringValue else { throw HarnessError("/api/me: \(me)") }
        login.csrf = csrf
        return login
    }

    /// `POST /api/rpc` with the given credentials (the dashboard's own Origin unless `origin` says otherwise).
    func rpc(_ method: String, _ params: JSONValue = [:], as login: WebLogin?, origin: String?? = .none,
             extra: [(String, String)] = []) async -> WebReply {
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if let login {
            headers += login.headers
            if let csrf = login.csrf { headers.append(("X-CSRF-Token", csrf)) }
        }
        switch origin {
        case .none: headers.append(("Origin", self.origin))
        case .some(.some(let value)): headers.append(("Origin", value))
        case .some(.none): break
        }
        let body: JSONValue = ["method": .string(method), "params": params]
        return await request("POST", "/api/rpc", headers: headers + extra, body: body.serialized)
    }

    /// A request to the service as its owner sends it on the Unix socket (not through the dashboard): its answer.
    func call(_ method: String, _ params: JSONValue) async throws -> JSONValue {
        let line = JSONValue.object(["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": params]).serialized
        guard let answer = await service.answer(Array(line.utf8), from: ConnectionOutbox(id: 0, onOverflow: {})),
              let value = JSONValue.parse(Array(answer.utf8)) else { throw HarnessError("\(method): no answer") }
        return value
    }

    /// `tasks.list` of session `default` straight from the service: what really happened.
    func tasks() async throws -> [JSONValue] {
        let value = try await call("tasks.list", ["session": "default"])
        if value["error"]?["data"]?["reason"] == "noSuchSession" { return [] }
        let answer = value.serialized
        guard let tasks = value["result"]?["tasks"]?.arrayValue else { throw HarnessError("tasks.list: \(answer)") }
        return tasks
    }

    /// The folders under `<home>/sessions`.
    var sessionFolders: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: home.path + "/sessions")) ?? []).sorted()
    }
}

/// An answer as a browser would see it: the status, the headers it is written with and its body; or an event stream
/// opened on a session from a cursor.
struct WebReply: CustomStringConvertible {
    var status = 0
    var headers = HTTPHeaders()
    var body = ""
    /// Whether the server read the request's body (a request refused on its head is answered without).
    var bodyRead = true
    var stream: (session: String, cursor: WebDashboard.Cursor)?

    init(_ response: WebResponse, head: HTTPRequestHead, bodyRead: Bool) {
        let written = WebRoutes.responseHead(response, for: head)
        status = Int(written.status.code)
        headers = written.headers
        body = head.method == .HEAD ? "" : String(decoding: response.body, as: UTF8.self)
        self.bodyRead = bodyRead
    }

    init(stream session: String, cursor: WebDashboard.Cursor) {
        status = 200
        stream = (session, cursor)
    }

    func header(_ name: String) -> String? { headers[name].first }
    func has(_ name: String) -> Bool { headers.contains(name: name) }
    var json: JSONValue? { JSONValue.parse(Array(body.utf8)) }
    var result: JSONValue? { json?["result"] }
    var errorCode: Int? { json?["error"]?["code"]?.intValue }

    var description: String {
        if let stream { return "event stream on \(stream.session) from \(stream.cursor)" }
        return "\(status) \(headers.map { "\($0.name): \($0.value)" }.joined(separator: "; ")) \(body.prefix(500))"
    }
}

/// What a logged-in page sends: its cookie, its session's key (`X-Haul-Key`) and its CSRF token; any of them may be
/// left out or changed to see it refused.
struct WebLogin {
    var cookie: String?
    var key: String?
    var csrf: String?

    /// The cookie and key headers (not the CSRF token, which only `POST /api/rpc` takes).
    var headers: [(String, String)] {
        (cookie.map { [("Cookie", $0)] } ?? []) + (key.map { [("X-Haul-Key", $0)] } ?? [])
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
