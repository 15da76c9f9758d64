import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(Network)
import Network
#endif

/// What a transport library's error means for a download, read from the error's type and code — never from its
/// text, which a library may reword in any release (NIO's `ChannelError.ioOnClosedChannel` reads "I/O on closed
/// channel" today). The libraries: AsyncHTTPClient (`HTTPClientError`), NIO (`IOError`, `ChannelError`,
/// `NIOConnectionError`, `SocketAddressError`, `HTTPParserError`), NIOSSL, and on Apple platforms Network.framework
/// through AsyncHTTPClient's `NWPOSIXError`/`NWTLSError`.
enum TransportError: Equatable {
    /// Nothing accepted the connection (`ECONNREFUSED`): most likely a typo in the port, or a server still starting.
    case connectionRefused
    /// The host name could not be resolved.
    case unknownHost
    /// A connection limited to IPv4 or IPv6 (`-4`, `-6`) found no address of that family that accepts it
    /// (`EAFNOSUPPORT`: its socket, bound to the family's wildcard address, cannot reach the other family's).
    case noAddressOfFamily
    /// The peer reset the connection (`ECONNRESET`).
    case connectionReset
    /// The connection closed before the response ended: EOF mid-body, a TLS stream without close_notify, I/O on a
    /// closed channel.
    case closedEarly
    /// Connecting took longer than allowed.
    case connectTimeout
    /// The bytes that came back are not HTTP (a parse failure other than an early end).
    case notHTTP
    /// A TLS library refused the handshake or the certificate: final, retrying cannot change a certificate.
    case tls
    /// This process (`EMFILE`) or the system (`ENFILE`) has as many files and connections open as it may.
    case tooManyOpenFiles
    /// Anything else: said in the library's words (``DownloadJob/words(_:)``), retried as a network failure.
    case other

    /// The meaning of `error`.
    init(_ error: any Error) {
        switch error {
        case let failure as NIOConnectionError:
            // Connections that were tried say more than a DNS answer that failed for one family only.
            let tried = failure.connectionErrors.map { TransportError($0.error) }
            if let worst = TransportError.mostTelling(tried) {
                self = worst
            } else if let dns = failure.dnsAError ?? failure.dnsAAAAError {
                let cause = TransportError(dns)
                self = cause == .other ? .unknownHost : cause
            } else {
                self = .other
            }
        case is SocketAddressError.UnknownHost:
            self = .unknownHost
        case let failure as IOError:
            self = TransportError(errno: failure.errnoCode)
        case let failure as ChannelError:
            switch failure {
            case .ioOnClosedChannel: self = .closedEarly
            case .connectTimeout: self = .connectTimeout
            default: self = .other
            }
        case let failure as HTTPParserError:
            self = failure == .invalidEOFState ? .closedEarly : .notHTTP
        case let failure as HTTPClientError:
            switch failure {
            case .uncleanShutdown: self = .closedEarly
            case .connectTimeout: self = .connectTimeout
            default: self = .other
            }
        case let failure as NIOSSLError:
            self = failure == .uncleanShutdown || failure == .readInInvalidTLSState ? .closedEarly : .tls
        case is NIOSSLExtraError, is BoringSSLError, is NIOSSLCloseTimedOutError, is NIOTLSUnwrappingError:
            self = .tls
        default:
            self = TransportError.platform(error) ?? .other
        }
    }

    /// The meaning of a socket call's `errno`.
    init(errno code: CInt) {
        switch code {
        case ECONNREFUSED: self = .connectionRefused
        case ECONNRESET: self = .connectionReset
        case EAFNOSUPPORT: self = .noAddressOfFamily
        case EMFILE, ENFILE: self = .tooManyOpenFiles
        default: self = .other
        }
    }

    /// The one cause that explains several failed connections (one per address of a host): a family mismatch says
    /// why every other address was never tried, then a refusal, then a reset; `nil` when none is known.
    static func mostTelling(_ causes: [TransportError]) -> TransportError? {
        for cause in [TransportError.tooManyOpenFiles, .noAddressOfFamily, .connectionRefused, .connectionReset, .connectTimeout, .closedEarly, .unknownHost]
        where causes.contains(cause) {
            return cause
        }
        return nil
    }

    /// No connection was made at all: most likely a typo (a port or host name), worth saying at once
    /// (``DownloadMachine/Configuration/failFastBeforeData``).
    var isBeforeConnecting: Bool {
        self == .connectionRefused || self == .unknownHost || self == .noAddressOfFamily
    }

    /// The cause in words, or `nil` for ``other`` (said in the library's words).
    var words: String? {
        switch self {
        case .connectionRefused: return "connection refused"
        case .unknownHost: return "the host name could not be resolved"
        case .noAddressOfFamily: return "the host has no address of the family asked for (-4 or -6) that accepts connections"
        case .connectionReset: return "connection reset by peer"
        case .closedEarly: return "the connection closed before the transfer completed"
        case .connectTimeout: return "timed out"
        case .tooManyOpenFiles: return "too many files and connections open"
        case .notHTTP, .tls, .other: return nil
        }
    }

    /// Network.framework's errors, as AsyncHTTPClient passes them on (Apple platforms with NIO Transport Services).
    private static func platform(_ error: any Error) -> TransportError? {
        #if canImport(Network)
        if let failure = error as? HTTPClient.NWPOSIXError { return TransportError(errno: failure.errorCode.rawValue) }
        if error is HTTPClient.NWTLSError { return .tls }
        if #available(macOS 10.14, iOS 12.0, tvOS 12.0, watchOS 6.0, *), let failure = error as? NWError {
            switch failure {
            case .posix(let code): return TransportError(errno: code.rawValue)
            case .dns: return .unknownHost
            case .tls: return .tls
            @unknown default: return nil
            }
        }
        #endif
        return nil
    }
}
