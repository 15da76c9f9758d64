import AsyncHTTPClient
import struct Foundation.URL
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// Downloads files over HTTP(S) so that no interruption loses progress or corrupts a byte.
///
/// Each download streams into a partial file beside its destination, checkpoints durable progress to a
/// resume record under `HAUL_HOME`, resumes with `Range`/`If-Range` by the rules of ``ResumePolicy``,
/// and moves the file into place only once it is complete and verified.
public final class TransferEngine: Sendable {
    /// Settings for every download the engine runs; a download's own options win where it has them.
    public struct Configuration: Sendable {
        /// How long to wait for a connection before the attempt fails (and is retried).
        public var connectTimeout: Duration = .seconds(30)
        /// A transfer with no bytes for this long is treated as failed and retried.
        public var stallTimeout: Duration = .seconds(30)
        /// Connections the client keeps to one host (segmented downloads use up to this many).
        public var maxConnectionsPerHost = 8
        /// The `User-Agent` header sent with every request (a download's own header wins).
        public var userAgent = "haul/\(HaulVersion.string)"
        /// What every download leaves unsaid (the last level of ``DownloadSettings/resolved(over:)``: a download's
        /// over its session's over these); what nobody says is ``DownloadOptions``' default.
        public var downloadSettings = DownloadSettings()
        /// Which proxy each URL goes through (none by default): ``downloadSettings``' `proxies`.
        public var proxies: ProxyChoice {
            get { downloadSettings.proxies ?? ProxyChoice() }
            set { downloadSettings.proxies = newValue }
        }
        /// Which TLS servers are trusted and the client certificate shown (the system's trust store by default):
        /// ``downloadSettings``' `tls`; a download's own ``DownloadOptions/tls`` wins.
        public var tls: TLSTrust {
            get { downloadSettings.tls ?? TLSTrust() }
            set { downloadSettings.tls = newValue }
        }
        /// Receives one debug line per request, response and resume decision.
        public var logger = Logger(label: "haul", factory: { _ in SwiftLogNoOpLogHandler() })
        /// Offer HTTP/2 (by ALPN, to `https` servers) so that the engine's downloads from one host share one
        /// connection as streams, without waiting for a connection of their own: right for many files at once (a
        /// batch, a session, the daemon). A file found large (``TransferEngine/largeFileThreshold``) and the
        /// segments of a split file go over HTTP/1.1 connections of their own, which carry one big transfer faster.
        /// Off by default: one download alone gains nothing from HTTP/2.
        public var multiplexesHTTP2 = false
        /// How many origins (scheme, host, port) one HTTP client serves before the next origin gets a new one: the
        /// client keeps a connection pool for each origin it served, and an HTTP/2 connection idle in each, until it
        /// is shut down, which it is once its requests have ended. Bounds the memory of a list over many hosts; a host
        /// still being fetched opens one connection more each time. 64 is what curl's connection cache holds at
        /// `-Z --parallel-max 16` (four per transfer): over 20,000 HTTPS hosts, 198 MiB at the peak against 307 MiB
        /// with 1,024 (about 115 KB per idle TLS connection).
        package var originsPerClient = 64
        /// Paths a `--dir` download does not take as its file (``SessionConfiguration/isReservedPath``).
        package var isReservedPath: (@Sendable (String) -> Bool)?
        /// The defaults.
        public init() {}
    }

    /// The direct clients: an HTTP/1.1 one; one more per address family a download is limited to (`-4`, `-6`), which
    /// binds its sockets to that family's wildcard address, and one more of each that offers HTTP/2 (below), each
    /// renewed after ``Configuration/originsPerClient`` (64) origins (``DirectClients``). A proxied request does not go
    /// through these: ``ProxyTransport`` sends it on a connection of its own (or as a stream of a pooled HTTP/2
    /// connection through the proxy).
    ///
    /// Over HTTP/1.1 each request in flight has a TCP connection of its own. Over HTTP/2 the segments of a file
    /// would become streams of one connection, which a server that limits each connection (most CDNs) throttles
    /// as one: `--segments 8` gained nothing over HTTPS. And for one large file, AsyncHTTPClient's HTTP/1.1
    /// measured 2.8× faster with a quarter of the CPU (bench/https-segments.sh). So big transfers use the HTTP/1.1 one.
    let clients: DirectClients
    /// Whether the engine offers HTTP/2 (``Configuration/multiplexesHTTP2``): many small files from one host become
    /// streams of one connection, each costing a round trip less than a request waiting for a free connection.
    private let multiplexes: Bool
    /// The hosts (`host:port`, as ``HostConnections`` counts them) whose last connection failed before connecting (the
    /// host refused it, or its name did not resolve), until a download of theirs gets a response; 4,096 at most (a
    /// list over a million dead hosts), an arbitrary one forgotten to make room.
    private let unreachable = NIOLockedValueBox<Set<String>>([])
    /// The origins of downloads whose server reset a stream with `HTTP_1_1_REQUIRED`: later ones do not offer HTTP/2.
    private let originsWantingHTTP1 = NIOLockedValueBox<Set<Origin>>([])

