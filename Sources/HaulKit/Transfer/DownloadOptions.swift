import struct Foundation.URL

/// What the transfer engine runs: a ``DownloadSpec`` with its settings resolved over its session's
/// (``init(_:defaults:)``) and, as it runs, the engine's, plus what only a run has (checkpoints, progress events,
/// failing fast, a shared rate limiter).
///
/// A program that drives ``TransferEngine`` itself may also make one directly.
public struct DownloadOptions: Sendable {
    /// Where the file goes: an exact path, or a folder plus the name the server suggests, or standard output.
    public typealias Destination = DownloadSpec.Destination

    /// What to fetch: `http` or `https`, with any `user:password@` used for Basic authentication to its origin.
    public var url: URL
    /// Where the file goes.
    public var destination: Destination
    /// A folder the destination lies in or below, below which no symbolic link is followed
    /// (``DownloadSpec/confinedTo``); `nil`: none.
    public var confinedTo: String?
    /// How the download is made: its spec's ``DownloadSettings`` resolved over its session's (``init(_:defaults:)``),
    /// then over the engine's when it runs. What nobody said is the default each member below names.
    public var settings = DownloadSettings()
    /// The digest the complete file must have; on a mismatch the download fails and nothing is moved to the destination.
    public var checksum: Checksum?
    /// Extra request headers; sent only to the origin of `url`.
    public var headers = HTTPFields()
    /// A limit shared with other downloads; used instead of `rateLimit` when set.
    package var sharedRateLimiter: RateLimiter?
    /// Connections for one file: `nil` chooses (up to 8 for large files, 1 for small ones); 1 never splits.
    public var segments: Int?
    /// The backoff's shape: its longest wait and longest `Retry-After`, and the count and first wait when the
    /// settings do not say them.
    var retryPacing = RetryPolicy()
    /// Before any byte has arrived, a refused connection or an unknown host fails within about a second (two
    /// quick retries) instead of after the whole backoff: right for a person at a terminal (`haul get`), not for
    /// a queue that should wait for a server to come back.
    public var failFastBeforeData = false
    /// Its HTTP/1.1 requests ask the server to close the connection after the response (`Connection: close`)
    /// instead of keeping it for a next request. A session sets it for a download whose host has nothing else
    /// waiting: a list over thousands of hosts then keeps no idle connection to each (every one a descriptor and
    /// memory, for the minute before it would time out), as wget closes its connection when the next URL is for
    /// another host. A `Connection` header of the user's is sent instead. Default `false`.
    public var closesConnection = false
    /// Record durable progress at least this often (whichever comes first).
    public var checkpointBytes: Int64 = 16 << 20
    /// Record durable progress at least this often in time (whichever of this and ``checkpointBytes`` comes first).
    public var checkpointInterval: Duration = .seconds(1)
    /// How often progress events are emitted at most.
    public var progressInterval: Duration = .milliseconds(250)
    /// Where this download's resume records are kept, when not the engine's (a fleet's task: its writes fenced by
    /// the task's lease).
    package var records: (any ResumeRecords)?
    /// In a fleet, whether the node still holds the task: checked before every write to the file and before the
    /// move into place.
    package var leaseGate: LeaseGate?

    /// A download of `url` to `destination` with every other setting at its default.
    public init(url: URL, destination: Destination) {
        self.url = url
        self.destination = destination
    }

    // The settings as the engine reads them, each with its default.

