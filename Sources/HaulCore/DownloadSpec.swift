import struct Foundation.URL

/// The one description of a download: what to fetch, where to put it and how, as a caller asked for it.
///
/// `haul get`, `haul add`, a ``DownloadSpec`` given to a session and a task in a session's store are all this value:
/// the CLI makes it from its flags in one place, a session stores it in one column, a background session sends it
/// to the daemon as one JSON shape (docs/protocol.md), and one function (`DownloadOptions(_:defaults:)` in HaulKit)
/// merges it with the session's defaults into what the transfer engine runs. `nil` and `false` mean "the default".
public struct DownloadSpec: Equatable, Sendable {
    /// Where the file goes: an exact path, or a folder plus the name the server suggests, or standard output.
    ///
    /// A `file` path that is a character device, FIFO or socket (`/dev/null`, a named pipe) is written straight
    /// through like `standardOutput`: no partial file, no rename, no resume, and never replaced or removed.
    public enum Destination: Equatable, Hashable, Sendable {
        /// This exact path; a relative path is taken from the folder the download was asked for in.
        case file(String)
        /// This folder, under the name the server suggests (`Content-Disposition`, else the URL's last segment);
        /// a taken name becomes `name (1).ext`.
        case directory(String)
        /// The bytes go to the process's standard output as they arrive (`-o -`); nothing is kept to resume.
        case standardOutput
    }

    /// What to fetch (`http` or `https`).
    public var url: URL
    /// `nil`: the session's default folder, under the name the server suggests.
    public var destination: Destination?
    /// Extra request headers; sent only to the origin of `url`. A session's default headers fill in the others.
    public var headers = HTTPFields()
    /// The digest the finished file must have; a mismatch discards it.
    public var checksum: Checksum?
    /// Connections for one file: `nil` chooses (up to 8 for large files, 1 for small ones); 1 never splits.
    public var segments: Int?
    /// Replace an existing file at the destination path (only once the new one is complete).
    public var overwrite = false
    /// Continue a partial file at the destination path that Haul did not write, after verifying it.
    public var continuePartial = false
    /// Bytes per second for this download; a session-wide limit, when set, is used instead.
    public var rateLimit: Int64?
    /// Retries after the first attempt (`nil`: the session's, else 5).
    public var maxRetries: Int?
    /// Seconds before the first retry (`nil`: the session's, else 1).
    public var retryWait: Double?
    /// No segment is split below this size (`nil`: 1 MiB).
    public var minSegmentSize: Int64?
    /// At most this many connections to one host (`nil`: 8).
    public var maxConnectionsPerHost: Int?
    /// Follow a redirect from HTTPS to plain HTTP.
    public var allowInsecureRedirects = false
    /// Which proxy this download goes through (`nil`: the session's or the engine's).
    public var proxies: ProxyChoice?
    /// Trusted CAs, `insecure` and client certificate (`nil`: the session's or the engine's).
    public var tls: TLSTrust?
    /// Basic authentication for the URL's origin (default: the URL's own `user:password@`); never sent to another
    /// origin, never shown. An explicit `Authorization` header wins.
    public var credentials: Credentials?
    /// `false`: the finished file keeps the time it was written, not the server's `Last-Modified` (`nil`: the
    /// server's time, like `curl -R` and wget).
    public var keepsRemoteTime: Bool?
    /// Tunnel a plain `http://` request through an HTTP proxy with `CONNECT` (curl's `--proxytunnel`) instead of
    /// sending it in absolute form.
    public var proxyTunnel = false
    /// Connect over IPv4 or IPv6 only (`-4`, `-6`; `nil`: either).
    public var ipFamily: IPFamily?
    /// Cookies from a jar or given as `NAME=VALUE`: each is sent where its domain, path and secure flag match,
    /// and only to the origin of `url` (never after a redirect to another); never shown.
    public var cookies: [Cookie] = []
    /// wget's `-N`: when the destination file exists, ask with `If-Modified-Since` its time and leave it as it is
    /// unless the server's copy is newer (then replace it once the new one is complete).
    public var timestamping = false
    /// A shell command run after this download finishes or fails, with the task in `HAUL_TASK_*` variables (in a
    /// session, besides the session's own command).
    public var completionCommand: String?

    /// A download of `url` to `destination`, every other member at its default.
    public init(url: URL, destination: Destination? = nil) {
        self.url = url
        self.destination = destination
    }

    /// The most connections one file may use (the CLI's `--segments`, the protocol and the page alike).
    public static let segmentRange = 1...64
    /// How many connections to one host a download may ask for (`--max-connections-per-host`, the protocol).
    public static let connectionsPerHostRange = 1...64
    /// How many retries a download may ask for (`--retries`, the protocol).
    public static let retryRange = 0...1000
    /// Seconds before the first retry a download may ask for (`--retry-wait`, the protocol).
    public static let retryWaitRange = 0.0...86_400.0

    /// Checks every value; the message names the offending one.
    public func validate() throws(InputError) {
        switch destination {
        case .file(let path)?: if path.utf8.contains(0) { throw InputError("the destination path has a NUL byte in it") }
        case .directory(let folder)?: if folder.utf8.contains(0) { throw InputError("the destination folder has a NUL byte in it") }
        case .standardOutput?, nil: break
        }
        if overwrite, continuePartial { throw InputError("use either continuePartial or overwrite, not both") }
        if continuePartial {
            guard case .file = destination else { throw InputError("continue needs a file path: the partial file to continue") }
        }
        if let segments, !Self.segmentRange.contains(segments) { throw InputError("segments must be between 1 and 64") }
        if completionCommand?.isEmpty == true { throw InputError("the completion command cannot be empty") }
        if timestamping, continuePartial { throw InputError("use either timestamping or continuePartial, not both") }
        if timestamping {
            guard case .file = destination else { throw InputError("timestamping needs a file path: the file to compare") }
        }
        if let rateLimit, rateLimit < 1 { throw InputError("the rate limit must be at least 1 byte per second") }
        if let maxRetries, !Self.retryRange.contains(maxRetries) {
            throw InputError("retries must be between \(Self.retryRange.lowerBound) and \(Self.retryRange.upperBound)")
        }
        if let retryWait, !Self.retryWaitRange.contains(retryWait) {
            throw InputError("the retry wait must be between 0 and 86400 seconds")
        }
        if let minSegmentSize, minSegmentSize < 1 { throw InputError("the minimum segment size must be at least 1 byte") }
        // Headers checked as `-H` checks them, wherever the spec came from (the protocol, the dashboard, a library):
        // a `Range`, `If-Range` or `Connection` of the user's would go out beside Haul's own.
        for field in headers { _ = try UserInput.header("\(field.name): \(field.value)") }
        if let maxConnectionsPerHost, !Self.connectionsPerHostRange.contains(maxConnectionsPerHost) {
            throw InputError("connections per host must be between 1 and 64")
        }
        try tls?.validate()
    }

    /// This spec with its relative paths (destination, certificate files) made absolute with `absolute`, and no
    /// destination replaced by `defaultDirectory`: how a session fixes a download's place when it is added, since
    /// the folder it runs in (or the daemon's) may differ later.
    public func anchored(defaultDirectory: String, _ absolute: (String) -> String) -> DownloadSpec {
        var anchored = self
        switch destination {
        case .file(let path)?: anchored.destination = .file(absolute(path))
        case .directory(let folder)?: anchored.destination = .directory(absolute(folder))
        case .standardOutput?: break
        case nil: anchored.destination = .directory(absolute(defaultDirectory))
        }
        anchored.tls = tls?.mappingPaths(absolute)
        return anchored
    }
}
