/// Why a download or a request failed, with what a program needs to act on it. The message of an error says the
/// same in words for a person; a front end (the `haul` command line) adds the next step in its own terms (a flag).
public enum FailureReason: Sendable, Equatable, Codable {
    /// A file is already at the destination and no download of this URL holds bytes for it.
    case destinationExists(path: String)
    /// The destination is a folder.
    case destinationIsDirectory(path: String)
    /// The partial file at the destination belongs to another URL's download, which this URL does not continue.
    case partialOfAnotherURL(partialPath: String, url: String)
    /// A file given to continue (or a finished one checked again) does not match the server's.
    case differsFromServer(path: String)
    /// A file given to continue cannot be checked: the server does not answer byte ranges.
    case cannotVerifyWithoutRanges(path: String)
    /// The server answered with an error status.
    case httpStatus(Int, url: String)
    /// The bytes do not have the expected checksum (`alreadyAtPath`: a file found complete at the destination,
    /// left there; otherwise the download was discarded).
    case checksumMismatch(path: String, expected: String, actual: String, alreadyAtPath: Bool)
    /// Another process works on the same download or store.
    case busy
    /// The partial file was replaced while the download ran (moved away, a link put in its place): nothing was
    /// published.
    case replacedWhileDownloading(path: String)
    /// The path goes through a symbolic link that another user could have put there; it is not followed.
    case untrustedFolder(path: String)
    /// A proxy asks for credentials (407, or a SOCKS5 proxy that accepts only a user name and password).
    case proxyAuthenticationRequired
    /// A proxy refused the credentials given (407 again, or SOCKS5 authentication refused).
    case proxyCredentialsRefused(proxy: String)
    /// A proxy refused to connect to the server by its rules (`status`: its HTTP status, or the SOCKS5 reply code).
    case proxyRefused(proxy: String, status: Int)
    /// The TLS certificates or key given could not be loaded.
    case unusableTLSFiles
    /// The server's certificate is signed by an issuer this machine does not trust (trust its CA to connect).
    case untrustedCertificate(server: String)
    /// A redirect from https to plain http was refused (allowing it is the download's choice).
    case insecureRedirect(target: String)
    /// No daemon is running at the socket and starting one was not allowed.
    case daemonNotRunning(socketPath: String)
    /// The daemon's socket path cannot be used (too long, or in a folder of another user).
    case unusableSocketPath(String)
    /// The server claims a length no file (or no file on the destination's file system) can have.
    case impossibleLength(claimed: Int64)
    /// Transient failures outlasted the retries allowed; the bytes held are kept for the next run.
    case retriesExhausted(retries: Int)
    /// Transient failures outlasted the retries allowed before any byte arrived (a wrong URL, or no network).
    case unreachable(retries: Int)
    /// The server kept ending its responses at the same place; the bytes held are kept for the next run.
    case endsAtSamePlace(retries: Int)
    /// The disk is full (or the quota spent) at `path`; the bytes held are kept for the next run.
    case noSpace(path: String)
    /// Stopped by the user or the program; the state was saved.
    case interrupted
    /// Any other failure: the message says what.
    case other
}
