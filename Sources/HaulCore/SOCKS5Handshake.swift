/// The client's side of a SOCKS5 handshake (RFC 1928), with user name and password authentication (RFC 1929):
/// the bytes to send and what the proxy's answers mean. The shell writes ``greeting``, then feeds every byte it
/// reads to ``receive(_:)`` and does what it returns, until the tunnel is established or refused.
public struct SOCKS5Handshake: Equatable, Sendable {
    /// Where the proxy is asked to connect.
    public enum Target: Equatable, Sendable {
        /// An address resolved by the client (`socks5://`).
        case address(IPAddress)
        /// A host name the proxy resolves (`socks5h://`); at most 255 bytes.
        case name(String)
    }

    /// Why the proxy did not open the tunnel.
    public enum Failure: Error, Equatable, Sendable {
        /// The proxy accepts none of the methods offered: it wants a user name and password and none was given
        /// (`requiresCredentials`), or it wants something this client cannot do.
        case noAcceptableMethod(requiresCredentials: Bool)
        /// The proxy refused the user name or password (RFC 1929 status other than 0).
        case authenticationRefused
        /// The proxy could not or would not connect to the target (a reply code other than 0).
        case connectFailed(code: UInt8)
        /// The answer is not SOCKS5 (another protocol on that port, or a malformed reply).
        case notSOCKS5

        /// Whether another attempt could succeed: only a failure to reach the target (network unreachable,
        /// host unreachable, connection refused, TTL expired, general failure) is worth retrying; a refusal by
        /// the proxy's rules or credentials is not.
        public var isTransient: Bool {
            if case .connectFailed(let code) = self { return [1, 3, 4, 5, 6].contains(code) }
            return false
        }

        /// The proxy's answer in words.
        public var description: String {
            switch self {
            case .noAcceptableMethod(true): return "it requires a user name and password"
            case .noAcceptableMethod(false): return "it accepts none of the authentication methods offered"
            case .authenticationRefused: return "wrong user name or password"
            case .connectFailed(let code): return Self.replyText(code) + " (SOCKS5 reply \(code))"
            case .notSOCKS5: return "its answer is not SOCKS5"
            }
        }

        static func replyText(_ code: UInt8) -> String {
            switch code {
            case 1: return "general failure"
            case 2: return "connection not allowed by its rules"
            case 3: return "network unreachable"
            case 4: return "host unreachable"
            case 5: return "connection refused"
            case 6: return "TTL expired"
            case 7: return "command not supported"
            case 8: return "address type not supported"
            default: return "unknown reply"
            }
        }
    }

    /// What the shell does next.
    public enum Step: Equatable, Sendable {
        /// Wait for more bytes.
        case needMore
        /// Write these bytes, then wait for more.
        case send([UInt8])
        /// The tunnel is open: the connection now reaches the target. Bytes the proxy sent past its reply (none,
        /// normally) belong to the target's stream.
        case established
        /// The proxy refused; close the connection.
        case failed(Failure)
    }

    private enum Phase: Equatable, Sendable { case method, authentication, reply, done }

    private let target: Target
    private let port: Int
    private let credentials: Credentials?
    private var phase = Phase.method
    private var received: [UInt8] = []

    /// A handshake asking for `target`:`port`, offering user name and password authentication when
    /// `credentials` are given (user 1–255 bytes, password at most 255) besides none.
    public init(target: Target, port: Int, credentials: Credentials?) {
        self.target = target
        self.port = port
        self.credentials = credentials
    }

    /// The first message: version 5 and the methods offered (no authentication; user name/password when given).
    public var greeting: [UInt8] { credentials == nil ? [5, 1, 0] : [5, 2, 0, 2] }

    /// Consumes the bytes the proxy sent (all of `bytes`; what follows a complete reply is kept for the target's
    /// stream: see ``Step/established``). After a ``Step/send(_:)``, call it again with nothing until it needs
    /// more: bytes past one answer wait for the next step.
    public mutating func receive(_ bytes: [UInt8]) -> Step {
        received += bytes
        while true {
            switch phase {
            case .method:
                guard received.count >= 2 else { return .needMore }
                let (version, method) = (received[0], received[1])
                received.removeFirst(2)
                guard version == 5 else { return fail(.notSOCKS5) }
                switch method {
                case 0:
                    phase = .reply
                    return .send(connectRequest)
                case 2 where credentials != nil:
                    phase = .authentication
                    return .send(authenticationRequest)
                case 2: return fail(.noAcceptableMethod(requiresCredentials: true))
                case 0xff: return fail(.noAcceptableMethod(requiresCredentials: credentials == nil))
                default: return fail(.notSOCKS5)
                }
            case .authentication:
                guard received.count >= 2 else { return .needMore }
                let (version, status) = (received[0], received[1])
                received.removeFirst(2)
                guard version == 1 else { return fail(.notSOCKS5) }
                guard status == 0 else { return fail(.authenticationRefused) }
                phase = .reply
                return .send(connectRequest)
            case .reply:
                guard received.count >= 2 else { return .needMore }
                guard received[0] == 5 else { return fail(.notSOCKS5) }
                // A failure reply may be cut short by some proxies: its code is all that matters.
                if received[1] != 0 { return fail(.connectFailed(code: received[1])) }
                guard received.count >= 5 else { return .needMore }
                guard received[2] == 0 else { return fail(.notSOCKS5) }
                let addressLength: Int
                switch received[3] {
                case 1: addressLength = 4
                case 4: addressLength = 16
                case 3: addressLength = 1 + Int(received[4])
                default: return fail(.notSOCKS5)
                }
                guard received.count >= 4 + addressLength + 2 else { return .needMore }
                received.removeFirst(4 + addressLength + 2)
                phase = .done
                return .established
            case .done:
                return .established
            }
        }
    }

    /// Bytes received after the proxy's final reply.
    public var leftover: [UInt8] { phase == .done ? received : [] }

    private mutating func fail(_ failure: Failure) -> Step {
        phase = .done
        received = []
        return .failed(failure)
    }

    /// RFC 1929: version 1, the user name and the password, each after its length.
    private var authenticationRequest: [UInt8] {
        let user = Array((credentials?.user ?? "").utf8.prefix(255)), password = Array((credentials?.password ?? "").utf8.prefix(255))
        return [1, UInt8(user.count)] + user + [UInt8(password.count)] + password
    }

    /// CONNECT to the target: an IPv4 or IPv6 address, or a host name.
    private var connectRequest: [UInt8] {
        var request: [UInt8] = [5, 1, 0]
        switch target {
        case .address(let address):
            request += [address.isIPv4 ? 1 : 4] + address.bytes
        case .name(let name):
            let bytes = Array(name.utf8.prefix(255))
            request += [3, UInt8(bytes.count)] + bytes
        }
        return request + [UInt8(truncatingIfNeeded: port >> 8), UInt8(truncatingIfNeeded: port)]
    }
}
