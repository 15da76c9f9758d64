/// Classes of failure; the CLI maps each to its own exit code.
///
/// A struct rather than an enum, so that a class can be added without breaking a program that switches over them:
/// compare with `==` or match the static members (`case .usage:`), with a `default`. A class this build does not know
/// (sent by a newer daemon, or kept in a newer store) is kept by its name, ``rawValue``, rather than lost.
public struct ErrorKind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The classes this build knows; Haul's own modules switch over them.
    package enum Known: String, Sendable, CaseIterable {
        case usage, network, httpStatus, checksum, fileSystem, server, busy, interrupted
    }

    /// The name of the class on the protocol and in the store (`usage`, `httpStatus`…).
    public let rawValue: String

    /// The class named `rawValue`, known to this build or not.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    package init(_ known: Known) {
        self.rawValue = known.rawValue
    }

    /// The class as this build knows it; `nil` for one it does not.
    package var known: Known? { Known(rawValue: rawValue) }

    /// Bad input: URL, option value, header, checksum, conflicting destination.
    public static let usage = ErrorKind(.usage)
    /// Connection, DNS, TLS, timeouts: retries exhausted.
    public static let network = ErrorKind(.network)
    /// The server answered with an error status.
    public static let httpStatus = ErrorKind(.httpStatus)
    /// The download did not match the expected checksum.
    public static let checksum = ErrorKind(.checksum)
    /// A local file could not be written, read or renamed (disk full, permissions).
    public static let fileSystem = ErrorKind(.fileSystem)
    /// The server's answers cannot be used safely (inconsistent ranges, a file that keeps changing,
    /// a partial file that does not match the server's).
    public static let server = ErrorKind(.server)
    /// Another haul process is working on the same download.
    public static let busy = ErrorKind(.busy)
    /// Stopped by the user (Ctrl-C, SIGTERM); the state was saved.
    public static let interrupted = ErrorKind(.interrupted)

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}
