/// How one download is made — retries, rate, proxies, TLS, connections, naming and the rest — as one value, held at
/// three levels: a download's own (``DownloadSpec/settings``), its session's (`SessionConfiguration.downloadSettings`)
/// and the engine's (`TransferEngine.Configuration.downloadSettings`). Every member is optional: `nil` is "not said
/// here", distinct from any value, and ``resolved(over:)`` is the one merge (spec over session over engine); what
/// nobody said is the engine's built-in default (in `DownloadOptions`).
///
/// Its `Codable` is synthesized and is the protocol's `"options"` object (docs/protocol.md): the key names below,
/// members not said left out. ``validate()`` is the one check of its values, wherever they came from.
///
/// A new per-download option is a member here (with its case in `CodingKeys`, its merge line and its check), a flag
/// in the CLI and its use in the engine; `DownloadSettingsTests` fails until the member is said in its full sample,
/// then until it is merged and coded.
public struct DownloadSettings: Codable, Equatable, Sendable {
    /// Replace an existing file at the destination path (only once the new one is complete). Default `false`.
    public var overwrite: Bool?
    /// Continue a partial file at the destination path that Haul did not write, after verifying it. Default `false`.
    public var continuePartial: Bool?
    /// Bytes per second for this download; a session-wide limit, when set, is used instead. Default: none.
    public var rateLimit: Int64?
    /// Retries after the first attempt. Default 5.
    public var maxRetries: Int?
    /// Seconds before the first retry (it doubles with each retry after that). Default 1.
    public var retryWait: Double?
    /// No segment is split below this size. Default 1 MiB.
    public var minSegmentSize: Int64?
    /// At most this many connections to one host. Default 8.
    public var maxConnectionsPerHost: Int?
    /// Follow a redirect from HTTPS to plain HTTP. Default `false`.
    public var allowInsecureRedirects: Bool?
    /// Redirects followed at most, `0` for none (curl's `--max-redirs`, wget's `--max-redirect`). Default 10.
    public var maxRedirects: Int?
    /// `false`: the finished file keeps the time it was written, not the server's `Last-Modified`. Default `true`
    /// (the server's time, like `curl -R` and wget).
    public var keepsRemoteTime: Bool?
    /// A shell command run after this download finishes or fails, with the task in `HAUL_TASK_*` variables (in a
    /// session, besides the session's own command). Default: none.
    public var completionCommand: String?
    /// Which proxy the download goes through. Default: none (direct).
    public var proxies: ProxyChoice?
    /// Trusted CAs, `insecure` and client certificate. Default: the system's trust store.
    public var tls: TLSTrust?
    /// Basic authentication for the URL's origin (default: the URL's own `user:password@`); never sent to another
    /// origin, never shown. An explicit `Authorization` header wins.
    public var credentials: Credentials?
    /// Tunnel a plain `http://` request through an HTTP proxy with `CONNECT` (curl's `--proxytunnel`) instead of
    /// sending it in absolute form. Default `false`.
    public var proxyTunnel: Bool?
    /// Connect over IPv4 or IPv6 only (`-4`, `-6`). Default: either.
    public var ipFamily: IPFamily?
    /// wget's `-N`: when the destination file exists, ask with `If-Modified-Since` its time and leave it as it is
    /// unless the server's copy is newer (then replace it once the new one is complete). Default `false`.
    public var timestamping: Bool?
    /// wget's `-nc`: when anything already has the destination's name (a file, a folder, a link, a device), it is
    /// left as it is and nothing is fetched; the download counts as done (``DownloadResult`` says `keptExisting`).
    /// Needs a file path. Default `false`.
    public var noClobber: Bool?
    /// Headers Haul would send itself that this download leaves out (curl's `-H 'Name:'`), by their lower-cased
    /// names: `user-agent`, `accept-encoding`, a session's default header, the `Cookie` made of ``cookies`` and
    /// the `Authorization` made of ``credentials``. Headers of the spec's own are sent as given. Default: none.
    public var omittedHeaders: [String]?
    /// Cookies from a jar or given as `NAME=VALUE`: each is sent where its domain, path and secure flag match,
    /// and only to the origin of the URL (never after a redirect to another); never shown. Default: none.
    public var cookies: [Cookie]?
    /// Logins for the hosts a redirect may lead to, by lower-cased host name (a netrc file's `machine` entries): a
    /// request to another origin than the URL's carries its own host's login, as curl `--netrc -L`, wget and aria2c
    /// send it; never the URL's ``credentials``. Never shown. Default: none.
    public var hostLogins: [String: Credentials]?
    /// A jar's cookies (each names its domain) for the requests to another origin than the URL's, after a redirect:
    /// each is sent where its domain, path and secure flag match, as curl `-L -b FILE`, wget and aria2c send them
    /// (``cookies`` go to the URL's origin only). Never shown. Default: none.
    public var jarCookies: [Cookie]?

    /// The protocol's names of the members (docs/protocol.md, "Add options").
    private enum CodingKeys: String, CodingKey {
        case overwrite, continuePartial = "continue", rateLimit, maxRetries = "retries", retryWait, minSegmentSize
        case maxConnectionsPerHost, allowInsecureRedirects, maxRedirects, keepsRemoteTime = "remoteTime", completionCommand
        case proxies = "proxy", tls, credentials, proxyTunnel, ipFamily, timestamping, noClobber, omittedHeaders = "omitHeaders", cookies
        case hostLogins, jarCookies
    }