    /// A file at least this long is fetched over HTTP/1.1 even by an engine that offers HTTP/2: one big transfer
    /// runs faster on a connection of its own, and from 8 MiB on it may be split anyway.
    static let largeFileThreshold: Int64 = 8 << 20
    private let isShutDown = NIOLockedValueBox(false)
    private let tlsConfigurations = NIOLockedValueBox<[TLSTrust: TLSConfiguration]>([:])
    /// The TLS contexts of proxied connections.
    let proxyTLSContexts = TLSContextCache()
    /// HTTP/2 connections through proxies' tunnels, shared by the requests that may be streams.
    let proxyTunnels: TunnelPool
    /// The resume records: files under `HAUL_HOME/transfers/`, or a session's store (``SessionRecords``).
    package let store: any ResumeRecords
    let configuration: Configuration
    /// Each host's connections, shared fairly between this engine's downloads.
    let connections: HostConnections
    /// The destination folders the engine's running downloads hold, opened once for all of them.
    let folders = HeldFolders()

    /// An engine keeping its resume records under `home` (`transfers/`), with `configuration` for every download.
    public convenience init(home: HaulHome, configuration: Configuration = Configuration()) {
        self.init(records: TransferRecordStore(home: home), configuration: configuration)
    }

    /// An engine keeping its downloads' resume records in `records` (a session's store).
    package init(records: any ResumeRecords, configuration: Configuration = Configuration()) {
        // The mode finished files get, from the umask as it is now (`haul` read it already, as it started).
        DownloadFileMode.prepare()
        clients = DirectClients(maxOrigins: configuration.originsPerClient) { kind, tls in
            var made = Self.clientConfiguration(configuration, multiplexed: kind.multiplexed)
            if let tls { made.tlsConfiguration = tls }
            // Bound to the family's wildcard address, a socket can only reach addresses of that family: the
            // other family's addresses of a name fail at once, and those of this family are used.
            if let family = kind.family { made.localAddress = family == .v4 ? "0.0.0.0" : "::" }
            return HTTPClient(eventLoopGroupProvider: .singleton, configuration: made)
        }
        multiplexes = configuration.multiplexesHTTP2
        store = records
        self.configuration = configuration
        connections = HostConnections(limit: configuration.maxConnectionsPerHost)
        proxyTunnels = TunnelPool(maxConnectionsPerKey: configuration.maxConnectionsPerHost)
    }

    /// Whether requests for `url` may go as HTTP/2 streams: the engine offers HTTP/2, and the URL is `https`
    /// (HTTP/2 is chosen by ALPN in the TLS handshake; Haul does not speak cleartext HTTP/2). Through a proxy's
    /// tunnel (`CONNECT`, SOCKS5) such a request offers HTTP/2 too, and shares pooled connections (``TunnelPool``).
    func mayMultiplex(_ url: URL) -> Bool {
        guard multiplexes, url.scheme?.lowercased() == "https" else { return false }
        guard let origin = Origin(url) else { return true }
        return !originsWantingHTTP1.withLockedValue { $0.contains(origin) }
    }

    /// A download could not connect to `host`: the host refused the connection, or its name did not resolve.
    func noteUnreachable(_ host: String) {
        unreachable.withLockedValue { $0.insert(host, keepingAtMost: hostsRemembered) }
    }

    /// A download got a response from `host`.
    func noteReachable(_ host: String) {
        unreachable.withLockedValue { _ = $0.remove(host) }
    }

    /// The hosts that could not be reached at the last try: a session starts their downloads after those of other
    /// hosts meanwhile (``WaitingQueue/next(slots:runningPerHost:maxPerHost:unreachable:)``).
    package var unreachableHosts: Set<String> {
        unreachable.withLockedValue { $0 }
    }

