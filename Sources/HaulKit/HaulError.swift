/// A failure a person sees: one line saying what happened and what to do, and the class it belongs to.
public struct HaulError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Classes of failure; the CLI maps each to its own exit code.
    public enum Kind: String, Sendable, Codable {
        /// Bad input: URL, option value, header, checksum, conflicting destination.
        case usage
        /// Connection, DNS, TLS, timeouts: retries exhausted.
        case network
        /// The server answered with an error status.
        case httpStatus
        /// The download did not match the expected checksum.
        case checksum
        /// A local file could not be written, read or renamed (disk full, permissions).
        case fileSystem
        /// The server's answers cannot be used safely (inconsistent ranges, a file that keeps changing,
        /// a partial file that does not match the server's).
        case server
        /// Another haul process is working on the same download.
        case busy
        /// Stopped by the user (Ctrl-C, SIGTERM); the state was saved.
        case interrupted
    }

    public var kind: Kind
    public var message: String

    /// `message` is shown as it is, except that any URL's `user:password@` becomes `***`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = Redaction.text(message)
    }

    public var description: String { message }
}
