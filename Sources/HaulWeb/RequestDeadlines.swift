import NIOCore
import NIOHTTP1

/// Closes a dashboard connection whose request does not arrive in time (``WebConnectionGate/Limits``): its head
/// within `head` of the moment the connection is ready for it (accepted, or its previous answer sent), its body within
/// `body` of its head. Both are totals: a client that trickles a byte now and then does not extend them, unlike an
/// idle timer. While an answer is being written (an event stream, for as long as it lasts) no deadline runs.
final class RequestDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let head: TimeAmount
    private let body: TimeAmount
    private var timer: Scheduled<Void>?

    init(head: Duration, body: Duration) {
        self.head = Self.amount(head)
        self.body = Self.amount(body)
    }

    static func amount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(context, head)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: arm(context, body)
        case .end: disarm()
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            // The answer is complete: the next request's head has its own time from now.
            arm(context, head)
        }
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext, _ amount: TimeAmount) {
        disarm()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: amount) { channel.close(promise: nil) }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}
