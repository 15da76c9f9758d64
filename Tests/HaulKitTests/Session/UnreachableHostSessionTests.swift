import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// A session whose queue starts with many downloads from a host that refuses connections: once one was refused, a slot
/// that frees up goes to another host's download, not to the next download of the host that is down (each would hold
/// its slot for a whole backoff, and a live host's download would wait for all of them).
@Suite struct UnreachableHostSessionTests {
    @Test func aLiveHostsDownloadStartsBeforeTheRestOfAHostThatIsDown() async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let deadPort = refusing.port

        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(10_000, seed: 77)
            server.serve("/live", Resource(body: body, etag: "\"l\""))
            var configuration = sessionConfiguration(sandbox, concurrent: 2)
            configuration.retry = RetryPolicy(maxRetries: 3, baseDelay: .milliseconds(300), maxDelay: .milliseconds(300))
            let session = try await DownloadSession(identifier: "unreachable", configuration: configuration)
            let log = SessionEventLog(await session.events())
            var dead: Set<String> = []
            for index in 0..<6 {
                let task = try await session.add(DownloadRequest(url: try UserInput.url("http://127.0.0.1:\(deadPort)/d\(index)")))
                dead.insert(task.id)
            }
            let live = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/live"))))
            await session.waitUntilIdle()
            try await waitFor("all-finished") { log.count { $0 == .allFinished } >= 1 }

            #expect(sandbox.contents("live") == body)
            let tasks = try await session.tasks()
            #expect(tasks.filter { dead.contains($0.id) }.allSatisfy { $0.state == .failed })
            // The live download started when the first slot freed up, after the two that filled the slots, not after
            // all six.
            let order = log.startOrder
            let before = try #require(order.firstIndex(of: live.id))
            #expect(before == 2, "dead downloads started before the live one: \(before) of 6")
            #expect(log.peakRunning <= 2)
            await session.close()
        }
    }
}
