import Foundation

/// A proxy to send requests through.
public struct ProxyEndpoint: Codable, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The protocol spoken to the proxy, from the proxy URL's scheme.
    public enum Kind: String, Codable, Hashable, Sendable {
        /// Plain HTTP requests forwarded, HTTPS tunnelled with `CONNECT`.
        case http
        /// SOCKS5, host names resolved locally (`socks5://`) or by the proxy (`socks5h://`).
        case socks5, socks5h
    }

    /// The protocol spoken to the proxy.
    public var kind: Kind
    /// The proxy's host name or IP address.
    public var host: String
    /// The proxy's port (1080 when its URL named none).
    public var port: Int
    /// Proxy authentication (`user:password@` in the proxy URL): Basic for an HTTP proxy, RFC 1929 user name and
    /// password for SOCKS5.
    public var user: String?
    /// The password that goes with ``user``; never printed or logged.
    public var password: String?

    /// Parses a proxy as curl takes it: `[scheme://][user:password@]host[:port]`, scheme `http` (the default),
    /// `socks5` or `socks5h`, port 1080 when none is given.
    public init(parsing text: String) throws(InputError) {
        var value = text.trimmingASCIIWhitespace()
        guard !value.isEmpty else { throw InputError("the proxy is empty") }
        if !value.contains("://") { value = "http://" + value }
        guard let url = URL(string: value), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw InputError("the proxy \"\(Redaction.url(text))\" is not [scheme://][user:password@]host[:port]")
        }
        guard let kind = Kind(rawValue: scheme) else {
            throw InputError("unsupported proxy scheme \"\(scheme)\"; use http://, socks5:// or socks5h://")
        }
        let port = url.port ?? 1080
        guard (1...65535).contains(port) else { throw InputError("the proxy's port \(port) is out of range (1-65535)") }
        self.kind = kind
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        let credentials = Credentials(userinfoOf: url)
        user = credentials?.user
        password = credentials?.password
        if kind != .http, let user {
            // RFC 1929: each is sent with a one-byte length.
            guard (1...255).contains(user.utf8.count), (password ?? "").utf8.count <= 255 else {
                throw InputError("a SOCKS5 proxy's user name must be 1-255 bytes and its password at most 255")
            }
        }
    }

    /// Whether the proxy is told host names (`socks5h://`, and any HTTP proxy) rather than addresses resolved here
    /// (`socks5://`, as curl does).
    public var resolvesNames: Bool { kind != .socks5 }

    /// The proxy as a URL, with its credentials: what ``init(parsing:)`` reads back.
    public var url: String {
        var userinfo = ""
        if let user {
            let allowed = CharacterSet.urlUserAllowed.subtracting(CharacterSet(charactersIn: ":@"))
            let encode = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text }
            userinfo = encode(user) + (password.map { ":" + encode($0) } ?? "") + "@"
        }
        return "\(kind.rawValue)://\(userinfo)\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// `scheme://host:port`, without credentials.
    public var description: String { "\(kind.rawValue)://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
}

/// How one request reaches its server, as curl, wget and aria2c do it.
public enum ProxyRoute: Equatable, Sendable {
    /// A connection to the server itself.
    case direct
    /// A plain `http://` URL sent to an HTTP proxy in absolute form (`GET http://host/path HTTP/1.1`), which
    /// fetches it: no `CONNECT`, which proxies allow only to TLS ports (squid's `deny CONNECT !SSL_ports`).
    case forward(ProxyEndpoint)
    /// A `CONNECT host:port` tunnel through an HTTP proxy, then the request (inside TLS for `https://`): for
    /// `https://`, or for `http://` when the user asks for a tunnel (`--proxytunnel`).
    case tunnel(ProxyEndpoint)
    /// A SOCKS5 connection to the server through the proxy, then the request (inside TLS for `https://`).
    case socks(ProxyEndpoint)

    /// The route to `url` through `proxy` (`nil`: direct); `tunnel` asks for `CONNECT` even for plain http.
    public init(url: URL, proxy: ProxyEndpoint?, tunnel: Bool = false) {
        guard let proxy else {
            self = .direct
            return
        }
        switch proxy.kind {
        case .socks5, .socks5h: self = .socks(proxy)
        case .http: self = url.scheme?.lowercased() == "https" || tunnel ? .tunnel(proxy) : .forward(proxy)
        }
    }

    /// The proxy on this route, if any.
    public var proxy: ProxyEndpoint? {
        switch self {
        case .direct: return nil
        case .forward(let proxy), .tunnel(let proxy), .socks(let proxy): return proxy
        }
    }
}

