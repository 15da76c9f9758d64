import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// A download whose host has nothing else waiting in the session asks its server to close the HTTP/1.1 connection
/// after the response: a list over thousands of hosts then keeps no idle connection to each (a descriptor and memory
/// apiece, until the pool's idle timeout), while downloads of a host with more to come keep theirs for the next.
@Suite struct IdleConnectionSessionTests {
    @Test func onlyTheLastDownloadOfEachHostAsksToCloseItsConnection() async throws {
        let other = try await TestServer.start()
        try await withHarness { server, _, sandbox in
            for name in ["a1", "a2", "a3"] { server.serve("/\(name)", Resource(body: TestData.bytes(3_000, seed: 5), etag: "\"\(name)\"")) }
            other.serve("/b1", Resource(body: TestData.bytes(3_000, seed: 6), etag: "\"b1\""))
            // One at a time, in the order added: a1 and a2 leave more of their host waiting, b1 and a3 leave none.
            let session = try await DownloadSession(identifier: "idle", configuration: sessionConfiguration(sandbox, concurrent: 1))
            let urls = [server.url("/a1"), server.url("/a2"), other.url("/b1"), server.url("/a3")]
            _ = try await session.add(try urls.map { DownloadRequest(url: try UserInput.url($0)) })
            await session.waitUntilIdle()
            #expect(try await session.tasks().allSatisfy { $0.state == .finished })
            let asked = [server.requests("/a1"), server.requests("/a2"), other.requests("/b1"), server.requests("/a3")]
                .map { $0.first?.header("Connection") }
            #expect(asked == [nil, nil, "close", "close"])
            await session.close()
        }
        try await other.shutdown()
    }

    /// A host whose next download lies beyond the window (the next few thousand tasks of a long list; four here)
    /// closes its connection too, as curl's bounded connection cache would: keeping one for every host passed
    /// held about a thousand idle connections and 300 MiB in a list of 60,000 hosts.
    @Test func aHostWhoseNextDownloadIsBeyondTheWindowClosesItsConnection() async throws {
        let other = try await TestServer.start()
        try await withHarness { server, _, sandbox in
            for name in ["a1", "a2"] { server.serve("/\(name)", Resource(body: TestData.bytes(3_000, seed: 7), etag: "\"\(name)\"")) }
            let bs = (1...6).map { "b\($0)" }
            for name in bs { other.serve("/\(name)", Resource(body: TestData.bytes(3_000, seed: 8), etag: "\"\(name)\"")) }
            // Queued by a session that runs nothing, then run by one that reads the queue four tasks at a time.
            let urls = [server.url("/a1")] + bs.map { other.url("/\($0)") } + [server.url("/a2")]
            let queueing = try await DownloadSession(identifier: "window", configuration: sessionConfiguration(sandbox, concurrent: 0))
            _ = try await queueing.add(try urls.map { DownloadRequest(url: try UserInput.url($0)) })
            await queueing.close()
            var configuration = sessionConfiguration(sandbox, concurrent: 1)
            configuration.waitingPageSize = 4
            let session = try await DownloadSession(identifier: "window", configuration: configuration)
            await session.waitUntilIdle()
            #expect(try await session.tasks().allSatisfy { $0.state == .finished })
            let asked = [server.requests("/a1")] + bs.map { other.requests("/\($0)") } + [server.requests("/a2")]
            // a1: its host's next (a2) is seven tasks on, beyond the four read; b1 to b5: more of theirs right after.
            #expect(asked.map { $0.first?.header("Connection") } == ["close", nil, nil, nil, nil, nil, "close", "close"])
            await session.close()
        }
        try await other.shutdown()
    }
}
