/// What a download takes from where it runs (its session, or `haul get`) when its ``DownloadSpec`` says nothing.
public struct DownloadDefaults: Sendable {
    /// Where a spec without a destination is saved, under the server's name.
    public var directory = "."
    /// Sent with the request unless the spec has a field of the same name.
    public var headers = HTTPFields()
    /// What each download leaves unsaid (retries, proxies, TLS…); a spec's own ``DownloadSpec/settings`` win.
    public var settings = DownloadSettings()
    /// The backoff's shape (longest wait, longest `Retry-After`), and the count and first wait when neither the
    /// spec nor ``settings`` says them.
    public var retry = RetryPolicy()
    /// A limit shared by all of a session's downloads, used instead of each one's own.
    package var sharedRateLimiter: RateLimiter?
    /// How often progress events are emitted at most.
    public var progressInterval: Duration = .milliseconds(250)
    /// ``DownloadOptions/failFastBeforeData`` for every download.
    public var failFastBeforeData = false

    /// The defaults of a download outside any session: the current folder, no extra headers, 5 retries from 1 s.
    public init() {}
}

extension DownloadOptions {
    /// The engine's options for `spec`: its settings resolved over `defaults`' (``DownloadSettings/resolved(over:)``),
    /// its headers over theirs. The one place where a download's description meets its session's settings.
    public init(_ spec: DownloadSpec, defaults: DownloadDefaults = DownloadDefaults()) {
        self.init(url: spec.url, destination: spec.destination ?? .directory(defaults.directory))
        confinedTo = spec.confinedTo
        settings = spec.settings.resolved(over: defaults.settings)
        // A default header the download leaves out (curl's `-H 'Name:'`) is not sent either.
        let omitted = Set(settings.omittedHeaders ?? [])
        var merged = HTTPFields(defaults.headers.fields.filter { field in
            !omitted.contains(field.name.lowercased()) && !spec.headers.contains { $0.name.lowercased() == field.name.lowercased() }
        })
        for field in spec.headers { merged.append(field.name, field.value) }
        headers = merged
        checksum = spec.checksum
        segments = spec.segments
        retryPacing = defaults.retry
        sharedRateLimiter = defaults.sharedRateLimiter
        progressInterval = defaults.progressInterval
        failFastBeforeData = defaults.failFastBeforeData
    }
}
