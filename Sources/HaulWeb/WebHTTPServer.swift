import Foundation
import HaulDaemon
import HaulKit
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The dashboard's HTTP(S) listener on SwiftNIO: reads each request, asks ``WebRoutes`` for the answer and writes
/// it, or streams events. Requests on one connection are answered in order.
final class WebHTTPServer: Sendable {
    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    let host: String
    let port: Int
    let url: String
    let access: WebAccess
    private let dashboard: WebDashboard
    private let channel: NIOAsyncChannel<Connection, Never>
    /// The browsers' connections, from accepted to closed.
    private let connections: AcceptedConnections<HTTPServerRequestPart, HTTPServerResponsePart>
    /// Who may connect, and how many may wait for a credential (``WebConnectionGate``).
    private let admission: Admission

    /// The largest request body (a `tasks.add` of many URLs), as on the Unix socket.
    static let maxBody = JSONRPC.maxMessageBytes

    private init(host: String, port: Int, url: String, access: WebAccess, dashboard: WebDashboard, channel: NIOAsyncChannel<Connection, Never>,
                 connections: AcceptedConnections<HTTPServerRequestPart, HTTPServerResponsePart>, admission: Admission) {
        self.connections = connections
        self.admission = admission
        self.host = host
        self.port = port
        self.url = url
        self.access = access
        self.dashboard = dashboard
        self.channel = channel
    }

