/// Why a download or a request failed, with what a program needs to act on it. The message of an error says the
/// same in words for a person; a front end (the `haul` command line) adds the next step in its own terms (a flag).
///
/// A struct rather than an enum, so that a new reason can be added without breaking a program that uses it: compare
/// with `==` against the static members (`error.reason == .busy`, `error.reason == .httpStatus(404, url: url)`),
/// or read ``httpStatus`` and ``path``. Encoded as JSON the same way wherever it is kept or sent (docs/protocol.md).
public struct FailureReason: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The reasons this build knows; Haul's own modules switch over them (a program compares with `==`).
    package enum Known: Sendable, Equatable, Codable {
        /// A file is already at the destination and no download of this URL holds bytes for it.
        case destinationExists(path: String)
        /// A link, or anything else that is not a regular file, is at the destination: never written through, nor
        /// continued; only `overwrite` replaces it (the link itself, not what it leads to).
        case destinationNotAFile(path: String)
        /// A file appeared at the destination while the download ran and was left as it is; the complete download
        /// is kept at `partialPath` and is put in its place by a run once the other file is gone.
        case appearedWhileDownloading(path: String, partialPath: String)
        /// A file is at the destination, and this URL's unfinished download of it, kept at `partialPath`, is not to
        /// replace it (a run with `--overwrite` that was interrupted, or a file that came since): refused before any
        /// request.
        case unfinishedBesideExisting(path: String, partialPath: String)
        /// A file with bytes is at the name of the download's partial file, and no record of this download knows it
        /// (another download's unfinished file, or a file someone named so): left alone, and the download refused.
        case unknownPartialFile(partialPath: String)
        /// The destination is a folder.
        case destinationIsDirectory(path: String)
        /// The partial file at the destination belongs to another URL's download, which this URL does not continue.
        case partialOfAnotherURL(partialPath: String, url: String)
        /// A file given to continue (or a finished one checked again) does not match the server's.
        case differsFromServer(path: String)
        /// A file given to continue cannot be checked: the server does not answer byte ranges.
        case cannotVerifyWithoutRanges(path: String)
        /// A file given to continue (`length` bytes) is longer than the file on the server (`serverLength`): it is
        /// not a partial copy of it, and was left unchanged.
        case longerThanServerFile(path: String, length: Int64, serverLength: Int64)
        /// The server answered with an error status.
        case httpStatus(Int, url: String)
        /// A request forwarded by an HTTP proxy that was given a user and password was answered 401: the proxy's
        /// refusal of them (tinyproxy answers a wrong password so, not with 407), or the server's own.
        case unauthorizedThroughProxy(url: String, proxy: String)
        /// A redirect led to another origin, whose server answered 401: the user and password given for the URL's
        /// own origin (`givenFor`, as `scheme://host[:port]`) were not sent there, as they never are.
        case unauthorizedAfterRedirect(url: String, givenFor: String)
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
        /// A download confined below a folder (a URL list's `dir=` or `out=`) meets a symbolic link at `path` on the
        /// way to its file; it is not followed, and nothing is written.
        case listedThroughLink(path: String)
        /// A proxy asks for credentials (407, or a SOCKS5 proxy that accepts only a user name and password);
        /// `proxy`: which one (`scheme://host:port`), when known.
        case proxyAuthenticationRequired(proxy: String?)
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
        /// The server redirected more often than the download's limit allows (`limit`: 0 when none is followed).
        case tooManyRedirects(limit: Int)
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
        /// The reader of the stream written (standard output, a FIFO) closed it (`| head`): nothing more can be written.
        case outputClosed
        /// Any other failure: the message says what.
        case other
    }

    /// Which reason this is.
    package let which: Known

    package init(_ which: Known) { self.which = which }

    /// Reads a reason as ``encode(to:)`` writes it.
    public init(from decoder: any Decoder) throws { which = try Known(from: decoder) }

    /// Writes the reason as JSON: `{"httpStatus": {"_0": 404, "url": "…"}}`, `{"busy": {}}`.
    public func encode(to encoder: any Encoder) throws { try which.encode(to: encoder) }

    /// The reason and its details, for a log or a debugger (a person reads the error's message).
    public var description: String { String(describing: which) }

    /// The HTTP status of ``httpStatus(_:url:)``; `nil` for any other reason.
    public var httpStatus: Int? {
        if case .httpStatus(let status, _) = which { return status }
        if case .unauthorizedThroughProxy = which { return 401 }
        if case .unauthorizedAfterRedirect = which { return 401 }
        return nil
    }

    /// The file or folder the reason is about, when it is about one.
    public var path: String? {
        switch which {
        case .destinationExists(let path), .destinationNotAFile(let path), .destinationIsDirectory(let path), .differsFromServer(let path),
             .cannotVerifyWithoutRanges(let path), .replacedWhileDownloading(let path), .untrustedFolder(let path),
             .listedThroughLink(let path), .noSpace(let path), .checksumMismatch(let path, _, _, _):
            return path
        case .partialOfAnotherURL(let partialPath, _), .unknownPartialFile(let partialPath): return partialPath
        case .longerThanServerFile(let path, _, _): return path
        case .appearedWhileDownloading(let path, _), .unfinishedBesideExisting(let path, _): return path
        default: return nil
        }
    }

    /// A file is already at the destination and no download of this URL holds bytes for it.
    public static func destinationExists(path: String) -> FailureReason {
        FailureReason(.destinationExists(path: path))
    }
    /// A link, or anything else that is not a regular file, is at the destination: never written through, nor
    /// continued; only `overwrite` replaces it (the link itself, not what it leads to).
    public static func destinationNotAFile(path: String) -> FailureReason {
        FailureReason(.destinationNotAFile(path: path))
    }
    /// A file appeared at the destination while the download ran and was left as it is; the complete download
    /// is kept at `partialPath` and is put in its place by a run once the other file is gone.
    public static func appearedWhileDownloading(path: String, partialPath: String) -> FailureReason {
        FailureReason(.appearedWhileDownloading(path: path, partialPath: partialPath))
    }
    /// A file is at the destination, and this URL's unfinished download of it, kept at `partialPath`, is not to
    /// replace it: refused before any request.
    public static func unfinishedBesideExisting(path: String, partialPath: String) -> FailureReason {
        FailureReason(.unfinishedBesideExisting(path: path, partialPath: partialPath))
    }
    /// A file with bytes is at the name of the download's partial file, and no record of this download knows it.
    public static func unknownPartialFile(partialPath: String) -> FailureReason {
        FailureReason(.unknownPartialFile(partialPath: partialPath))
    }
    /// The destination is a folder.
    public static func destinationIsDirectory(path: String) -> FailureReason {
        FailureReason(.destinationIsDirectory(path: path))
    }
    /// The partial file at the destination belongs to another URL's download, which this URL does not continue.
    public static func partialOfAnotherURL(partialPath: String, url: String) -> FailureReason {
        FailureReason(.partialOfAnotherURL(partialPath: partialPath, url: url))
    }
    /// A file given to continue (or a finished one checked again) does not match the server's.
    public static func differsFromServer(path: String) -> FailureReason {
        FailureReason(.differsFromServer(path: path))
    }
    /// A file given to continue cannot be checked: the server does not answer byte ranges.
    public static func cannotVerifyWithoutRanges(path: String) -> FailureReason {
        FailureReason(.cannotVerifyWithoutRanges(path: path))
    }
    /// A file given to continue (`length` bytes) is longer than the file on the server (`serverLength`): it is not
    /// a partial copy of it, and was left unchanged.
    public static func longerThanServerFile(path: String, length: Int64, serverLength: Int64) -> FailureReason {
        FailureReason(.longerThanServerFile(path: path, length: length, serverLength: serverLength))
    }
    /// The server answered with an error status.
    public static func httpStatus(_ status: Int, url: String) -> FailureReason {
        FailureReason(.httpStatus(status, url: url))
    }
    /// A request forwarded by an HTTP proxy that was given a user and password was answered 401: the proxy's
    /// refusal of them, or the server's own.
    public static func unauthorizedThroughProxy(url: String, proxy: String) -> FailureReason {
        FailureReason(.unauthorizedThroughProxy(url: url, proxy: proxy))
    }
    /// A redirect led to `url`, of another origin, whose server answered 401: the user and password given for the
    /// URL's own origin (`givenFor`, `scheme://host[:port]`) were not sent there, as they never are.
    public static func unauthorizedAfterRedirect(url: String, givenFor: String) -> FailureReason {
        FailureReason(.unauthorizedAfterRedirect(url: url, givenFor: givenFor))
    }
    /// The bytes do not have the expected checksum (`alreadyAtPath`: a file found complete at the destination,
    /// left there; otherwise the download was discarded).
    public static func checksumMismatch(path: String, expected: String, actual: String, alreadyAtPath: Bool) -> FailureReason {
        FailureReason(.checksumMismatch(path: path, expected: expected, actual: actual, alreadyAtPath: alreadyAtPath))
    }
    /// Another process works on the same download or store.
    public static let busy = FailureReason(.busy)
    /// The partial file was replaced while the download ran (moved away, a link put in its place): nothing was
    /// published.
    public static func replacedWhileDownloading(path: String) -> FailureReason {
        FailureReason(.replacedWhileDownloading(path: path))
    }
    /// The path goes through a symbolic link that another user could have put there; it is not followed.
    public static func untrustedFolder(path: String) -> FailureReason { FailureReason(.untrustedFolder(path: path)) }
    /// A download confined below a folder (a URL list's `dir=` or `out=`) meets a symbolic link at `path` on the
    /// way to its file; it is not followed, and nothing is written.
    public static func listedThroughLink(path: String) -> FailureReason { FailureReason(.listedThroughLink(path: path)) }
    /// A proxy asks for credentials (407, or a SOCKS5 proxy that accepts only a user name and password), the proxy
    /// not being known. Haul names the proxy (``proxyAuthenticationRequired(proxy:)``) wherever it knows it.
    public static let proxyAuthenticationRequired = FailureReason(.proxyAuthenticationRequired(proxy: nil))
    /// The proxy `proxy` (`scheme://host:port`, as ``proxyCredentialsRefused(proxy:)`` names it) asks for credentials:
    /// a 407, or a SOCKS5 proxy that accepts only a user name and password.
    public static func proxyAuthenticationRequired(proxy: String) -> FailureReason {
        FailureReason(.proxyAuthenticationRequired(proxy: proxy))
    }
    /// A proxy refused the credentials given (407 again, or SOCKS5 authentication refused).
    public static func proxyCredentialsRefused(proxy: String) -> FailureReason {
        FailureReason(.proxyCredentialsRefused(proxy: proxy))
    }
    /// A proxy refused to connect to the server by its rules (`status`: its HTTP status, or the SOCKS5 reply code).
    public static func proxyRefused(proxy: String, status: Int) -> FailureReason {
        FailureReason(.proxyRefused(proxy: proxy, status: status))
    }
    /// The TLS certificates or key given could not be loaded.
    public static let unusableTLSFiles = FailureReason(.unusableTLSFiles)
    /// The server's certificate is signed by an issuer this machine does not trust (trust its CA to connect).
    public static func untrustedCertificate(server: String) -> FailureReason {
        FailureReason(.untrustedCertificate(server: server))
    }
    /// A redirect from https to plain http was refused (allowing it is the download's choice).
    public static func insecureRedirect(target: String) -> FailureReason {
        FailureReason(.insecureRedirect(target: target))
    }
    /// The server redirected more often than the download's limit allows (`limit`: 0 when none is followed).
    public static func tooManyRedirects(limit: Int) -> FailureReason { FailureReason(.tooManyRedirects(limit: limit)) }
    /// No daemon is running at the socket and starting one was not allowed.
    public static func daemonNotRunning(socketPath: String) -> FailureReason {
        FailureReason(.daemonNotRunning(socketPath: socketPath))
    }
    /// The daemon's socket path cannot be used (too long, or in a folder of another user).
    public static func unusableSocketPath(_ path: String) -> FailureReason { FailureReason(.unusableSocketPath(path)) }
    /// The server claims a length no file (or no file on the destination's file system) can have.
    public static func impossibleLength(claimed: Int64) -> FailureReason {
        FailureReason(.impossibleLength(claimed: claimed))
    }
    /// Transient failures outlasted the retries allowed; the bytes held are kept for the next run.
    public static func retriesExhausted(retries: Int) -> FailureReason {
        FailureReason(.retriesExhausted(retries: retries))
    }
    /// Transient failures outlasted the retries allowed before any byte arrived (a wrong URL, or no network).
    public static func unreachable(retries: Int) -> FailureReason { FailureReason(.unreachable(retries: retries)) }
    /// The server kept ending its responses at the same place; the bytes held are kept for the next run.
    public static func endsAtSamePlace(retries: Int) -> FailureReason {
        FailureReason(.endsAtSamePlace(retries: retries))
    }
    /// The disk is full (or the quota spent) at `path`; the bytes held are kept for the next run.
    public static func noSpace(path: String) -> FailureReason { FailureReason(.noSpace(path: path)) }
    /// Stopped by the user or the program; the state was saved.
    public static let interrupted = FailureReason(.interrupted)
    /// The reader of the stream written (standard output, a FIFO) closed it (`| head`): nothing more can be written.
    public static let outputClosed = FailureReason(.outputClosed)
    /// Any other failure: the message says what.
    public static let other = FailureReason(.other)
}