    /// A download of `url` was asked to use HTTP/1.1 (`HTTP_1_1_REQUIRED`): the engine's later downloads of its origin
    /// go over HTTP/1.1 from their first request instead of each being refused once.
    func noteWantsHTTP1(_ url: URL) {
        guard let origin = Origin(url) else { return }
        originsWantingHTTP1.withLockedValue { _ = $0.insert(origin) }
    }

    /// How a request for `url` travels: through the proxy chosen for it (by `proxies`, else the engine's), else
    /// direct. A malformed proxy setting is an error, never a reason to connect directly.
    func route(for url: URL, proxies: ProxyChoice?, tunnel: Bool) throws(HaulError) -> ProxyRoute {
        do {
            return ProxyRoute(url: url, proxy: try (proxies ?? configuration.proxies).proxy(for: url), tunnel: tunnel)
        } catch {
            throw HaulError(.usage, error.message)
        }
    }

    /// Whether ``directClient(for:family:multiplexed:trust:tls:)`` gives a client that offers HTTP/2 by ALPN.
    func offersHTTP2(multiplexed: Bool) -> Bool { multiplexed && multiplexes }

    /// A client for a direct request to `url`, limited to `family` (`nil`: either); `multiplexed` for one that offers
    /// HTTP/2; trusting what `tls` (made from `trust`) says, or the system's CAs when it is `nil`. Give it back with
    /// `clients.release(_:)` when the request ends.
    func directClient(
        for url: URL, family: IPFamily?, multiplexed: Bool = false, trust: TLSTrust? = nil, tls: TLSConfiguration? = nil
    ) -> DirectClients.Lease {
        let kind = DirectClients.Kind(family: family, multiplexed: offersHTTP2(multiplexed: multiplexed), trust: tls == nil ? nil : trust)
        return clients.lease(kind, origin: Origin(url), tls: tls)
    }

    /// The TLS configuration of `trust` (`nil`: the engine's), or `nil` for the client's default (the system's
    /// trust store). Files are read once per engine, on a blocking-I/O thread: a slow or hostile file never holds
    /// the concurrency threads, and a cancelled download stops waiting for it.
    func tlsConfiguration(for trust: TLSTrust?) async throws -> TLSConfiguration? {
        let trust = trust ?? configuration.tls
        if trust.isDefault { return nil }
        if let known = tlsConfigurations.withLockedValue({ $0[trust] }) { return known }
        let made = try await BlockingIO.runInterruptibly { try trust.makeConfiguration() }
        tlsConfigurations.withLockedValue { $0[trust] = made }
        return made
    }

    private static func clientConfiguration(_ configuration: Configuration, multiplexed: Bool = false) -> HTTPClient.Configuration {
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.redirectConfiguration = .disallow
        clientConfiguration.decompression = .disabled
        // Haul's own RetryPolicy retries failed connections with backoff and reports each retry.
        clientConfiguration.connectionPool.retryConnectionEstablishment = false
        // The per-host limit is kept by HostConnections, where a download waiting for a connection is seen; the pool
        // has room beyond it for connections still closing, so that no request queues in it unseen.
        clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 2 * max(1, configuration.maxConnectionsPerHost)
        clientConfiguration.connectionPool.idleTimeout = idleConnectionTimeout
        clientConfiguration.timeout = .init(
            connect: .milliseconds(Int64(configuration.connectTimeout.seconds * 1000)),
            read: .milliseconds(Int64(configuration.stallTimeout.seconds * 1000))
        )
        clientConfiguration.httpVersion = multiplexed ? .automatic : .http1Only
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.shutdownTimeout = tlsShutdownTimeout
        clientConfiguration.tlsConfiguration = tls
        return clientConfiguration
    }

    /// How long a keep-alive connection may sit idle before it is closed (AsyncHTTPClient's default is 60 s). Below
    /// Apache's own default (`KeepAliveTimeout 5`, the shortest in common use), so that a request is never sent on a
    /// connection its server is closing at that moment. It also bounds how long a retired client's pools stay in
    /// memory: AsyncHTTPClient's idle timers hold them until they fire, and over 20,000 HTTPS hosts the peak was
    /// 198 MiB with 60 s, 121 MiB with 5 s.
    static let idleConnectionTimeout: TimeAmount = .seconds(4)

