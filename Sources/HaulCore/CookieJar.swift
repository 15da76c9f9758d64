import Foundation

/// One cookie from a Netscape cookie jar (what curl's `-c`, wget's `--save-cookies` and browser exports write), or
/// given as `NAME=VALUE` (curl's `-b NAME=VALUE`, then for the URL's host only). Its value is never printed.
public struct Cookie: Codable, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The domain, lower-cased, without a leading dot.
    public var domain: String
    /// `true`: sent to ``domain`` and its subdomains; `false`: to ``domain`` exactly (a host-only cookie).
    public var includesSubdomains: Bool
    /// The path it applies to (RFC 6265 §5.1.4): that path and the paths below it.
    public var path: String
    /// Sent over HTTPS only.
    public var secure: Bool
    /// When it expires, in seconds since 1970; 0 for a session cookie (sent until the jar is discarded).
    public var expires: Int64
    /// The cookie's name.
    public var name: String
    /// The cookie's value; never printed or logged.
    public var value: String

    /// A cookie with these fields, as given.
    public init(domain: String, includesSubdomains: Bool, path: String, secure: Bool, expires: Int64, name: String, value: String) {
        self.domain = domain
        self.includesSubdomains = includesSubdomains
        self.path = path
        self.secure = secure
        self.expires = expires
        self.name = name
        self.value = value
    }

    /// Its name and where it applies, without its value.
    public var description: String {
        "\(name)=\(Redaction.mask) for \(includesSubdomains ? "." : "")\(domain)\(path)\(secure ? " (secure)" : "")"
    }

    /// Whether it goes with a request to `host` (lower-cased, no port) and `path` (the URL's path, `/` when
    /// empty) over `https`, at `now` (seconds since 1970): domain, path, secure flag and expiry all match, as
    /// RFC 6265 §5.4 decides. An address is matched only by a host-only cookie of that very address.
    public func matches(host rawHost: String, path requestPath: String, https: Bool, now: Int64) -> Bool {
        if secure, !https { return false }
        if expires > 0, expires <= now { return false }
        return Self.domainMatches(host: rawHost, domain: domain, includesSubdomains: includesSubdomains)
            && Self.pathMatches(requestPath: requestPath, cookiePath: path)
    }

    /// RFC 6265 §5.1.3, with the jar's subdomain flag: equal names, or `host` below `domain` when subdomains are
    /// included and `host` is a name, not an address.
    public static func domainMatches(host rawHost: String, domain rawDomain: String, includesSubdomains: Bool) -> Bool {
        let host = normalized(rawHost), domain = normalized(rawDomain)
        guard !host.isEmpty, !domain.isEmpty else { return false }
        if host == domain { return true }
        guard includesSubdomains, IPAddress(host) == nil, IPAddress(domain) == nil else { return false }
        return host.hasSuffix("." + domain)
    }

    /// RFC 6265 §5.1.4: the same path, or `cookiePath` a prefix of `requestPath` that ends with `/` or is followed
    /// by `/` in it.
    public static func pathMatches(requestPath rawPath: String, cookiePath rawCookiePath: String) -> Bool {
        let requestPath = rawPath.isEmpty ? "/" : rawPath
        let cookiePath = rawCookiePath.isEmpty ? "/" : rawCookiePath
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if cookiePath.hasSuffix("/") { return true }
        return requestPath.dropFirst(cookiePath.count).first == "/"
    }

    /// A host or domain as compared: lower case, without brackets, leading dots or a trailing dot.
    static func normalized(_ name: String) -> String {
        var text = Substring(name.lowercased())
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        while text.hasPrefix(".") { text = text.dropFirst() }
        if text.hasSuffix(".") { text = text.dropLast() }
        return String(text)
    }

    /// The `Cookie` header value for a request to `url` at `now`, from the `cookies` that match it (longer paths
    /// first, as RFC 6265 §5.4 orders them; a name given twice for the same path is sent once, the later one
    /// winning, as a jar replaces it); `nil` when none matches.
    public static func header(for url: URL, from cookies: [Cookie], now: Int64) -> String? {
        guard let host = url.host, let scheme = url.scheme?.lowercased() else { return nil }
        let encodedPath = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path
        let path = encodedPath.isEmpty ? "/" : encodedPath
        var chosen: [Cookie] = []
        for cookie in cookies where cookie.matches(host: host, path: path, https: scheme == "https", now: now) {
            chosen.removeAll { $0.name == cookie.name && $0.path == cookie.path && $0.domain == cookie.domain }
            chosen.append(cookie)
        }
        guard !chosen.isEmpty else { return nil }
        let ordered = chosen.enumerated().sorted { a, b in
            a.element.path.count != b.element.path.count ? a.element.path.count > b.element.path.count : a.offset < b.offset
        }
        return ordered.map { "\($0.element.name)=\($0.element.value)" }.joined(separator: "; ")
    }
}

