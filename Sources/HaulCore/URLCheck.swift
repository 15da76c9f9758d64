import struct Foundation.URL

/// What a URL must be before any socket call: `http` or `https`, a host, and a port from 1 to 65535. Applied
/// to URLs from the user, from redirects, from stored tasks and from the daemon's protocol alike, so that no
/// value reaches the network layer that it would trap on.
package enum URLCheck {
    /// Why `url` cannot be requested, or `nil` when it can.
    public static func problem(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return "unsupported URL scheme \"\(url.scheme ?? "")\""
        }
        guard let host = url.host, !host.isEmpty else { return "no host" }
        guard !host.contains(where: { $0.isWhitespace || $0 == "\0" }) else { return "invalid host \"\(host)\"" }
        if let port = url.port, !(1...65535).contains(port) { return "port \(port) is out of range (1-65535)" }
        if let port = explicitPort(url.absoluteString), !(1...65535).contains(port) {
            return "port \(port) is out of range (1-65535)"
        }
        return nil
    }

    /// The port written in the authority of `text` (after `]` for an IPv6 literal), as a number.
    static func explicitPort(_ text: String) -> Int? {
        guard let schemeEnd = text.range(of: "://") else { return nil }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if let bracket = authority.lastIndex(of: "]") { authority = authority[authority.index(after: bracket)...] }
        guard let colon = authority.lastIndex(of: ":") else { return nil }
        let digits = authority[authority.index(after: colon)...]
        guard !digits.isEmpty else { return nil }
        guard digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return -1 }
        return digits.count > 6 ? Int.max : Int(digits)
    }
}
