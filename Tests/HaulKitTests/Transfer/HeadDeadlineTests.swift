import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import HaulKit

/// A response head that does not come in time fails its request, whatever keeps it: the deadlines are kept by one
/// sweeping task (``HeadDeadlines``), not by a timer of an event loop per request.
@Suite struct HeadDeadlineTests {
    /// Polls `done` every 20 ms, at most `turns` times; whether it became true.
    private func eventually(turns: Int = 500, _ done: () -> Bool) async throws -> Bool {
        for _ in 0..<turns {
            if done() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return done()
    }

    @Test func aDeadlineFiresOnceAndARemovedOneNever() async throws {
        let deadlines = HeadDeadlines(granularity: .milliseconds(10))
        let fired = NIOLockedValueBox<[String]>([])
        let removed = deadlines.add(after: .milliseconds(30)) { fired.withLockedValue { $0.append("removed") } }
        deadlines.remove(removed)
        // Added after the removed one and due later: once it has fired, a sweep has passed the removed one's time.
        _ = deadlines.add(after: .milliseconds(60)) { fired.withLockedValue { $0.append("kept") } }
        #expect(try await eventually { fired.withLockedValue { $0 } == ["kept"] })
        // Nothing is kept any more, so the sweeping task ends; a new deadline starts it again.
        #expect(try await eventually { deadlines.count == 0 })
        _ = deadlines.add(after: .milliseconds(10)) { fired.withLockedValue { $0.append("again") } }
        #expect(try await eventually { fired.withLockedValue { $0 } == ["kept", "again"] })
    }

    @Test func manyDeadlinesEachFireOnceAndOnlyWhenDue() async throws {
        let deadlines = HeadDeadlines(granularity: .milliseconds(10))
        let fired = NIOLockedValueBox<[Int: Int]>([:])
        var tokens: [HeadDeadlines.Token] = []
        for index in 0..<200 {
            tokens.append(deadlines.add(after: .milliseconds(index % 2 == 0 ? 20 : 3_600_000)) {
                fired.withLockedValue { $0[index, default: 0] += 1 }
            })
        }
        #expect(try await eventually { fired.withLockedValue { $0.count } == 100 })
        for (index, token) in tokens.enumerated() where index % 2 == 1 { deadlines.remove(token) }
        #expect(try await eventually { deadlines.count == 0 })
        let counts = fired.withLockedValue { $0 }
        #expect(counts.keys.allSatisfy { $0 % 2 == 0 })
        #expect(counts.values.allSatisfy { $0 == 1 })
    }

    @Test func aServerThatNeverAnswersFailsTheRequestAtItsHeadDeadline() async throws {
        // Accepts, reads and never writes: the connection and the request are fine, only the head never comes.
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in channel.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(silent.localAddress?.port)
        var configuration = HTTPClient.Configuration()
        // AsyncHTTPClient's own read timeout is far off: only the head deadline can end the wait.
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(3600))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let request = try HTTPClient.Request(url: "http://127.0.0.1:\(port)/f")
            _ = try await client.stream(request, headTimeout: .milliseconds(300), readAheadChunks: 4)
            Issue.record("a server that never answers gave a head")
        } catch {
            #expect(error as? HTTPClientError == .deadlineExceeded, "\(error)")
        }
        try await client.shutdown()
        try await silent.close()
    }
}
