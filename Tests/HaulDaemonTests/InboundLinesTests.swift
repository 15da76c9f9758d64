import HaulKit
import NIOCore
import NIOEmbedded
import Testing
@testable import HaulDaemon

/// How the daemon cuts a connection's bytes into lines and holds the unfinished one, on an `EmbeddedChannel` whose
/// clock the test moves: no socket, and no test waits for time to pass. (What a client sees — the error line, then the
/// connection closed, the memory given back — is DaemonInputLimitsTests' in HaulCLITests.)
@Suite struct InboundLinesTests {
    static let limit = JSONRPC.maxMessageBytes

    /// A channel reading through the daemon's line handler, with a read outstanding (the daemon waits for bytes).
    static func channel(budget: InputBudget = InputBudget(limit: 64 << 20), timeout: TimeAmount = .seconds(10)) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: InboundLineHandler(budget: budget, timeout: timeout))
        // Connected (to no socket): an active channel, as an accepted connection is.
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channel.read()
        return channel
    }

    /// Bytes arriving: the limit error they raised, if any.
    @discardableResult
    static func write(_ channel: EmbeddedChannel, _ bytes: some Sequence<UInt8>) -> InputLimitError? {
        do {
            try channel.writeInbound(ByteBuffer(bytes: bytes))
            return nil
        } catch let error as InputLimitError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    /// The lines the handler passed on so far.
    static func lines(_ channel: EmbeddedChannel) throws -> [String] {
        var lines: [String] = []
        // Bounded by what was written.
        while let line = try channel.readInbound(as: ByteBuffer.self) { lines.append(String(buffer: line)) }
        return lines
    }

    /// The limit error the handler raised, if any.
    static func failure(_ channel: EmbeddedChannel) -> InputLimitError? {
        do {
            try channel.throwIfErrorCaught()
            return nil
        } catch let error as InputLimitError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func linesEndInNewlineOrCRLFWhateverTheChunksAndAnUnfinishedOneWaits() throws {
        let channel = try Self.channel()
        try channel.writeInbound(ByteBuffer(string: "one\ntwo\r\nthr"))
        #expect(try Self.lines(channel) == ["one", "two"])
        try channel.writeInbound(ByteBuffer(string: "ee"))
        #expect(try Self.lines(channel).isEmpty, "no line before its newline")
        try channel.writeInbound(ByteBuffer(string: "\r\n\nfour\r"))
        #expect(try Self.lines(channel) == ["three", ""], "an empty line is a line (a parse error for the service)")
        try channel.writeInbound(ByteBuffer(string: "\n"))
        #expect(try Self.lines(channel) == ["four"], "a \\r\\n split across chunks")
        #expect(Self.failure(channel) == nil)
        _ = try channel.finish()
    }

    @Test func aLineOfExactlyTheLimitIsPassedOnAndOneByteMoreIsRefused() throws {
        for chunk in [Self.limit + 1, 65_536, 1_000] {
            let channel = try Self.channel()
            let line = [UInt8](repeating: UInt8(ascii: "a"), count: Self.limit) + [10]
            for start in stride(from: 0, to: line.count, by: chunk) {
                try channel.writeInbound(ByteBuffer(bytes: line[start..<min(line.count, start + chunk)]))
            }
            #expect(try Self.lines(channel).map(\.utf8.count) == [Self.limit], "in chunks of \(chunk)")
            #expect(Self.failure(channel) == nil)
            _ = try channel.finish()
        }
        // Unfinished, a line may hold one byte more (a `\r` before its newline), never two.
        for (chunk, ending, length) in [(Self.limit + 2, [UInt8(10)], Self.limit + 1), (65_536, [10], Self.limit + 1), (65_536, [], Self.limit + 2)] {
            let channel = try Self.channel()
            let line = [UInt8](repeating: UInt8(ascii: "a"), count: length) + ending
            var failure: InputLimitError?
            for start in stride(from: 0, to: line.count, by: chunk) where failure == nil {
                failure = Self.write(channel, line[start..<min(line.count, start + chunk)])
            }
            #expect(failure == .lineTooLong, "in chunks of \(chunk), newline: \(!ending.isEmpty)")
            #expect(try Self.lines(channel).isEmpty, "nothing of it is passed on")
            // Then closed, should the reader not close it first.
            channel.embeddedEventLoop.advanceTime(by: .seconds(3))
            #expect(!channel.isActive)
        }
    }

    @Test func unfinishedLinesOfAllConnectionsShareOneBudgetThatComesBack() throws {
        let budget = InputBudget(limit: 8_192)
        let first = try Self.channel(budget: budget), second = try Self.channel(budget: budget)
        try first.writeInbound(ByteBuffer(repeating: UInt8(ascii: "x"), count: 6_000))
        #expect(Self.failure(first) == nil && budget.inUse >= 6_000)
        let refused = Self.write(second, [UInt8](repeating: UInt8(ascii: "y"), count: 3_000))
        #expect(refused == .overBudget, "the second does not fit what the first holds")
        #expect(budget.inUse < 8_192 && budget.inUse >= 6_000, "the refused one holds nothing: \(budget.inUse)")
        // A finished line gives its bytes back; a complete line never needed any.
        try first.writeInbound(ByteBuffer(string: "\n"))
        #expect(try Self.lines(first).map(\.utf8.count) == [6_000])
        #expect(budget.inUse == 0)
        let third = try Self.channel(budget: budget)
        try third.writeInbound(ByteBuffer(string: String(repeating: "z", count: 7_000) + "\n"))
        #expect(try Self.lines(third).count == 1 && budget.inUse == 0)
        // A connection that closes with an unfinished line gives it back too.
        try third.writeInbound(ByteBuffer(repeating: UInt8(ascii: "z"), count: 5_000))
        #expect(budget.inUse >= 5_000)
        _ = try third.finish()
        #expect(budget.inUse == 0)
    }

    @Test func anUnfinishedLineIsTimedOutCountingOnlyTimeTheDaemonWaitsForIt() throws {
        let channel = try Self.channel(timeout: .seconds(10))
        // An idle connection with nothing unfinished is never timed out.
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(Self.failure(channel) == nil && channel.isActive)
        // Bytes of a line arrive; while the daemon is busy (no read outstanding) its clock stands still.
        try channel.writeInbound(ByteBuffer(string: "{\"partial\":"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(Self.failure(channel) == nil, "no read outstanding: the daemon was busy, not the client slow")
        // Waiting for the rest, it runs: 9 s is within the limit, 10 s in all is not.
        channel.read()
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(Self.failure(channel) == nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(Self.failure(channel) == .partialLineTimeout)
        // Nothing more is read from it.
        Self.write(channel, Array("1}\n".utf8))
        #expect(try Self.lines(channel).isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        #expect(!channel.isActive, "then closed, should the reader not close it first")
    }

    @Test func bytesTrickledIntoALineDoNotExtendItsTime() throws {
        let channel = try Self.channel(timeout: .seconds(10))
        var refusedAfter: Int?
        // Bounded: 30 turns of one byte and one second each, three times the limit.
        for second in 1...30 {
            #expect(Self.write(channel, Array("p".utf8)) == nil)
            channel.read()
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
            if Self.failure(channel) == .partialLineTimeout {
                refusedAfter = second
                break
            }
        }
        #expect(refusedAfter == 10, "refused after \(refusedAfter.map { "\($0) s" } ?? "never")")
    }

    @Test func aLineFinishedInTimeStartsTheNextOnesClockAfresh() throws {
        let channel = try Self.channel(timeout: .seconds(10))
        try channel.writeInbound(ByteBuffer(string: "{\"a\":"))
        channel.read()
        channel.embeddedEventLoop.advanceTime(by: .seconds(8))
        try channel.writeInbound(ByteBuffer(string: "1}\n{\"b\":"))
        channel.read()
        #expect(try Self.lines(channel) == ["{\"a\":1}"])
        channel.embeddedEventLoop.advanceTime(by: .seconds(8))
        #expect(Self.failure(channel) == nil, "the second line has waited 8 s, not 16")
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        #expect(Self.failure(channel) == .partialLineTimeout)
    }
}
