/// Where the web dashboard may listen: loopback by default; any other address only when the user asks for it
/// explicitly (`--web-allow-remote`) and with TLS (`--web-cert`, `--web-key`). Pure.
package enum WebListenPolicy {
    /// The port `haul web` and `--web` use when none is given (the next free one if it is taken).
    public static let defaultPort = 7711
    public static let defaultHost = "127.0.0.1"

    /// Whether `host` (a name or an address, IPv6 with or without brackets) is the loopback interface.
    public static func isLoopback(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "localhost" || name == "::1" || name == "0:0:0:0:0:0:0:1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in part.count <= 3 && !part.isEmpty && part.allSatisfy(\.isNumber) && (Int(part) ?? 256) <= 255 }
    }

    /// `[HOST:]PORT` of `--web`: the host (default loopback, brackets removed from an IPv6 literal) and the port
    /// (0: any free one); nil when malformed.
    public static func parseAddress(_ text: String) -> (host: String, port: Int)? {
        var host = defaultHost, portText = Substring(text)
        if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty, !host.contains("["), !host.contains("]") else { return nil }
        }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = Int(portText), (0...65_535).contains(port) else { return nil }
        return (host, port)
    }

    /// Why the dashboard may not listen on `host`, as one line for a person; nil when it may.
    public static func refusal(host: String, allowRemote: Bool, hasTLS: Bool) -> String? {
        guard !isLoopback(host) else { return nil }
        if !allowRemote {
            return "the web dashboard listens on loopback only; to listen on \(host) add --web-allow-remote with --web-cert and --web-key"
        }
        if !hasTLS {
            return "the web dashboard needs TLS to listen on \(host): give --web-cert FILE and --web-key FILE"
        }
        return nil
    }

    /// The host of the dashboard's address as a browser writes it (an IPv6 literal in brackets; a wildcard address
    /// becomes `fallback`).
    public static func urlHost(_ host: String, fallback: String = defaultHost) -> String {
        if host == "0.0.0.0" || host == "::" || host == "[::]" { return fallback }
        if host.contains(":"), !host.hasPrefix("[") { return "[" + host + "]" }
        return host
    }
}
