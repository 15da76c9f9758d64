import struct Foundation.URL

/// A cookie a response sets (`Set-Cookie`, RFC 6265 §5.2), read as browsers, wget and aria2c read it, for the
/// requests that follow it in the same download: a redirect chain that sets a cookie on the way (a download gate,
/// a CDN's token) gets it back on its next hops, where the cookie's domain and path match.
extension Cookie {
    /// What a `Set-Cookie` value said: a cookie to keep, or one to forget (expired: `Max-Age=0`, an `Expires` past).
    public enum Setting: Equatable, Sendable {
        /// A cookie to send where it matches (replacing one of the same name, domain and path).
        case keep(Cookie)
        /// A cookie to remove (its name, domain and path), as `Max-Age=0` or a past `Expires` asks.
        case forget(Cookie)
    }

    /// The cookie `value` (one `Set-Cookie` field) sets, as answered for `url` at `now` (seconds since 1970); `nil`
    /// when the field is to be ignored (no `name=`, a `Domain` that does not cover `url`'s host, as RFC 6265 §5.3
    /// step 6 says, or a one-label `Domain` such as `com` other than the host itself).
    public static func setting(_ value: String, from url: URL, now: Int64) -> Setting? {
        setting(value, from: url, now: now, publicSuffixes: .topLevelOnly)
    }

    /// ``setting(_:from:now:)`` with the Public Suffix List's rules: a `Domain` that is one of `publicSuffixes` other
    /// than the host itself is ignored (RFC 6265 §5.3 step 5); the host's own makes a cookie for that host only.
    package static func setting(_ value: String, from url: URL, now: Int64, publicSuffixes: PublicSuffixes = .topLevelOnly) -> Setting? {
        guard let host = url.host.map(normalized), !host.isEmpty else { return nil }
        var parts = value.split(separator: ";", omittingEmptySubsequences: false).makeIterator()
        guard let pair = parts.next(), let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmedOf(" \t")
        let cookieValue = pair[pair.index(after: equals)...].trimmedOf(" \t")
        guard !name.isEmpty, !(name + cookieValue).contains(where: { $0.isNewline || $0 == "\0" }) else { return nil }
        var cookie = Cookie(
            domain: host, includesSubdomains: false, path: defaultPath(of: url), secure: false, expires: 0, name: name,
            value: cookieValue)
        var expired = false
        var maxAgeSeen = false
        while let part = parts.next() {
            let equals = part.firstIndex(of: "=")
            let attribute = part[..<(equals ?? part.endIndex)].trimmedOf(" \t").lowercased()
            let argument = equals.map { part[part.index(after: $0)...].trimmedOf(" \t") } ?? ""
            switch attribute {
            case "domain":
                let domain = normalized(argument)
                guard !domain.isEmpty else { continue }
                // Only the host itself or a domain above it (never an address's neighbour), and not a public
                // suffix (`com`, `co.uk`: a cookie for every site under it), as curl and wget refuse it with libpsl.
                guard domainMatches(host: host, domain: domain, includesSubdomains: true) else { return nil }
                if publicSuffixes.isPublicSuffix(domain) {
                    guard domain == host else { return nil }
                    cookie.domain = host
                    cookie.includesSubdomains = false
                    continue
                }
                cookie.domain = domain
                cookie.includesSubdomains = IPAddress(domain) == nil
            case "path":
                if argument.hasPrefix("/") { cookie.path = argument }
            case "secure":
                cookie.secure = true
            case "max-age":
                guard let seconds = Int64(argument) else { continue }
                maxAgeSeen = true
                if seconds <= 0 { expired = true } else { cookie.expires = now + min(seconds, 400 * 86_400) }
            case "expires":
                guard !maxAgeSeen, let date = HTTPDate.parse(argument) else { continue }
                if date <= now { expired = true } else { cookie.expires = date }
            default:
                continue
            }
        }
        return expired ? .forget(cookie) : .keep(cookie)
    }

    /// `cookies` after `setting`: a cookie of the same name, domain and path is replaced (or removed).
    public static func applying(_ setting: Setting, to cookies: [Cookie]) -> [Cookie] {
        let cookie: Cookie
        switch setting {
        case .keep(let kept): cookie = kept
        case .forget(let forgotten): cookie = forgotten
        }
        var result = cookies.filter { !($0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path) }
        if case .keep = setting { result.append(cookie) }
        return result
    }

    /// RFC 6265 §5.1.4's default path: the request path up to (not including) its last `/`, or `/`.
    static func defaultPath(of url: URL) -> String {
        let path = url.path
        guard path.hasPrefix("/"), let last = path.lastIndex(of: "/"), last != path.startIndex else { return "/" }
        return String(path[..<last])
    }
}

private extension Substring {
    func trimmedOf(_ set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}