    /// Replace an existing file at the destination path (only once the new one is complete). Default `false`.
    public var overwrite: Bool {
        get { settings.overwrite ?? false }
        set { settings.overwrite = newValue }
    }
    /// Continue a partial file at the destination that Haul did not write, after verifying it. Default `false`.
    public var continuePartial: Bool {
        get { settings.continuePartial ?? false }
        set { settings.continuePartial = newValue }
    }
    /// Basic authentication for the origin of `url` (default: the URL's own `user:password@`); never sent to
    /// another origin. An explicit `Authorization` header wins.
    public var credentials: Credentials? {
        get { settings.credentials }
        set { settings.credentials = newValue }
    }
    /// Which proxy this download goes through; `nil`: the engine's ``TransferEngine/Configuration/proxies``.
    public var proxies: ProxyChoice? {
        get { settings.proxies }
        set { settings.proxies = newValue }
    }
    /// Tunnel plain `http://` through an HTTP proxy with `CONNECT` (curl's `--proxytunnel`). Default `false`.
    public var proxyTunnel: Bool {
        get { settings.proxyTunnel ?? false }
        set { settings.proxyTunnel = newValue }
    }
    /// Connect over IPv4 or IPv6 only (`nil`: either).
    public var ipFamily: IPFamily? {
        get { settings.ipFamily }
        set { settings.ipFamily = newValue }
    }
    /// Cookies sent where their domain, path and secure flag match, to the origin of `url` only.
    public var cookies: [Cookie] {
        get { settings.cookies ?? [] }
        set { settings.cookies = newValue }
    }

    /// Logins for the hosts a redirect may lead to (``DownloadSettings/hostLogins``), by lower-cased host name.
    public var hostLogins: [String: Credentials] {
        get { settings.hostLogins ?? [:] }
        set { settings.hostLogins = newValue.isEmpty ? nil : newValue }
    }

    /// A jar's cookies for requests to another origin than the URL's (``DownloadSettings/jarCookies``).
    public var jarCookies: [Cookie] {
        get { settings.jarCookies ?? [] }
        set { settings.jarCookies = newValue.isEmpty ? nil : newValue }
    }
    /// When the destination exists, fetch it only if the server's copy is newer (wget's `-N`). Default `false`.
    public var timestamping: Bool {
        get { settings.timestamping ?? false }
        set { settings.timestamping = newValue }
    }
    /// Trusted CAs, `insecure`, client certificate; `nil`: the engine's ``TransferEngine/Configuration/tls``.
    public var tls: TLSTrust? {
        get { settings.tls }
        set { settings.tls = newValue }
    }
    /// When and how often to retry after a transient failure: the settings' count (default 5) and first wait
    /// (default 1 s), doubling up to a minute.
    public var retry: RetryPolicy {
        get {
            var retry = retryPacing
            if let count = settings.maxRetries { retry.maxRetries = count }
            if let wait = settings.retryWait { retry.baseDelay = .milliseconds(Int64((wait * 1000).rounded())) }
            return retry
        }
        set {
            retryPacing = newValue
            settings.maxRetries = newValue.maxRetries
            settings.retryWait = newValue.baseDelay.seconds
        }
    }
    /// Bytes per second for this download (all connections together), or `nil` for no limit.
    public var rateLimit: Int64? {
        get { settings.rateLimit }
        set { settings.rateLimit = newValue }
    }
    /// No segment is split below this size. Default 1 MiB.
    public var minSegmentSize: Int64 {
        get { settings.minSegmentSize ?? 1 << 20 }
        set { settings.minSegmentSize = newValue }
    }
    /// At most this many connections to one host. Default 8.
    public var maxConnectionsPerHost: Int {
        get { settings.maxConnectionsPerHost ?? 8 }
        set { settings.maxConnectionsPerHost = newValue }
    }
    /// Follow a redirect from HTTPS to plain HTTP (refused by default).
    public var allowInsecureRedirects: Bool {
        get { settings.allowInsecureRedirects ?? false }
        set { settings.allowInsecureRedirects = newValue }
    }
    /// Leave anything that already has the destination's name as it is, fetching nothing (wget's `-nc`). Default `false`.
    public var noClobber: Bool {
        get { settings.noClobber ?? false }
        set { settings.noClobber = newValue }
    }
    /// Redirects followed at most; `0` follows none. Default 10.
    public var maxRedirects: Int {
        get { settings.maxRedirects ?? RedirectPolicy.defaultMaxRedirects }
        set { settings.maxRedirects = newValue }
    }
    /// The finished file takes the server's `Last-Modified` as its modification time (like `curl -R` and wget);
    /// `false` leaves the time it was written. Default `true`.
    public var keepsRemoteTime: Bool {
        get { settings.keepsRemoteTime ?? true }
        set { settings.keepsRemoteTime = newValue }
    }
}

