import AsyncHTTPClient
import NIOCore
import NIOTLS

/// Completes ``completed`` with the protocol chosen by ALPN when the TLS handshake finishes (or fails), then holds
/// what the server sends next until the handlers that read it are in place: an HTTP/2 server sends its SETTINGS as
/// soon as the handshake ends, often in the same read, and those bytes must not reach the end of the pipeline (and be
/// dropped) before the HTTP/2 handler is added. Call ``release(from:)`` once they are; it passes on what was held.
final class TLSHandshakeWaiter: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    let completed: EventLoopPromise<String?>
    private var handshakeDone = false
    /// What arrived after the handshake, before the release.
    private var held: [NIOAny] = []
    /// A read asked for after the handshake, passed on at the release.
    private var readHeld = false

    init(eventLoop: any EventLoop) { completed = eventLoop.makePromise() }

    /// Takes the waiter (if any) out of `pipeline`, passing on what it held to the handlers after it. On the
    /// channel's event loop.
    static func release(from pipeline: ChannelPipeline.SynchronousOperations) {
        guard let waiter = try? pipeline.handler(type: TLSHandshakeWaiter.self) else { return }
        pipeline.removeHandler(waiter, promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        context.fireUserInboundEventTriggered(event)
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let chosen) = event {
            handshakeDone = true
            completed.succeed(chosen)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard handshakeDone else { return context.fireChannelRead(data) }
        held.append(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard handshakeDone else { return context.fireChannelReadComplete() }
    }

    func read(context: ChannelHandlerContext) {
        guard handshakeDone else { return context.read() }
        readHeld = true
    }

    func removeHandler(context: ChannelHandlerContext, removalToken: ChannelHandlerContext.RemovalToken) {
        let pending = held
        held = []
        for data in pending { context.fireChannelRead(data) }
        if !pending.isEmpty { context.fireChannelReadComplete() }
        if readHeld { context.read() }
        context.leavePipeline(removalToken: removalToken)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        completed.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        completed.fail(HTTPClientError.remoteConnectionClosed)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        completed.fail(HTTPClientError.remoteConnectionClosed)
    }
}
