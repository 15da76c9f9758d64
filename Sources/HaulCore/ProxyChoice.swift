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
    /// Proxy authentication (`user:password@` in the proxy URL); HTTP proxies only.
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
        if kind != .http, user != nil {
            throw InputError("SOCKS proxy authentication is not supported; use an HTTP proxy for user:password")
        }
    }

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

/// Which proxy a URL goes through, with curl's semantics: `--proxy` for every URL, else `http_proxy` (lower
/// case only, because of httpoxy) for `http://` and `https_proxy`/`HTTPS_PROXY` for `https://`, else
/// `all_proxy`/`ALL_PROXY`; except hosts matched by `--noproxy`, else `no_proxy`/`NO_PROXY` (a comma list
/// of host names, matched with their subdomains, a leading dot ignored, literal IPs, or `*` for all).
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

    /// Whether `host` is excepted by a `no_proxy` list.
    public static func matches(host rawHost: String, noProxy list: String) -> Bool {
        var host = rawHost.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host.removeLast() }
        for rawEntry in list.split(separator: ",") {
            var entry = rawEntry.trimmingASCIIWhitespace().lowercased()
            if entry == "*" { return true }
            if entry.hasPrefix("[") , let close = entry.firstIndex(of: "]") {
                entry = String(entry[entry.index(after: entry.startIndex)..<close])
            } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") {
                entry = String(entry[..<colon])  // host:port — the port is ignored, as curl does
            }
            while entry.hasPrefix(".") { entry.removeFirst() }
            if entry.hasSuffix(".") { entry.removeLast() }
            guard !entry.isEmpty else { continue }
            if host == entry || host.hasSuffix("." + entry) { return true }
        }
        return false
    }
}
