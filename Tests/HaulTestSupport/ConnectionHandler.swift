import NIOCore
import NIOHTTP1

/// Per-connection handler: decodes requests (via the upstream `HTTPRequestDecoder`), asks the
/// route for a `ResponsePlan`, and writes it as raw bytes so every byte on the wire is under
/// our control (fault injection). Requests are answered strictly in order.
///
/// All methods run on the channel's event loop; future callbacks and timers use the
/// `assumeIsolated()` APIs, so no state is shared across threads except through `ServerCore`.
final class ConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    private static let maxRecordedBody = 1 << 20

    private let core: ServerCore
    private var partialHead: HTTPRequestHead?
    private var partialBody: [UInt8] = []
    private var queue: CircularBuffer<(head: HTTPRequestHead, body: [UInt8])> = []
    private var active: ResponseState?
    private var closed = false

    init(core: ServerCore) {
        self.core = core
    }

    // MARK: Channel events

    func channelActive(context: ChannelHandlerContext) {
        if !core.connectionOpened(context.channel) {
            closeQuietly(context)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        active?.scheduledPump?.cancel()
        active = nil
        queue.removeAll()
        core.connectionClosed(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            partialHead = head
            partialBody = []
        case .body(var buffer):
            let room = Self.maxRecordedBody - partialBody.count
            if room > 0, let bytes = buffer.readBytes(length: min(room, buffer.readableBytes)) {
                partialBody += bytes
            }
        case .end:
            if let head = partialHead {
                queue.append((head, partialBody))
            }
            partialHead = nil
            partialBody = []
            processNext(context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            pump(context)
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // Malformed requests get a bare 400; connection resets, broken pipes etc. just drop the
        // connection. Deliberately not forwarded, so nothing gets logged.
        if error is HTTPParserError, !closed, active == nil {
            closed = true
            var response = context.channel.allocator.buffer(capacity: 80)
            response.writeString("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            context.writeAndFlush(wrapOutboundOut(response)).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
            return
        }
        closeQuietly(context)
    }

    // MARK: Request dispatch

    private func processNext(_ context: ChannelHandlerContext) {
        guard !closed, active == nil, let next = queue.popFirst() else { return }
        let head = next.head
        let headers = head.headers.map { ($0.name, $0.value) }
        let (id, request, handler) = core.record(
            method: head.method.rawValue,
            uri: head.uri,
            headers: headers,
            body: next.body
        )
        let plan = handler?(request) ?? .text(404, "no route for \(request.path)\n")
        startResponse(plan, recordID: id, method: request.method, keepAlive: head.isKeepAlive, context: context)
    }

    private func startResponse(
        _ plan: ResponsePlan,
        recordID: Int,
        method: String,
        keepAlive: Bool,
        context: ChannelHandlerContext
    ) {
        let state = ResponseState(recordID: recordID, plan: plan, requestMethod: method, requestKeepAlive: keepAlive)
        active = state

        var head = context.channel.allocator.buffer(capacity: 512)
        ResponseState.encodeHead(plan, framing: state.framing, into: &head)
        state.startTime = .now()
        state.nextSendTime = state.startTime

        let bodyless = state.limit == 0
        context.writeAndFlush(wrapOutboundOut(head)).assumeIsolated().whenComplete { result in
            switch result {
            case .success:
                if bodyless { self.bodyDone(state, context) }
            case .failure:
                self.closeQuietly(context)
            }
        }
        if !bodyless {
            pump(context)
        }
    }

    // MARK: Body writing

    /// Writes body slices while the channel is writable (and, when throttled, while the
    /// pacing deadline has passed). Resumed by writability changes and scheduled timers.
    private func pump(_ context: ChannelHandlerContext) {
        guard let state = active else { return }
        while !closed, active === state, !state.stalled, state.offset < state.limit, context.channel.isWritable {
            if state.bytesPerSecond != nil {
                let now = NIODeadline.now()
                if now < state.nextSendTime {
                    schedulePump(state, at: state.nextSendTime, context: context)
                    return
                }
            }

            let count = min(state.sliceSize, state.limit - state.offset)
            let chunked = state.framing == .chunked
            var buffer = context.channel.allocator.buffer(capacity: count + (chunked ? 16 : 0))
            if chunked { buffer.writeString(String(count, radix: 16) + "\r\n") }
            let start = state.offset
            state.body.withUnsafeBytes { bytes in
                _ = buffer.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)]))
            }
            if chunked { buffer.writeString("\r\n") }

            state.offset += count
            if let rate = state.bytesPerSecond {
                let nanos = Double(state.offset) * 1_000_000_000 / Double(rate)
                state.nextSendTime = state.startTime + .nanoseconds(Int64(min(nanos, Double(Int64.max / 2))))
            }
            let isLast = state.offset >= state.limit

            context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { result in
                switch result {
                case .success:
                    self.core.addBytesSent(count, toRecord: state.recordID)
                    if isLast { self.bodyDone(state, context) }
                case .failure:
                    self.closeQuietly(context)
                }
            }
        }
    }

    private func schedulePump(_ state: ResponseState, at deadline: NIODeadline, context: ChannelHandlerContext) {
        guard state.scheduledPump == nil else { return }
        state.scheduledPump = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            state.scheduledPump = nil
            self.pump(context)
        }
    }

    /// Called once the last planned body byte (or the head, for bodyless responses) was written.
    private func bodyDone(_ state: ResponseState, _ context: ChannelHandlerContext) {
        guard !closed, active === state, !state.finished else { return }
        state.finished = true

        switch state.interruption {
        case .drop:
            closeQuietly(context)
            return
        case .stall:
            // Keep the connection open and send nothing more; later requests are never answered.
            state.stalled = true
            return
        case .dropWhen(_, let signal):
            // As a stall, until the test says to close.
            state.stalled = true
            let loop = context.eventLoop, bound = NIOLoopBound((self, context), eventLoop: loop)
            signal.whenFired { loop.execute { bound.value.0.closeQuietly(bound.value.1) } }
            return
        case nil:
            break
        }

        if state.sendsBody && state.framing == .chunked {
            var trailer = context.channel.allocator.buffer(capacity: 5)
            trailer.writeString("0\r\n\r\n")
            context.writeAndFlush(wrapOutboundOut(trailer)).assumeIsolated().whenComplete { result in
                switch result {
                case .success: self.responseComplete(state, context)
                case .failure: self.closeQuietly(context)
                }
            }
        } else {
            responseComplete(state, context)
        }
    }

    private func responseComplete(_ state: ResponseState, _ context: ChannelHandlerContext) {
        guard !closed, active === state else { return }
        if state.keepAlive {
            active = nil
            processNext(context)
        } else {
            closeQuietly(context)
        }
    }

    private func closeQuietly(_ context: ChannelHandlerContext) {
        guard !closed else { return }
        closed = true
        active?.scheduledPump?.cancel()
        context.close(promise: nil)
    }
}