/// A Netscape cookie jar's text, read as curl and wget read it: one cookie per line, seven TAB-separated fields
/// (domain, subdomains `TRUE`/`FALSE`, path, secure `TRUE`/`FALSE`, expiry in seconds since 1970 or 0, name,
/// value); `#` starts a comment, except `#HttpOnly_` before a domain (curl's mark for an HttpOnly cookie), and
/// blank lines are skipped.
public enum CookieJar {
    /// The cookies of `text`; a line that is not a cookie is an error naming its line number (never its value).
    public static func parse(_ text: String) throws(InputError) -> [Cookie] {
        var cookies: [Cookie] = []
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            var line = Substring(rawLine)
            if line.hasSuffix("\r") { line = line.dropLast() }
            if line.hasPrefix("#HttpOnly_") {
                line = line.dropFirst("#HttpOnly_".count)
            } else if line.hasPrefix("#") || line.allSatisfy({ $0 == " " || $0 == "\t" }) {
                continue
            }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            // A cookie with an empty value may lose its last TAB in some exports.
            guard fields.count == 7 || fields.count == 6 else {
                throw InputError("line \(index + 1) of the cookie file is not a cookie (7 TAB-separated fields)")
            }
            let domainField = fields[0].trimmingASCIIWhitespace()
            let domain = Cookie.normalized(domainField)
            guard !domain.isEmpty, !domain.contains(where: { $0 == " " || $0 == "/" }),
                  let subdomains = flag(fields[1]), let secure = flag(fields[3]),
                  let expires = Int64(fields[4].trimmingASCIIWhitespace()) else {
                throw InputError("line \(index + 1) of the cookie file is not a cookie (domain, TRUE/FALSE, path, TRUE/FALSE, expiry, name, value)")
            }
            let name = String(fields[5])
            let value = fields.count == 7 ? String(fields[6]) : ""
            guard !name.isEmpty, Self.isHeaderSafe(name), !name.contains("="), !name.contains(";"), Self.isHeaderSafe(value), !value.contains(";") else {
                throw InputError("line \(index + 1) of the cookie file holds a name or value that cannot be sent in a Cookie header")
            }
            let path = String(fields[2])
            cookies.append(Cookie(
                domain: domain, includesSubdomains: subdomains || domainField.hasPrefix("."), path: path.hasPrefix("/") ? path : "/",
                secure: secure, expires: max(0, expires), name: name, value: value))
        }
        return cookies
    }

    /// `cookies` without the lines that would go to every site under a public suffix (`.com`, `.co.uk`: a domain
    /// of `publicSuffixes` with subdomains), which curl and wget skip too; a line for that host alone is kept.
    package static func withoutPublicSuffixDomains(_ cookies: [Cookie], publicSuffixes: PublicSuffixes) -> [Cookie] {
        cookies.filter { !($0.includesSubdomains && publicSuffixes.isPublicSuffix($0.domain)) }
    }

    /// Cookies given as `NAME=VALUE[; NAME2=VALUE2]` (curl's `-b NAME=VALUE`), for `host` only, every path, over
    /// http and https.
    public static func parsePairs(_ text: String, host: String) throws(InputError) -> [Cookie] {
        var cookies: [Cookie] = []
        for pair in text.split(separator: ";") {
            let trimmed = pair.trimmingASCIIWhitespace()
            if trimmed.isEmpty { continue }
            guard let equals = trimmed.firstIndex(of: "="), equals != trimmed.startIndex else {
                throw InputError("a cookie is NAME=VALUE; \"\(trimmed.prefix(40))…\" has no name")
            }
            let name = trimmed[..<equals].trimmingASCIIWhitespace(), value = trimmed[trimmed.index(after: equals)...].trimmingASCIIWhitespace()
            guard isHeaderSafe(name), !name.contains(" "), isHeaderSafe(value) else {
                throw InputError("the cookie \(name.prefix(40)) holds characters that cannot be sent in a Cookie header")
            }
            cookies.append(Cookie(domain: Cookie.normalized(host), includesSubdomains: false, path: "/", secure: false, expires: 0, name: name, value: value))
        }
        guard !cookies.isEmpty else { throw InputError("give a cookie as NAME=VALUE, or a cookie file") }
        return cookies
    }

    /// The cookies of `jar` that may ever go to `host` (their domain matches it): what a download of a URL on
    /// that host keeps, so that a task does not carry a whole jar.
    public static func relevant(_ jar: [Cookie], to host: String) -> [Cookie] {
        jar.filter { Cookie.domainMatches(host: host, domain: $0.domain, includesSubdomains: $0.includesSubdomains) }
    }

    private static func flag(_ field: Substring) -> Bool? {
        switch field.trimmingASCIIWhitespace().uppercased() {
        case "TRUE": return true
        case "FALSE": return false
        default: return nil
        }
    }

    /// Whether `text` may go into a header: no control characters (a CR or LF would split it).
    public static func isHeaderSafe(_ text: some StringProtocol) -> Bool {
        !text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7f }
    }
}
