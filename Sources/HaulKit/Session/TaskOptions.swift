/// A task's settings beyond its URL, destination, headers, checksum and segments: the other per-file
/// options of `haul get`. Stored with the task; `nil` or `false` means the session's (or the default) behaviour.
public struct TaskOptions: Codable, Equatable, Sendable {
    /// Replace an existing file at the destination path (only once the new one is complete).
    public var overwrite = false
    /// Continue a partial file at the destination path that Haul did not write, after verifying it.
    public var continuePartial = false
    /// Bytes per second for this task; a session-wide limit, when set, is used instead.
    public var rateLimit: Int64?
    public var maxRetries: Int?
    /// Seconds before the first retry.
    public var retryWait: Double?
    public var minSegmentSize: Int64?
    public var maxConnectionsPerHost: Int?
    public var allowInsecureRedirects = false
    /// The proxy settings the task was added with (`nil`: the session's).
    public var proxies: ProxyChoice?
    /// Trusted CAs, `insecure` and client certificate (`nil`: the session's).
    public var tls: TLSTrust?
    /// Basic authentication for the URL's origin (stored privately with the task; never shown).
    public var credentials: Credentials?
    /// `false`: the finished file keeps the time it was written, not the server's `Last-Modified` (`nil`: the
    /// default, the server's time).
    public var keepsRemoteTime: Bool?
    /// A shell command run after this task finishes or fails (besides the session's
    /// ``SessionConfiguration/completionCommand``), with the task in `HAUL_TASK_*` variables (``CompletionCommand``).
    public var completionCommand: String?

    public init() {}

    /// The settings of `options` that differ from a new `DownloadOptions`.
    public init(_ options: DownloadOptions) {
        let defaults = DownloadOptions(url: options.url, destination: options.destination)
        overwrite = options.overwrite
        continuePartial = options.continuePartial
        rateLimit = options.rateLimit
        if options.retry.maxRetries != defaults.retry.maxRetries { maxRetries = options.retry.maxRetries }
        if options.retry.baseDelay != defaults.retry.baseDelay { retryWait = options.retry.baseDelay.seconds }
        if options.minSegmentSize != defaults.minSegmentSize { minSegmentSize = options.minSegmentSize }
        if options.maxConnectionsPerHost != defaults.maxConnectionsPerHost { maxConnectionsPerHost = options.maxConnectionsPerHost }
        allowInsecureRedirects = options.allowInsecureRedirects
        proxies = options.proxies
        tls = options.tls
        credentials = options.credentials
        if !options.keepsRemoteTime { keepsRemoteTime = false }
    }

    /// Applies these settings to a download's options (after the session's).
    public func apply(to options: inout DownloadOptions) {
        options.overwrite = overwrite
        options.continuePartial = continuePartial
        if let rateLimit { options.rateLimit = rateLimit }
        if let maxRetries { options.retry.maxRetries = maxRetries }
        if let retryWait { options.retry.baseDelay = .milliseconds(Int64(retryWait * 1000)) }
        if let minSegmentSize { options.minSegmentSize = minSegmentSize }
        if let maxConnectionsPerHost { options.maxConnectionsPerHost = maxConnectionsPerHost }
        options.allowInsecureRedirects = allowInsecureRedirects
        if let proxies { options.proxies = proxies }
        if let tls { options.tls = tls }
        if let credentials { options.credentials = credentials }
        if let keepsRemoteTime { options.keepsRemoteTime = keepsRemoteTime }
    }

    /// Checks every value; the message names the offending one.
    public func validate() throws(InputError) {
        if overwrite, continuePartial { throw InputError("use either continuePartial or overwrite, not both") }
        if completionCommand?.isEmpty == true { throw InputError("the completion command cannot be empty") }
        if let rateLimit, rateLimit < 1 { throw InputError("the rate limit must be at least 1 byte per second") }
        if let maxRetries, !(0...1000).contains(maxRetries) { throw InputError("retries must be between 0 and 1000") }
        if let retryWait, !(retryWait.isFinite && retryWait >= 0 && retryWait <= 86_400) {
            throw InputError("the retry wait must be between 0 and 86400 seconds")
        }
        if let minSegmentSize, minSegmentSize < 1 { throw InputError("the minimum segment size must be at least 1 byte") }
        if let maxConnectionsPerHost, !(1...64).contains(maxConnectionsPerHost) {
            throw InputError("connections per host must be between 1 and 64")
        }
        try tls?.validate()
    }
}
