import HaulCore
import NIOCore

/// One side of a proxy's handshake as the channel handler drives it: what to send first, and what each answer
/// means. ``HTTPConnectHandshake`` and ``SOCKS5Handshake`` (both pure values in HaulCore) are adapted to it.
protocol TunnelNegotiation: Sendable {
    /// The bytes that open the handshake.
    var opening: [UInt8] { get }
    /// Consumes what the proxy sent.
    mutating func consume(_ bytes: [UInt8]) -> TunnelStep
}

/// The next step of a handshake.
enum TunnelStep {
    case needMore
    case send([UInt8])
    case established
    case failed(any Error)
}

extension HTTPConnectHandshake: TunnelNegotiation {
    var opening: [UInt8] { request }

    mutating func consume(_ bytes: [UInt8]) -> TunnelStep {
        switch receive(bytes) {
        case .needMore: return .needMore
        case .established: return .established
        case .failed(let failure): return .failed(failure)
        }
    }
}

extension SOCKS5Handshake: TunnelNegotiation {
    var opening: [UInt8] { greeting }

    mutating func consume(_ bytes: [UInt8]) -> TunnelStep {
        switch receive(bytes) {
        case .needMore: return .needMore
        case .send(let reply): return .send(reply)
        case .established: return .established
        case .failed(let failure): return .failed(failure)
        }
    }
}

/// Runs a proxy handshake on a fresh connection to the proxy, then takes itself out of the pipeline: from then on
/// the connection reaches the server (TLS and HTTP are added after it). ``established`` completes either way.
final class TunnelHandler<Negotiation: TunnelNegotiation>: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var negotiation: Negotiation
    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    private var finished = false
    /// Completed once the tunnel is open (the handler is then removed), or failed.
    let established: EventLoopPromise<Void>

    init(_ negotiation: Negotiation, timeout: TimeAmount, eventLoop: any EventLoop) {
        self.negotiation = negotiation
        self.timeout = timeout
        established = eventLoop.makePromise()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = loopBound.value
            handler.fail(context, ProxyHandshakeError.proxyDidNotAnswer)
        }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: negotiation.opening)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !finished else { return }
        var buffer = unwrapInboundIn(data)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        var step = negotiation.consume(bytes)
        while case .send(let reply) = step {
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: reply)), promise: nil)
            step = negotiation.consume([])
        }
        switch step {
        case .needMore, .send:
            break
        case .established:
            finished = true
            timer?.cancel()
            established.succeed()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        case .failed(let error):
            fail(context, error)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(context, ProxyHandshakeError.proxyClosed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context, error)
    }

    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        guard !finished else { return }
        finished = true
        timer?.cancel()
        established.fail(error)
        context.close(promise: nil)
    }
}

/// Failures of a proxy's handshake that are not the proxy's answer.
enum ProxyHandshakeError: Error {
    /// The proxy said nothing within the time allowed.
    case proxyDidNotAnswer
    /// The proxy closed the connection during the handshake.
    case proxyClosed
}