    /// How long closing a TLS connection waits for the server's close_notify (NIOSSL's default is 5 s). A
    /// connection is closed with a response still streaming when a segment's range ends inside the open-ended
    /// answer to the range probe; the server, blocked on a full window, never answers, and `haul get` would
    /// wait 5 s at exit for nothing: the bytes needed are all in.
    static let tlsShutdownTimeout: TimeAmount = .milliseconds(250)

    /// Closes connections; call once when done with the engine.
    public func shutdown() async throws {
        proxyTunnels.shutdown()
        for client in clients.all { try? await client.shutdown() }
        isShutDown.withLockedValue { $0 = true }
    }

    /// An engine dropped without ``shutdown()`` (a session nobody closed) still releases its connections, instead
    /// of leaking them (and tripping AsyncHTTPClient's debug assertion).
    deinit {
        guard !isShutDown.withLockedValue({ $0 }) else { return }
        proxyTunnels.shutdown()
        for client in clients.all { client.shutdown { _ in } }
    }

    /// Downloads (or resumes) one file. Throws ``HaulError``; on every failure the state needed to resume is kept.
    public func download(
        _ options: DownloadOptions,
        events: @escaping @Sendable (DownloadEvent) -> Void = { _ in }
    ) async throws -> DownloadResult {
        var options = options
        options.settings = options.settings.resolved(over: configuration.downloadSettings)
        switch options.destination {
        case .file(let path), .directory(let path):
            // A C path ends at its first NUL: the bytes would go to the file named by the part before it.
            if path.utf8.contains(0) { throw HaulError(.usage, "the destination \(PathText.shown(path)) has a NUL byte in it") }
        case .standardOutput:
            break
        }
        // A download confined below a folder (a URL list's dir= and out=) looks at its file's name only in the folder
        // reached below it without following a link (one on the way fails it here); nothing is there yet when the
        // folder is not. The download itself opens that folder the same way (DownloadJob.prepare); this one stays open
        // until the download ends, for -nc's look at the name should another download take it meanwhile.
        var confined: OpenDirectory?
        if let root = options.confinedTo, case .file(let path) = options.destination {
            confined = try OpenDirectory.openIfPresent(POSIX.directoryOf(path), create: false, below: root)
        }
        defer { confined?.close() }
        /// What has the file's name: its size when a regular file, else 0; `nil` when the name is free.
        func sizeOfAnyName(_ path: String) -> Int64? {
            guard options.confinedTo != nil else { return POSIX.sizeOfAnyName(path) }
            return confined?.status(POSIX.nameOf(path)).map { $0.isRegular ? $0.size : 0 }
        }
        if options.noClobber, case .file(let path) = options.destination, let size = sizeOfAnyName(path) {
            // wget's -nc: a name that is taken, by anything, is left alone (never followed if it is a link).
            let result = DownloadResult.keptExisting(at: path, bytes: size)
            events(.finished(result))
            return result
        }
        if StreamDownload.isStreamTarget(options.destination, in: confined) {
            return try await StreamDownload(engine: self, options: options, in: confined, events: events).run()
        }
        let job = DownloadJob(engine: self, options: options, events: events)
        do {
            return try await job.run()
        } catch let error as HaulError where options.noClobber && error.kind == .busy {
            // wget's -nc: another download (two URLs of a list that name the same file) is writing the name; it is
            // taken, and this one fetches nothing, as wget -nc's second URL finds the first's file there.
            guard case .file(let path) = options.destination else { throw error }
            let result = DownloadResult.keptExisting(at: path, bytes: sizeOfAnyName(path))
            events(.finished(result))
            return result
        }
    }
}

package enum HaulVersion {
    public static let string = "0.1.0"
}

extension TransferEngine {
    /// The final path of a finished or started download, if known.
    public func knownPath(_ options: DownloadOptions) -> String? {
        guard let path = destinationPath(options),
              let record = try? store.load(TransferRecord.key(destinationPath: path)),
              record.url == options.url.absoluteString else { return nil }
        return record.destinationPath
    }

    /// The destination path of `options`: the `-o` path, or the name a `--dir` download chose earlier.
    func destinationPath(_ options: DownloadOptions) -> String? {
        switch options.destination {
        case .file(let path): return path
        case .directory(let directory): return store.chosenDestination(url: options.url, directory: directory)
        case .standardOutput: return nil
        }
    }
}