    /// Settings that say nothing: every member comes from the level below.
    public init() {}

    /// Whether nothing is said here.
    public var isEmpty: Bool { self == DownloadSettings() }

    /// These settings, with what they leave unsaid taken from `base`: a download's over its session's, the
    /// result over the engine's. The one merge of a download's settings.
    public func resolved(over base: DownloadSettings) -> DownloadSettings {
        var merged = self
        merged.overwrite = overwrite ?? base.overwrite
        merged.continuePartial = continuePartial ?? base.continuePartial
        merged.rateLimit = rateLimit ?? base.rateLimit
        merged.maxRetries = maxRetries ?? base.maxRetries
        merged.retryWait = retryWait ?? base.retryWait
        merged.minSegmentSize = minSegmentSize ?? base.minSegmentSize
        merged.maxConnectionsPerHost = maxConnectionsPerHost ?? base.maxConnectionsPerHost
        merged.allowInsecureRedirects = allowInsecureRedirects ?? base.allowInsecureRedirects
        merged.maxRedirects = maxRedirects ?? base.maxRedirects
        merged.keepsRemoteTime = keepsRemoteTime ?? base.keepsRemoteTime
        merged.completionCommand = completionCommand ?? base.completionCommand
        merged.proxies = proxies ?? base.proxies
        merged.tls = tls ?? base.tls
        merged.credentials = credentials ?? base.credentials
        merged.proxyTunnel = proxyTunnel ?? base.proxyTunnel
        merged.ipFamily = ipFamily ?? base.ipFamily
        merged.timestamping = timestamping ?? base.timestamping
        merged.noClobber = noClobber ?? base.noClobber
        merged.omittedHeaders = omittedHeaders ?? base.omittedHeaders
        merged.cookies = cookies ?? base.cookies
        merged.hostLogins = hostLogins ?? base.hostLogins
        merged.jarCookies = jarCookies ?? base.jarCookies
        return merged
    }

    /// How many connections to one host a download may ask for (`--max-connections-per-host`, the protocol).
    public static let connectionsPerHostRange = 1...64
    /// How many retries a download may ask for (`--retries`, the protocol).
    public static let retryRange = 0...1000
    /// Seconds before the first retry a download may ask for (`--retry-wait`, the protocol).
    public static let retryWaitRange = 0.0...86_400.0
    /// How many redirects a download may be allowed to follow (`--max-redirs`, the protocol).
    public static let redirectRange = 0...1000

    /// Checks every value said, wherever it came from (flags, the protocol, a session's configuration, a library);
    /// the message names the offending one. What depends on the destination is ``DownloadSpec/validate()``'s.
    public func validate() throws(InputError) {
        if overwrite == true, continuePartial == true { throw InputError("use either continuePartial or overwrite, not both") }
        if timestamping == true, continuePartial == true { throw InputError("use either timestamping or continuePartial, not both") }
        if noClobber == true {
            if overwrite == true { throw InputError("use either noClobber or overwrite, not both") }
            if continuePartial == true { throw InputError("use either noClobber or continuePartial, not both") }
            if timestamping == true { throw InputError("use either noClobber or timestamping, not both") }
        }
        if completionCommand?.isEmpty == true { throw InputError("the completion command cannot be empty") }
        if let rateLimit, rateLimit < 1 { throw InputError("the rate limit must be at least 1 byte per second") }
        if let maxRetries, !Self.retryRange.contains(maxRetries) {
            throw InputError("retries must be between \(Self.retryRange.lowerBound) and \(Self.retryRange.upperBound)")
        }
        if let retryWait, !Self.retryWaitRange.contains(retryWait) {
            throw InputError("the retry wait must be between 0 and 86400 seconds")
        }
        if let maxRedirects, !Self.redirectRange.contains(maxRedirects) {
            throw InputError("the redirect limit must be between \(Self.redirectRange.lowerBound) and \(Self.redirectRange.upperBound)")
        }
        if let minSegmentSize, minSegmentSize < 1 { throw InputError("the minimum segment size must be at least 1 byte") }
        if let maxConnectionsPerHost, !Self.connectionsPerHostRange.contains(maxConnectionsPerHost) {
            throw InputError("connections per host must be between 1 and 64")
        }
        try tls?.validate()
        for name in omittedHeaders ?? [] {
            let (fields, omitted) = try UserInput.headers([name + ":"])
            guard fields.fields.isEmpty, omitted == [name.lowercased()] else { throw InputError("\"\(name)\" is not a header name to leave out") }
        }
        for cookie in cookies ?? [] where !cookie.maySend {
            throw InputError("\"cookies\" holds a cookie that cannot be sent")
        }
        for cookie in jarCookies ?? [] where !cookie.maySend {
            throw InputError("\"jarCookies\" holds a cookie that cannot be sent")
        }
        for host in (hostLogins ?? [:]).keys where host.isEmpty || host != host.lowercased() || host.contains(where: { $0.isWhitespace || $0 == "/" }) {
            throw InputError("\"hostLogins\" names a host that is not a lower-case host name")
        }
    }
}
