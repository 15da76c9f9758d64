/// Who may reach the web dashboard and how: the `Host` allowlist (no DNS rebinding), the `Origin` check, which
/// HTTP method each route allows, and which daemon methods the browser bridge may call. Pure: no I/O.
///
/// The shell (HaulWeb) asks these questions of every request, in this order: ``allowsHost(_:)`` (else 421),
/// ``route(method:path:)`` (else 404/405), then the route's own login, CSRF and ``isOwnOrigin(_:host:)`` checks.
package struct WebAccess: Sendable, Equatable {
    /// The port the listener is bound to: a `Host` naming another port is refused.
    public let port: Int
    /// Whether the listener speaks TLS (the dashboard's own origin is then `https://…`).
    public let secure: Bool
    /// Names allowed besides the loopback ones (`--web-allow-host`), lower-cased, without a port.
    public let extraHosts: Set<String>

    /// The loopback names every dashboard answers to.
    public static let loopbackHosts: Set<String> = ["127.0.0.1", "[::1]", "localhost"]

    public init(port: Int, secure: Bool = false, extraHosts: [String] = []) {
        self.port = port
        self.secure = secure
        self.extraHosts = Set(extraHosts.compactMap { Self.parseHost($0)?.name })
    }

    // MARK: Host

    /// A `Host` header split into its lower-cased name (an IPv6 literal keeps its brackets) and port; nil when it
    /// is not a well-formed `host[:port]`.
    public static func parseHost(_ value: String) -> (name: String, port: Int?)? {
        let text = value.lowercased()
        guard !text.isEmpty, text.utf8.count <= 255,
              text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else { return nil }
        var name: Substring, rest: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            name = text[...close]
            rest = text[text.index(after: close)...]
            let inside = name.dropFirst().dropLast()
            guard !inside.isEmpty, inside.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        } else {
            if let colon = text.firstIndex(of: ":") {
                name = text[..<colon]
                rest = text[colon...]
            } else {
                name = text[...]
                rest = ""
            }
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_" }) else {
                return nil
            }
        }
        if rest.isEmpty { return (String(name), nil) }
        guard rest.first == ":" else { return nil }
        let digits = rest.dropFirst()
        guard (1...5).contains(digits.count), digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
              let port = Int(digits), (1...65_535).contains(port) else { return nil }
        return (String(name), port)
    }

    /// Whether a request with this `Host` header is for this dashboard: a loopback name or an allowed one, with
    /// the listener's port or none. Anything else (a missing header, another name, another port) is refused:
    /// a page on another site that rebinds its name to 127.0.0.1 still sends its own name.
    public func allowsHost(_ header: String?) -> Bool {
        guard let header, let host = Self.parseHost(header) else { return false }
        guard host.port == nil || host.port == port else { return false }
        return Self.loopbackHosts.contains(host.name) || extraHosts.contains(host.name)
    }

    // MARK: Origin

    /// The dashboard's own origin as the browser sees it: the scheme and the `Host` it sent.
    public func ownOrigin(host: String) -> String {
        (secure ? "https://" : "http://") + host.lowercased()
    }

    /// Whether `origin` (an `Origin` header) is the dashboard's own, for a request whose `Host` is `host`. A
    /// missing or `null` origin is not.
    public func isOwnOrigin(_ origin: String?, host: String?) -> Bool {
        guard let origin, let host, allowsHost(host) else { return false }
        return origin.lowercased() == ownOrigin(host: host)
    }

    /// Whether a request may go on given its `Origin`: absent (a script, or a browser's same-origin GET), or the
    /// dashboard's own. Used where a script without a browser may call (the API key, the event stream).
    public func allowsOptionalOrigin(_ origin: String?, host: String?) -> Bool {
        origin == nil || isOwnOrigin(origin, host: host)
    }

    // MARK: Routes

    /// What the server does with a request line.
    public enum Route: Equatable, Sendable {
        /// A static file of the page (`/`, `/app.mjs`, `/app.css`, …), by its path.
        case asset(String)
        /// `GET /login?token=…`: spends a login token and sets the session cookie.
        case login
        /// `GET /api/me`: the CSRF token, the sessions and the version.
        case me
        /// `POST /api/rpc`: one call of the daemon's protocol.
        case rpc
        /// `GET /api/events`: the event stream (Server-Sent Events).
        case events
        /// The path exists but not with this method: 405 with `Allow`.
        case methodNotAllowed(allow: String)
        /// No such path: 404.
        case notFound
    }

    /// The route of a request: only `GET` (and `HEAD` for the page's files) reads, only `POST /api/rpc` changes
    /// anything. `path` is the request target without its query; `assets` the paths of the page's static files (the
    /// dashboard's one list of them, `WebAssets`).
    public static func route(method: String, path: String, assets: Set<String>) -> Route {
        let reads = method == "GET"
        switch path {
        case _ where assets.contains(path):
            return reads || method == "HEAD" ? .asset(path) : .methodNotAllowed(allow: "GET, HEAD")
        case "/login": return reads ? .login : .methodNotAllowed(allow: "GET")
        case "/api/me": return reads ? .me : .methodNotAllowed(allow: "GET")
        case "/api/events": return reads ? .events : .methodNotAllowed(allow: "GET")
        case "/api/rpc": return method == "POST" ? .rpc : .methodNotAllowed(allow: "POST")
        default: return .notFound
        }
    }

    /// The request target split into its path and its query items (percent-decoded); nil when malformed.
    public static func splitTarget(_ target: String) -> (path: String, query: [String: String])? {
        guard target.hasPrefix("/"), target.utf8.count <= 8_192 else { return nil }
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        var query: [String: String] = [:]
        if parts.count == 2 {
            for item in parts[1].split(separator: "&") {
                let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let key = percentDecoded(pair[0]) else { return nil }
                let value = pair.count == 2 ? percentDecoded(pair[1]) : ""
                guard let value else { return nil }
                if query[key] == nil { query[key] = value }
            }
        }
        return (path, query)
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        let text = String(decoding: bytes, as: UTF8.self)
        return Array(text.utf8) == bytes ? text : nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    // MARK: The bridge

    /// The daemon methods a browser (or an API key) may call through `POST /api/rpc`. Not `daemon.hello`, not
    /// the subscriptions (the event stream replaces them), never `web.*`.
    package static let bridgedMethods: Set<DaemonMethod> = [
        .status, .openSession, .setMaxConcurrentDownloads, .setRateLimit, .sessionConfiguration, .addTasks, .listTasks,
        .pauseTasks, .resumeTasks, .cancelTasks, .removeTasks, .setPriority, .segments, .listJournal, .acknowledgeJournal,
    ]

    /// Whether the bridge passes `method` (a wire name) on to the daemon.
    public static func bridges(_ method: String) -> Bool {
        DaemonMethod(rawValue: method).map { bridgedMethods.contains($0) } ?? false
    }

    /// Compares two secrets in time that depends only on their lengths.
    public static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for index in x.indices { difference |= x[index] ^ y[index] }
        return difference == 0
    }

    /// The value of cookie `name` in a `Cookie` header, if present.
    public static func cookie(_ name: String, in header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            if pair[0].trimmingSpaces == name { return String(pair[1].trimmingSpaces) }
        }
        return nil
    }

    /// The token of an `Authorization: Bearer …` header.
    public static func bearer(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingSpaces
        return token.isEmpty ? nil : String(token)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
