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

    /// The port written in the authority of `text` (after `]` for an IPv6 literal), as a number. Read byte by byte:
    /// every delimiter is ASCII, and this runs for every request.
    static func explicitPort(_ text: String) -> Int? {
        let bytes = Array(text.utf8)
        guard let schemeEnd = bytes.firstRange(of: Array("://".utf8))?.upperBound else { return nil }
        let authorityEnd = bytes[schemeEnd...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        var authority = bytes[schemeEnd..<authorityEnd]
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        if let bracket = authority.lastIndex(of: UInt8(ascii: "]")) { authority = authority[(bracket + 1)...] }
        guard let colon = authority.lastIndex(of: UInt8(ascii: ":")) else { return nil }
        let digits = authority[(colon + 1)...]
        guard !digits.isEmpty else { return nil }
        guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return -1 }
        return digits.count > 6 ? Int.max : digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }
}
