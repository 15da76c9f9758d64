import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// One request and its response through a proxy, on a connection of its own or as a stream of an HTTP/2 connection
/// (``TunnelledHTTP2Connection``): writes the request, completes ``head`` with the response head and feeds the body
/// into a ``ResponseBody`` with backpressure, reading only while the consumer wants more. Its channel (the
/// connection, or the stream alone) is closed when the response ends or the consumer stops; except that an HTTP/1.1
/// connection given `keepAlive` whose response ended cleanly and allows it (no `Connection: close`) is handed to it
/// instead, with this handler out of its pipeline, for the next request.
///
/// A read that brings nothing within `stallTimeout` fails the response (as AsyncHTTPClient's read timeout does);
/// the timer runs only while a read is outstanding, so a consumer that pauses (a rate limit) is never taken
/// for a stalled server.
final class ProxiedExchange: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private let request: HTTPRequestHead
    private let stallTimeout: TimeAmount
    private let source: ResponseBody.Producer.Source
    /// Completed when the head arrives, or failed.
    let head: EventLoopPromise<HTTPResponseHead>
    private var headCompleted = false
    private var ended = false
    /// The consumer has room for more.
    private var demand = true
    /// The pipeline asked to read while the consumer had no room: passed on once it has.
    private var heldRead = false
    private var stallTimer: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// Takes the connection once a response has ended and it may carry another request (`nil`: always closed).
    private let keepAlive: ((any Channel) -> Void)?
    /// The response head allows another request on the connection.
    private var responseAllowsReuse = false

    init(
        request: HTTPRequestHead, stallTimeout: TimeAmount, source: ResponseBody.Producer.Source, head: EventLoopPromise<HTTPResponseHead>,
        keepAlive: ((any Channel) -> Void)? = nil
    ) {
        self.request = request
        self.stallTimeout = stallTimeout
        self.source = source
        self.head = head
        self.keepAlive = keepAlive
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        context.write(wrapOutboundOut(.head(request)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        stallTimer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        stallTimer?.cancel()
        stallTimer = nil
        guard !ended else { return }
        switch unwrapInboundIn(data) {
        case .head(let responseHead):
            // An informational answer (100 Continue) is not the response.
            if (100..<200).contains(responseHead.status.code), responseHead.status != .switchingProtocols { return }
            headCompleted = true
            responseAllowsReuse = responseHead.isKeepAlive
            head.succeed(responseHead)
        case .body(let buffer):
            switch source.yield(buffer) {
            case .produceMore: break
            case .stopProducing: demand = false
            case .dropped: finish(context, error: nil)
            }
        case .end:
            finish(context, error: nil, reusable: responseAllowsReuse)
        }
    }

    func read(context: ChannelHandlerContext) {
        guard !ended else { return }
        guard demand else {
            heldRead = true
            return
        }
        armStallTimer(context)
        context.read()
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(context, error: HTTPClientError.remoteConnectionClosed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(context, error: error)
    }

    /// The consumer wants more (on the event loop).
    func resume() {
        guard let context, !ended else { return }
        demand = true
        if heldRead {
            heldRead = false
            armStallTimer(context)
            context.read()
        }
    }

    /// The consumer stopped (on the event loop).
    func stop() {
        guard let context, !ended else { return }
        finish(context, error: nil)
    }

    private func armStallTimer(_ context: ChannelHandlerContext) {
        guard stallTimer == nil else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        stallTimer = context.eventLoop.scheduleTask(in: stallTimeout) {
            let (handler, context) = loopBound.value
            handler.stallTimer = nil
            handler.finish(context, error: HTTPClientError.readTimeout)
        }
    }

    /// Ends the exchange once: the head fails if it never came, the body ends (with `error`, if any), and the
    /// connection closes.
    private func finish(_ context: ChannelHandlerContext, error: (any Error)?, reusable: Bool = false) {
        guard !ended else { return }
        ended = true
        stallTimer?.cancel()
        stallTimer = nil
        if !headCompleted {
            headCompleted = true
            head.fail(error ?? HTTPClientError.remoteConnectionClosed)
        }
        if let error { source.finish(error) } else { source.finish() }
        guard reusable, error == nil, let keepAlive else {
            context.close(promise: nil)
            return
        }
        // Every byte of the response is read: the connection is idle and may carry the next request. Reading goes on
        // (so a close by the server is seen) once this handler, which held reads for the consumer, is gone.
        let channel = context.channel
        let readWasHeld = heldRead
        do {
            try context.pipeline.syncOperations.addHandler(IdleConnectionGuard())
        } catch {
            context.close(promise: nil)
            return
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        if readWasHeld { channel.read() }
        keepAlive(channel)
    }
}

/// Watches an idle HTTP/1.1 connection (kept for the next request): a server that sends anything while no request
/// is outstanding, or breaks the framing, has the connection closed, so that nothing it sent is read as the answer to
/// the next request. Taken out (``release(from:)``) before the next request is sent.
final class IdleConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Takes the guard (if any) out of `pipeline`. On the channel's event loop.
    static func release(from pipeline: ChannelPipeline.SynchronousOperations) {
        guard let watcher = try? pipeline.handler(type: IdleConnectionGuard.self) else { return }
        pipeline.removeHandler(watcher, promise: nil)
    }
}

/// Passes a ``ResponseBody``'s demand on to its ``ProxiedExchange``, on the connection's event loop.
final class ProxiedFeeder: BodyFeeder {
    private let exchange = NIOLockedValueBox<NIOLoopBound<ProxiedExchange>?>(nil)
    /// The consumer stopped before the exchange was attached.
    private let stoppedEarly = NIOLockedValueBox(false)

    func attach(_ handler: NIOLoopBound<ProxiedExchange>) {
        exchange.withLockedValue { $0 = handler }
    }

    var hasStopped: Bool { stoppedEarly.withLockedValue { $0 } }

    func produceMore() {
        guard let bound = exchange.withLockedValue({ $0 }) else { return }
        bound.eventLoop.execute { bound.value.resume() }
    }

    func didTerminate() {
        stoppedEarly.withLockedValue { $0 = true }
        guard let bound = exchange.withLockedValue({ $0 }) else { return }
        bound.eventLoop.execute { bound.value.stop() }
    }
}
