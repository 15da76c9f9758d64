/// Classes of failure; the CLI maps each to its own exit code.
public enum ErrorKind: String, Sendable, Codable {
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
