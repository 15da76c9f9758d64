/// The client's side of an HTTP proxy tunnel (`CONNECT host:port`, RFC 9110 §9.3.6): the request to send and
/// what the proxy's answer means. The shell writes ``request``, then feeds the bytes it reads to
/// ``receive(_:)`` until the tunnel is established or refused.
public struct HTTPConnectHandshake: Equatable, Sendable {
    /// Why the proxy did not open the tunnel.
    public enum Failure: Error, Equatable, Sendable {
        /// The proxy answered with a status other than 2xx (403 for a port its rules refuse, 407 for missing or
        /// wrong credentials, 502/503/504 when it could not reach the server).
        case refused(status: Int, phrase: String)
        /// The answer is not HTTP, or its head is longer than ``maxHeadLength``.
        case notHTTP

        /// Whether another attempt could succeed: only a proxy that could not reach the server (502, 503, 504).
        public var isTransient: Bool {
            if case .refused(let status, _) = self { return [502, 503, 504].contains(status) }
            return false
        }
    }

    /// What the shell does next.
    public enum Step: Equatable, Sendable {
        /// Wait for more bytes.
        case needMore
        /// The tunnel is open: the connection now reaches the server.
        case established
        /// The proxy refused; close the connection.
        case failed(Failure)
    }

    /// The longest response head accepted from a proxy.
    public static let maxHeadLength = 16 * 1024

    /// The request: `CONNECT authority HTTP/1.1` with `Host` and, when given, `Proxy-Authorization`.
    public let request: [UInt8]
    private var received: [UInt8] = []
    private var done = false

    /// A tunnel to `host`:`port` (an IPv6 address is bracketed), authenticated with `proxyAuthorization` (a
    /// complete header value such as `Basic …`) when given.
    public init(host: String, port: Int, proxyAuthorization: String?) {
        let authority = (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        var text = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let proxyAuthorization { text += "Proxy-Authorization: \(proxyAuthorization)\r\n" }
        text += "\r\n"
        request = Array(text.utf8)
    }

    /// Consumes the bytes the proxy sent until its response head is complete.
    public mutating func receive(_ bytes: [UInt8]) -> Step {
        guard !done else { return .established }
        received += bytes
        guard let end = Self.headEnd(received) else {
            if received.count > Self.maxHeadLength { return fail(.notHTTP) }
            return .needMore
        }
        guard let (status, phrase) = Self.statusLine(received[..<end]) else { return fail(.notHTTP) }
        done = true
        received = []
        return (200..<300).contains(status) ? .established : .failed(.refused(status: status, phrase: phrase))
    }

    private mutating func fail(_ failure: Failure) -> Step {
        done = true
        received = []
        return .failed(failure)
    }

    /// The index just past the blank line that ends a head.
    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    /// `HTTP/1.x SSS phrase` from the first line of a head.
    static func statusLine(_ head: ArraySlice<UInt8>) -> (Int, String)? {
        let line = head.prefix { $0 != 13 && $0 != 10 }
        let text = String(decoding: line, as: UTF8.self)
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3,
              parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let status = Int(parts[1]) else { return nil }
        let phrase = parts.count == 3 ? String(parts[2]).filter { !$0.isNewline && $0 != "\u{0}" } : ""
        return (status, String(phrase.prefix(100)))
    }
}