/// Which proxy a URL goes through, with curl's semantics: `--proxy` for every URL, else `http_proxy` (lower
/// case only, because of httpoxy) for `http://` and `https_proxy`/`HTTPS_PROXY` for `https://`, else
/// `all_proxy`/`ALL_PROXY`; except hosts matched by `--noproxy`, else `no_proxy`/`NO_PROXY` (a comma list
/// of host names, matched with their subdomains, a leading dot ignored, literal IPs, CIDR ranges such as
/// `127.0.0.0/8` or `fd00::/8` (curl 7.86), or `*` for all).
public struct ProxyChoice: Codable, Equatable, Sendable {
    /// The proxy given explicitly (`--proxy`); used for every URL not excluded by ``noProxy``.
    public var explicit: ProxyEndpoint?
    /// The hosts that go direct (`--noproxy`), in `no_proxy`'s syntax; when `nil`, `no_proxy`/`NO_PROXY` from
    /// ``environment`` apply.
    public var noProxy: String?
    /// The environment variables the choice reads (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy` and their
    /// upper-case forms where curl reads them).
    public var environment: [String: String]

    /// Reads nothing but what it is given: `environment` is normally the process's.
    public init(explicit: ProxyEndpoint? = nil, noProxy: String? = nil, environment: [String: String] = [:]) {
        self.explicit = explicit
        self.noProxy = noProxy
        self.environment = environment
    }

    /// The variables that choose a proxy (curl's names; `HTTP_PROXY` is left out for the httpoxy reason).
    public static let variables = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"]

    /// The choice `--proxy`/`--noproxy` and these proxy variables of `environment` make: all a task needs to
    /// choose the same proxies later in another process (the daemon).
    public static func from(explicit: ProxyEndpoint?, noProxy: String?, environment: [String: String]) -> ProxyChoice {
        ProxyChoice(explicit: explicit, noProxy: noProxy, environment: environment.filter { variables.contains($0.key) })
    }

    /// The proxy for `url`, or `nil` to connect directly. Throws when a configured proxy is malformed (never
    /// falls back to a direct connection).
    public func proxy(for url: URL) throws(InputError) -> ProxyEndpoint? {
        guard let host = url.host?.lowercased() else { return nil }
        let exceptions = noProxy ?? value("no_proxy") ?? value("NO_PROXY") ?? ""
        if Self.matches(host: host, noProxy: exceptions) { return nil }
        if let explicit { return explicit }
        let scheme = url.scheme?.lowercased()
        let configured = (scheme == "http" ? value("http_proxy") : scheme == "https" ? value("https_proxy") ?? value("HTTPS_PROXY") : nil)
            ?? value("all_proxy") ?? value("ALL_PROXY")
        guard let configured else { return nil }
        return try ProxyEndpoint(parsing: configured)
    }

    private func value(_ name: String) -> String? {
        guard let value = environment[name]?.trimmingASCIIWhitespace(), !value.isEmpty else { return nil }
        return value
    }

    /// Whether `host` is excepted by a `no_proxy` list: a name equal to an entry or below it, an address equal
    /// to an entry, or in a CIDR entry's range (names are not resolved: a range matches addresses only).
    public static func matches(host rawHost: String, noProxy list: String) -> Bool {
        // No list (the usual case): nothing to parse the host for.
        guard !list.isEmpty else { return false }
        var host = rawHost.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host.removeLast() }
        let address = IPAddress(host)
        for rawEntry in list.split(separator: ",") {
            var entry = rawEntry.trimmingASCIIWhitespace().lowercased()
            if entry == "*" { return true }
            if entry.contains("/") {
                if let address, let range = IPRange(entry.filter { $0 != "[" && $0 != "]" }), range.contains(address) { return true }
                continue
            }
            if let address, let listed = IPAddress(entry) {
                if listed == address || listed.mappedIPv4 == address || address.mappedIPv4 == listed { return true }
                continue
            }
            if entry.hasPrefix("[") , let close = entry.firstIndex(of: "]") {
                entry = String(entry[entry.index(after: entry.startIndex)..<close])
            } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") {
                entry = String(entry[..<colon])  // host:port — the port is ignored, as curl does
            }
            while entry.hasPrefix(".") { entry.removeFirst() }
            if entry.hasSuffix(".") { entry.removeLast() }
            guard !entry.isEmpty else { continue }
            // An address matches only itself (never as the "subdomain" 10.0.0.1 of an entry 0.1).
            if host == entry || (address == nil && host.hasSuffix("." + entry)) { return true }
        }
        return false
    }
}
