/// What a download takes from where it runs (its session, or `haul get`) when its ``DownloadSpec`` says nothing.
public struct DownloadDefaults: Sendable {
    /// Where a spec without a destination is saved, under the server's name.
    public var directory = "."
    /// Sent with the request unless the spec has a field of the same name.
    public var headers = HTTPFields()
    /// Retries; a spec's ``DownloadSpec/maxRetries`` and ``DownloadSpec/retryWait`` win.
    public var retry = RetryPolicy()
    /// A limit shared by all of a session's downloads, used instead of each one's own.
    package var sharedRateLimiter: RateLimiter?
    /// How often progress events are emitted at most.
    public var progressInterval: Duration = .milliseconds(250)

    /// The defaults of a download outside any session: the current folder, no extra headers, 5 retries from 1 s.
    public init() {}
}

extension DownloadOptions {
    /// The engine's options for `spec`: what the spec says, else what `defaults` say, else the engine's defaults.
    /// The one place where a download's description meets its session's settings.
    public init(_ spec: DownloadSpec, defaults: DownloadDefaults = DownloadDefaults()) {
        self.init(url: spec.url, destination: spec.destination ?? .directory(defaults.directory))
        var merged = HTTPFields(defaults.headers.fields.filter { field in
            !spec.headers.contains { $0.name.lowercased() == field.name.lowercased() }
        })
        for field in spec.headers { merged.append(field.name, field.value) }
        headers = merged
        checksum = spec.checksum
        segments = spec.segments
        overwrite = spec.overwrite
        continuePartial = spec.continuePartial
        rateLimit = spec.rateLimit
        sharedRateLimiter = defaults.sharedRateLimiter
        retry = defaults.retry
        if let maxRetries = spec.maxRetries { retry.maxRetries = maxRetries }
        if let retryWait = spec.retryWait { retry.baseDelay = .milliseconds(Int64(retryWait * 1000)) }
        if let minSegmentSize = spec.minSegmentSize { self.minSegmentSize = minSegmentSize }
        if let maxConnectionsPerHost = spec.maxConnectionsPerHost { self.maxConnectionsPerHost = maxConnectionsPerHost }
        allowInsecureRedirects = spec.allowInsecureRedirects
        proxies = spec.proxies
        proxyTunnel = spec.proxyTunnel
        ipFamily = spec.ipFamily
        cookies = spec.cookies
        timestamping = spec.timestamping
        tls = spec.tls
        credentials = spec.credentials
        keepsRemoteTime = spec.keepsRemoteTime ?? true
        progressInterval = defaults.progressInterval
    }
}