/// Progress of a download.
public struct DownloadProgress: Equatable, Sendable {
    /// Bytes held so far (all connections together).
    public var bytes: Int64
    /// The file's size, when the server said it.
    public var total: Int64?
    /// Speed over the last few seconds; `nil` until it can be measured.
    public var bytesPerSecond: Double?
    /// Seconds left at that speed; `nil` without a size or a speed.
    public var secondsRemaining: Double?
    /// Each connection's range and progress, for a segmented download.
    public var segments: [Segment]? = nil
    /// Of ``segments``, the ids of those a connection is fetching now (the others wait for one); `nil` when not
    /// known.
    public var fetching: Set<Int>? = nil

    /// Progress with these figures.
    public init(
        bytes: Int64, total: Int64?, bytesPerSecond: Double?, secondsRemaining: Double?, segments: [Segment]? = nil,
        fetching: Set<Int>? = nil
    ) {
        self.bytes = bytes
        self.total = total
        self.bytesPerSecond = bytesPerSecond
        self.secondsRemaining = secondsRemaining
        self.segments = segments
        self.fetching = fetching
    }
}

/// What a finished download produced.
public struct DownloadResult: Equatable, Sendable {
    /// Where the complete file is (`-` for standard output; a device or pipe's own path).
    public var path: String
    /// The file's size.
    public var bytes: Int64
    /// Body bytes received from the network in this run (resumed downloads fetch only the rest).
    public var fetchedBytes: Int64
    /// The verified digest, when a checksum was given.
    public var checksum: Checksum?
    /// The file was already complete; nothing was transferred.
    public var alreadyComplete: Bool
    /// The protocol the file's bytes came over, `HTTP/1.1` or `HTTP/2`; `nil` when nothing was fetched.
    public var httpVersion: String? = nil

    /// With timestamping: the server's copy is not newer than the file, which was left as it was.
    public var notModified = false
    /// With `noClobber` (wget's `-nc`): something already had the destination's name and was left as it was; nothing
    /// was fetched (``bytes`` is its size when it is a regular file, else 0).
    public var keptExisting = false

    /// A result with these figures.
    public init(path: String, bytes: Int64, fetchedBytes: Int64, checksum: Checksum?, alreadyComplete: Bool, notModified: Bool = false) {
        self.path = path
        self.bytes = bytes
        self.fetchedBytes = fetchedBytes
        self.checksum = checksum
        self.alreadyComplete = alreadyComplete
        self.notModified = notModified
    }

    /// With `noClobber`: the name `path` was taken and left as it is (`bytes`: what is there, as
    /// ``POSIX/sizeOfAnyName(_:)`` reads it, 0 when nothing is by now); `fetchedBytes` were received before that was
    /// found and are not kept.
    static func keptExisting(at path: String, bytes: Int64?, fetchedBytes: Int64 = 0) -> DownloadResult {
        var result = DownloadResult(path: path, bytes: bytes ?? 0, fetchedBytes: fetchedBytes, checksum: nil, alreadyComplete: true)
        result.keptExisting = true
        return result
    }
}

/// Events a download reports while it runs.
public enum DownloadEvent: Sendable {
    /// The first usable response arrived: the destination is known and bytes start flowing.
    case started(url: String, path: String, resumedFrom: Int64, total: Int64?)
    /// Bytes arrived; at most once per ``DownloadOptions/progressInterval``.
    case progress(DownloadProgress)
    /// A transient failure; the next attempt starts after `delay` and resumes from the bytes held.
    case retrying(retry: Int, maxRetries: Int, delay: Duration, reason: String)
    /// The bytes held were discarded and the download starts over from byte 0.
    case restarted(reason: String)
    /// The file is fetched over one connection although more were asked for or would have been used.
    case singleConnection(reason: String)
    /// Every connection to `host` is in use by other downloads: this one waits for one (it is not stalled).
    case waitingForConnection(host: String)
    /// The file is complete, verified, fsync'd and at its final path; the last event.
    case finished(DownloadResult)
}
