import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// An HTTP/2 connection to a server through a proxy's tunnel (the server chose `h2` by ALPN inside it): each request
/// is a stream of it, sent and read by a ``ProxiedExchange`` as over HTTP/1.1 (the stream's frames are translated to
/// HTTP/1 parts). Ending a request (its end, an error, the consumer stopping or being cancelled) resets or closes its
/// stream only; the connection stays for the next ones, in a ``TunnelPool``.
///
/// What the server allows is learnt from its frames: `SETTINGS_MAX_CONCURRENT_STREAMS`, and a `GOAWAY`, after which
/// no new stream is opened on it (the streams under way finish).
final class TunnelledHTTP2Connection: Sendable {
    /// Streams at once when the server's SETTINGS set no limit (RFC 9113 §6.5.2: unlimited, at least 100 advised).
    static let assumedMaxStreams = 100
    /// Each stream's receive window: how far the server may send ahead of a consumer that reads slowly (a rate limit).
    static let streamWindow = 1 << 20

    let channel: any Channel
    private let multiplexer: NIOLoopBound<HTTP2StreamMultiplexer>

    private struct State {
        var maxStreams = TunnelledHTTP2Connection.assumedMaxStreams
        var goingAway = false
    }
    private let state = NIOLockedValueBox(State())

    private init(channel: any Channel, multiplexer: NIOLoopBound<HTTP2StreamMultiplexer>) {
        self.channel = channel
        self.multiplexer = multiplexer
    }

    /// Streams the server allows at once (its SETTINGS_MAX_CONCURRENT_STREAMS, once known).
    var maxStreams: Int { state.withLockedValue { $0.maxStreams } }

    /// Whether the server sent GOAWAY, or the connection closed: no new stream may start on it.
    var isGoingAway: Bool { state.withLockedValue { $0.goingAway } || !channel.isActive }

    /// Turns `channel` (TLS done, `h2` chosen) into an HTTP/2 connection, returned once the server's first SETTINGS
    /// arrived (within `timeout`): its stream limit is known before any stream is counted against it, as
    /// AsyncHTTPClient does. `changed` is called (on the event loop) when the limit changes or GOAWAY comes.
    static func start(
        on channel: any Channel, timeout: TimeAmount, changed: @escaping @Sendable (TunnelledHTTP2Connection) -> Void
    ) async throws -> TunnelledHTTP2Connection {
        let settingsReceived = channel.eventLoop.makePromise(of: Void.self)
        let connection = try await channel.eventLoop.submit { () throws -> TunnelledHTTP2Connection in
            let sync = channel.pipeline.syncOperations
            var settings = nioDefaultSettings
            settings.append(HTTP2Setting(parameter: .initialWindowSize, value: streamWindow))
            // Haul never accepts a push.
            settings.append(HTTP2Setting(parameter: .enablePush, value: 0))
            let multiplexer = HTTP2StreamMultiplexer(
                mode: .client, channel: channel, targetWindowSize: streamWindow,
                inboundStreamInitializer: { stream in stream.close() })
            let connection = TunnelledHTTP2Connection(channel: channel, multiplexer: NIOLoopBound(multiplexer, eventLoop: channel.eventLoop))
            try sync.addHandler(NIOHTTP2Handler(mode: .client, initialSettings: settings))
            try sync.addHandler(HTTP2ConnectionWatcher(connection: connection, settingsReceived: settingsReceived, changed: changed))
            try sync.addHandler(multiplexer)
            // What the server sent since the handshake (its SETTINGS, at least) now reaches the HTTP/2 handler.
            TLSHandshakeWaiter.release(from: sync)
            return connection
        }.get()
        let deadline = channel.eventLoop.scheduleTask(in: timeout) {
            settingsReceived.fail(HTTPClientError.deadlineExceeded)
        }
        defer { deadline.cancel() }
        try await settingsReceived.futureResult.get()
        return connection
    }

    func learnt(maxStreams: Int) { state.withLockedValue { $0.maxStreams = max(1, maxStreams) } }
    func goAwayReceived() { state.withLockedValue { $0.goingAway = true } }