    /// Binds the listener: the configured port, or (none given) the default one or the next free one.
    static func listen(_ configuration: WebConfiguration, dashboard: WebDashboard) async throws -> WebHTTPServer {
        let tls: NIOSSLContext?
        if let certificate = configuration.certificatePath, let key = configuration.keyPath {
            tls = try await context(certificate: certificate, key: key)
        } else {
            tls = nil
        }
        let bindHost = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
        let ports = configuration.port.map { [$0] } ?? Array(WebListenPolicy.defaultPort..<(WebListenPolicy.defaultPort + 20))
        var lastError: (any Error)?
        let connections = AcceptedConnections<HTTPServerRequestPart, HTTPServerResponsePart>()
        let limits = configuration.connectionLimits ?? WebConnectionGate.Limits(descriptorLimit: DescriptorLimit.soft)
        let admission = Admission(limits: limits)
        let logger = dashboard.logger
        for port in ports {
            do {
                let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .serverChannelOption(.backlog, value: 256)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .bind(host: bindHost, port: port) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            // Past the gate's limits, closed before anything is read: a flood of connections costs
                            // the daemon an accept and a close each, never a descriptor held.
                            guard admission.admit(channel) else {
                                logger.debug("web dashboard: refused a connection (too many waiting for a login)")
                                channel.close(promise: nil)
                                throw ChannelError.ioOnClosedChannel
                            }
                            // A connection that neither sends nor receives for two minutes is closed (an event stream
                            // writes a keepalive every 15 s, so only a stalled one is).
                            try channel.pipeline.syncOperations.addHandler(IdleStateHandler(allTimeout: .seconds(120)))
                            try channel.pipeline.syncOperations.addHandler(CloseWhenIdle())
                            if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                            try channel.pipeline.syncOperations.addHandler(RequestDeadlines(head: limits.headDeadline, body: limits.bodyDeadline))
                            return try connections.admit(channel) { try Connection(wrappingChannelSynchronously: channel) }
                        }
                    }
                let bound = channel.channel.localAddress?.port ?? port
                let urlHost = WebListenPolicy.urlHost(configuration.host, fallback: configuration.allowedHosts.first ?? WebListenPolicy.defaultHost)
                let url = (tls == nil ? "http://" : "https://") + urlHost + ":\(bound)/"
                let access = WebAccess(port: bound, secure: tls != nil, extraHosts: configuration.allowedHosts)
                return WebHTTPServer(host: configuration.host, port: bound, url: url, access: access, dashboard: dashboard, channel: channel,
                                     connections: connections, admission: admission)
            } catch {
                lastError = error
            }
        }
        let which = configuration.port.map { "port \($0)" } ?? "ports \(ports.first ?? 0)-\(ports.last ?? 0)"
        let why: String
        switch lastError {
        case let error as IOError where error.errnoCode == EADDRINUSE: why = "in use"
        case let error as IOError where error.errnoCode == EADDRNOTAVAIL: why = "no such address on this machine"
        case let error as IOError where error.errnoCode == EACCES: why = "not allowed"
        case let error?: why = "\(error)"
        case nil: why = "no port"
        }
        throw HaulError(.fileSystem, "the web dashboard could not listen on \(configuration.host) \(which) (\(why)); choose another port")
    }

    /// The TLS context of `--web-cert` and `--web-key`, read like every file a user names (``NamedFileReader``).
    private static func context(certificate: String, key: String) async throws -> NIOSSLContext {
        let certificateBytes = try await NamedFileReader.read(certificate, as: .webCertificate).bytes
        let keyBytes = try await NamedFileReader.read(key, as: .webKey).bytes
        do {
            let chain = try NIOSSLCertificate.fromPEMBytes(certificateBytes).map { NIOSSLCertificateSource.certificate($0) }
            let privateKey = try NIOSSLPrivateKey(bytes: keyBytes, format: .pem)
            let configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(privateKey))
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw HaulError(.usage, "could not use --web-cert \(certificate) and --web-key \(key) (\(error)); give PEM files of a certificate and its key")
        }
    }

    /// Serves connections until ``close()``.
    func run() async {
        do {
            try await connections.serve(channel) { connection, _ in await self.serve(connection) }
        } catch {
            dashboard.logger.debug("the web listener ended: \(error)")
        }
    }

    /// Stops listening and closes every connection (event streams included).
    func close() async {
        try? await channel.channel.close()
        connections.closeOpen()
    }

    // MARK: One connection

    private func serve(_ connection: Connection) async {
        dashboard.state.withLockedValue { $0.connections += 1 }
        defer {
            dashboard.state.withLockedValue { $0.connections -= 1 }
            MemoryReturn.soon()
        }
        let channel = connection.channel
        do {
            try await connection.executeThenClose { inbound, outbound in
                var parts = inbound.makeAsyncIterator()
                // Each turn reads one request; ends when the client closes or a request asks to.
                while let part = try await parts.next() {
                    guard case .head(let head) = part else { continue }
                    let login = WebRoutes.login(of: head, dashboard)
                    if login != nil { admission.trust(channel) }
                    // Refused on its head alone (a foreign Host, no credential where one is needed): its body is never
                    // read, and the connection closes after the answer.
                    if let refusal = WebRoutes.refusal(beforeBodyOf: head, login: login, access, dashboard) {
                        var closing = head
                        closing.headers.replaceOrAdd(name: "Connection", value: "close")
                        try await write(refusal, to: outbound, head: closing)
                        return
                    }
                    // Only a call to the bridge has a body worth keeping; any other is read and dropped.
                    let keepsBody = WebRoutes.takesBody(head)
                    var body = ByteBuffer(), tooLarge = false
                    reading: while let part = try await parts.next() {
                        switch part {
                        case .body(var chunk):
                            guard keepsBody else { continue }
                            if body.readableBytes + chunk.readableBytes > Self.maxBody { tooLarge = true } else { body.writeBuffer(&chunk) }
                        case .end: break reading
                        case .head: return
                        }
                    }
                    let request = WebRequest(head: head, body: tooLarge ? nil : body)
                    let answer: WebAnswer
                    if tooLarge {
                        answer = .text(.payloadTooLarge, "the request is too large")
                    } else {
                        answer = await WebRoutes.answer(request, access, dashboard)
                    }
                    switch answer {
                    case .full(let response):
                        try await write(response, to: outbound, head: head)
                        guard head.isKeepAlive, !tooLarge else { return }
                    case .events(let session, let cursor):
                        try await stream(session, from: cursor, login: login ?? "", to: outbound, head: head)
                        return
                    }
                }
            }
        } catch {
            dashboard.logger.debug("a web connection ended: \(error)")
        }
    }

    private func write(_ response: WebResponse, to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>, head: HTTPRequestHead) async throws {
        try await outbound.write(.head(WebRoutes.responseHead(response, for: head)))
        if head.method != .HEAD, !response.body.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: response.body)))) }
        try await outbound.write(.end(nil))
    }

    /// How long a woken event stream waits for more events before it writes (at most five writes a second).
    static let gatherEvents: Duration = .milliseconds(200)

    /// Streams a session's events as Server-Sent Events until the client goes away or the dashboard stops; a
    /// `: keepalive` comment every 15 s.
    private func stream(_ session: String, from cursor: WebDashboard.Cursor, login: String, to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>,
                        head: HTTPRequestHead) async throws {
        let id: Int, wake: AsyncStream<Void>
        switch dashboard.openStream(session, login: login) {
        case .success(let opened): (id, wake) = opened
        case .failure(let refusal):
            var response = WebResponse.error(.tooManyRequests, refusal.message)
            response.headers.append(("Retry-After", "30"))
            var closing = head
            closing.headers.replaceOrAdd(name: "Connection", value: "close")
            try await write(response, to: outbound, head: closing)
            return
        }
        defer { dashboard.closeStream(id) }
        var headers = WebRoutes.commonHeaders
        headers.replaceOrAdd(name: "Content-Type", value: "text/event-stream")
        headers.replaceOrAdd(name: "X-Accel-Buffering", value: "no")
        try await outbound.write(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers)))
        let keepalive = Task { [dashboard] in
            // Ends when the stream closes (cancelled).
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(15))
                _ = dashboard.state.withLockedValue { $0.streams.wake(id)?.yield() }
            }
        }
        defer { keepalive.cancel() }
        var (text, seen) = dashboard.pending(session, after: cursor)
        try await outbound.write(.body(.byteBuffer(ByteBuffer(string: text.isEmpty ? ": ready\n\n" : text))))
        // Each turn waits to be woken (events, or the keepalive) and ends when the stream is finished. After a wake it
        // lets the events of the next moment gather: 50 running downloads send some 200 events a second, and one
        // write for each cost the daemon more than everything else the page asks of it (bench/web-dashboard.sh).
        for await _ in wake {
            try await Task.sleep(for: Self.gatherEvents)
            (text, seen) = dashboard.pending(session, after: .number(seen))
            try await outbound.write(.body(.byteBuffer(ByteBuffer(string: text.isEmpty ? ": keepalive\n\n" : text))))
        }
    }
}

/// Closes its connection when ``IdleStateHandler`` says it has been idle.
final class CloseWhenIdle: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
