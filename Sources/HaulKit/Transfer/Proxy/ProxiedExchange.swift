import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// One request and its response through a proxy, on a connection of its own or as a stream of an HTTP/2 connection
/// (``TunnelledHTTP2Connection``): writes the request, completes ``head`` with the response head and feeds the body
/// into a ``ResponseBody`` with backpressure, reading only while the consumer wants more. Its channel (the
/// connection, or the stream alone) is closed when the response ends or the consumer stops.
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

    init(request: HTTPRequestHead, stallTimeout: TimeAmount, source: ResponseBody.Producer.Source, head: EventLoopPromise<HTTPResponseHead>) {
        self.request = request
        self.stallTimeout = stallTimeout
        self.source = source
        self.head = head
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
            head.succeed(responseHead)
        case .body(let buffer):
            switch source.yield(buffer) {
            case .produceMore: break
            case .stopProducing: demand = false
            case .dropped: finish(context, error: nil)
            }
        case .end:
            finish(context, error: nil)
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
    private func finish(_ context: ChannelHandlerContext, error: (any Error)?) {
        guard !ended else { return }
        ended = true
        stallTimer?.cancel()
        stallTimer = nil
        if !headCompleted {
            headCompleted = true
            head.fail(error ?? HTTPClientError.remoteConnectionClosed)
        }
        if let error { source.finish(error) } else { source.finish() }
        context.close(promise: nil)
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