    /// Opens a stream and sends `request` on it; returns once the response head arrived (`headTimeout`). `closed`
    /// is called once when the stream is over (or could not be opened). Cancelling the calling task resets the
    /// stream, not the connection.
    func send(
        _ request: HTTPRequestHead, stallTimeout: TimeAmount, headTimeout: TimeAmount, readAhead: Int, closed: @escaping @Sendable () -> Void
    ) async throws -> StreamedResponse {
        let feeder = ProxiedFeeder()
        let readAheadStrategy = ReadAhead(chunks: readAhead)
        let made = ResponseBody.Producer.makeSequence(
            elementType: ByteBuffer.self, failureType: (any Error).self, backPressureStrategy: readAheadStrategy,
            finishOnDeinit: false, delegate: BodyDemand(feeder))
        let source = made.source
        let eventLoop = channel.eventLoop
        let head = eventLoop.makePromise(of: HTTPResponseHead.self)
        let stream = eventLoop.makePromise(of: (any Channel).self)
        let opened = NIOLockedValueBox<(any Channel)?>(nil)
        let cancelled = NIOLockedValueBox(false)
        let multiplexer = self.multiplexer
        eventLoop.execute {
            multiplexer.value.createStreamChannel(promise: stream) { streamChannel in
                do {
                    let sync = streamChannel.pipeline.syncOperations
                    try sync.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                    let exchange = ProxiedExchange(request: request, stallTimeout: stallTimeout, source: source, head: head)
                    try sync.addHandler(exchange)
                    feeder.attach(NIOLoopBound(exchange, eventLoop: streamChannel.eventLoop))
                    return streamChannel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return streamChannel.eventLoop.makeFailedFuture(error)
                }
            }
        }
        stream.futureResult.whenComplete { result in
            switch result {
            case .success(let streamChannel):
                let closeNow = cancelled.withLockedValue { cancelled in
                    opened.withLockedValue { $0 = streamChannel }
                    return cancelled
                }
                streamChannel.closeFuture.whenComplete { _ in closed() }
                if closeNow { streamChannel.close(promise: nil) }
            case .failure(let error):
                head.fail(error)
                source.finish(error)
                closed()
            }
        }
        let timeout = eventLoop.scheduleTask(in: headTimeout) {
            head.fail(HTTPClientError.deadlineExceeded)
            let streamChannel = cancelled.withLockedValue { cancelled in
                cancelled = true
                return opened.withLockedValue { $0 }
            }
            streamChannel?.close(promise: nil)
        }
        head.futureResult.whenComplete { _ in timeout.cancel() }
        let received = try await withTaskCancellationHandler {
            try await head.futureResult.get()
        } onCancel: {
            let streamChannel = cancelled.withLockedValue { cancelled in
                cancelled = true
                return opened.withLockedValue { $0 }
            }
            streamChannel?.close(promise: nil)
        }
        return StreamedResponse(
            status: received.status, headers: received.headers, body: ResponseBody(producer: made.sequence, readAhead: readAheadStrategy),
            version: .http2)
    }

    /// Closes the connection and every stream on it.
    func close() { channel.close(promise: nil) }
}

/// Sits between the HTTP/2 handler and the multiplexer: learns the server's stream limit from its SETTINGS, and
/// its GOAWAY.
private final class HTTP2ConnectionWatcher: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame

    private let connection: TunnelledHTTP2Connection
    private let settingsReceived: EventLoopPromise<Void>
    private let changed: @Sendable (TunnelledHTTP2Connection) -> Void

    init(connection: TunnelledHTTP2Connection, settingsReceived: EventLoopPromise<Void>, changed: @escaping @Sendable (TunnelledHTTP2Connection) -> Void) {
        self.connection = connection
        self.settingsReceived = settingsReceived
        self.changed = changed
    }

    func channelInactive(context: ChannelHandlerContext) {
        settingsReceived.fail(HTTPClientError.remoteConnectionClosed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        settingsReceived.fail(error)
        context.fireErrorCaught(error)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        settingsReceived.fail(HTTPClientError.remoteConnectionClosed)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            if let limit = settings.last(where: { $0.parameter == .maxConcurrentStreams }) {
                connection.learnt(maxStreams: limit.value)
                changed(connection)
            }
            settingsReceived.succeed()
        case .goAway:
            connection.goAwayReceived()
            settingsReceived.fail(HTTPClientError.remoteConnectionClosed)
            changed(connection)
        default:
            break
        }
        context.fireChannelRead(data)
    }
}
