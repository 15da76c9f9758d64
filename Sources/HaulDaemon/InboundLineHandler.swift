import HaulKit
import NIOConcurrencyHelpers
import NIOCore

/// The bytes of unfinished lines the daemon holds for all its connections together, against one budget
/// (``DaemonLimits/unfinishedInputBudget``). What is counted is the storage allocated for them.
final class InputBudget: Sendable {
    let limit: Int
    private let used = NIOLockedValueBox(0)

    init(limit: Int) { self.limit = limit }

    /// Takes `count` bytes when they fit the budget; false (and nothing taken) when they do not.
    func take(_ count: Int) -> Bool {
        used.withLockedValue { used in
            guard used + count <= limit else { return false }
            used += count
            return true
        }
    }

    func give(_ count: Int) { used.withLockedValue { $0 -= count } }

    var inUse: Int { used.withLockedValue { $0 } }
}

/// Why the daemon stopped reading a connection; the connection's reader answers with ``rpcError`` and closes it.
enum InputLimitError: Error, Equatable {
    case lineTooLong
    case overBudget
    case partialLineTimeout

    var rpcError: RPCError {
        switch self {
        case .lineTooLong:
            return .invalidRequest("a message exceeds \(JSONRPC.maxMessageBytes) bytes")
        case .overBudget:
            return .invalidRequest("the haul daemon holds too many unfinished messages from its clients; this connection is closed")
        case .partialLineTimeout:
            return .invalidRequest("a message was left unfinished for too long; this connection is closed")
        }
    }
}

/// Splits a connection's bytes into lines (`\n`, or `\r\n`), each at most `maxLength` bytes, and holds the
/// unfinished one under three limits: its length (so one connection holds at most `maxLength + 1` bytes of it),
/// the ``InputBudget`` shared by all connections, and a timeout. The timeout counts only the time the daemon is
/// ready for more bytes (a read is outstanding): a daemon that is busy with the connection's earlier requests
/// does not run down its client's time. Past any limit, it fires an ``InputLimitError`` and reads nothing more.
final class InboundLineHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let maxLength: Int
    private let budget: InputBudget
    private let timeout: TimeAmount
    /// The unfinished line, in storage of `charged` bytes taken from the budget (an array, whose capacity can be
    /// set closely; a ByteBuffer's is rounded up to a power of two).
    private var partial: [UInt8] = []
    private var charged = 0
    private var failed = false
    /// A read is outstanding: the daemon waits for the client's bytes.
    private var reading = false
    /// Time the daemon has waited for the unfinished line's bytes, before `waitingSince`.
    private var waited: TimeAmount = .zero
    private var waitingSince: NIODeadline?
    private var timer: Scheduled<Void>?

    init(maxLength: Int = JSONRPC.maxMessageBytes, budget: InputBudget, timeout: TimeAmount) {
        self.maxLength = maxLength
        self.budget = budget
        self.timeout = timeout
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var chunk = unwrapInboundIn(data)
        while let newline = chunk.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - chunk.readerIndex
            guard var line = chunk.readSlice(length: length) else { return }
            chunk.moveReaderIndex(forwardBy: 1)
            if !partial.isEmpty {
                // One byte of slack for a `\r` before the newline.
                guard partial.count + length <= maxLength + 1 else { return fail(context, .lineTooLong) }
                var whole = context.channel.allocator.buffer(capacity: partial.count + length)
                whole.writeBytes(partial)
                whole.writeImmutableBuffer(line)
                line = whole
                dropPartial()
            }
            if line.readableBytesView.last == UInt8(ascii: "\r") {
                line = line.getSlice(at: line.readerIndex, length: line.readableBytes - 1) ?? line
            }
            guard line.readableBytes <= maxLength else { return fail(context, .lineTooLong) }
            context.fireChannelRead(wrapInboundOut(line))
        }
        if chunk.readableBytes > 0 { hold(chunk, context) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        pauseClock(context)
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        dropPartial()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        dropPartial()
    }

    // MARK: Outbound

    func read(context: ChannelHandlerContext) {
        guard !failed else { return }
        reading = true
        startClock(context)
        context.read()
    }

    // MARK: The unfinished line

    /// Appends bytes to the unfinished line, growing its storage by half again at most (not doubling), within the
    /// line limit and the shared budget.
    private func hold(_ bytes: ByteBuffer, _ context: ChannelHandlerContext) {
        let held = partial.count
        let needed = held + bytes.readableBytes
        guard needed <= maxLength + 1 else { return fail(context, .lineTooLong) }
        if needed > partial.capacity {
            let wanted = min(max(needed, held + held / 2, 1_024), maxLength + 1)
            // What the array really allocates is known only once it has: charged then, given back if over.
            guard budget.take(wanted - charged) else { return fail(context, .overBudget) }
            partial.reserveCapacity(wanted)
            let extra = partial.capacity - wanted
            guard budget.take(extra) else {
                budget.give(wanted - charged)
                return fail(context, .overBudget)
            }
            charged = partial.capacity
        }
        partial.append(contentsOf: bytes.readableBytesView)
        if held == 0 {
            // A new unfinished line: its clock starts now.
            waited = .zero
            waitingSince = nil
            startClock(context)
        }
    }

    private func dropPartial() {
        partial = []
        budget.give(charged)
        charged = 0
        timer?.cancel()
        timer = nil
        waited = .zero
        waitingSince = nil
    }

    /// Runs the unfinished line's clock while the daemon waits for its bytes. Time is the event loop's (the tests' loop
    /// is an `EmbeddedEventLoop` whose time they move).
    private func startClock(_ context: ChannelHandlerContext) {
        guard !partial.isEmpty, reading, waitingSince == nil else { return }
        waitingSince = context.eventLoop.now
        arm(context)
    }

    private func pauseClock(_ context: ChannelHandlerContext) {
        guard let since = waitingSince else { return }
        waited = waited + (context.eventLoop.now - since)
        waitingSince = nil
        timer?.cancel()
        timer = nil
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let remaining = timeout - waited
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: max(remaining, .zero)) { [self] in
            timer = nil
            guard !partial.isEmpty, let since = waitingSince else { return }
            if waited + (context.eventLoop.now - since) >= timeout {
                fail(context, .partialLineTimeout)
            } else {
                pauseClock(context)
                waitingSince = context.eventLoop.now
                arm(context)
            }
        }
    }

    /// Stops reading and tells the connection's reader, which answers with the error and closes the connection;
    /// should it not, the connection is closed a little later all the same.
    private func fail(_ context: ChannelHandlerContext, _ error: InputLimitError) {
        guard !failed else { return }
        failed = true
        dropPartial()
        context.fireErrorCaught(error)
        let channel = context.channel
        channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
    }
}
