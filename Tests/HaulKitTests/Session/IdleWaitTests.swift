import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// `waitUntilIdle()` returns once every task has ended and its end is stored, never between one task's end and the
/// next one's start: a batch reads its outcome right after it, and a task it found still running or waiting would be
/// counted as unfinished.
@Suite struct IdleWaitTests {
    @Test(arguments: [(concurrent: 1, tasks: 4, part: 4), (concurrent: 1, tasks: 12, part: 7), (concurrent: 2, tasks: 30, part: 30),
                      (concurrent: 5, tasks: 40, part: 7)])
    func waitUntilIdleReturnsOnlyOnceEveryTaskHasEnded(concurrent: Int, tasks: Int, part: Int) async throws {
        try await withHarness { server, _, sandbox in
            for n in 0..<tasks { server.serve("/f\(n)", Resource(body: TestData.bytes(500 + n, seed: UInt64(n)), etag: "\"f\(n)\"")) }
            // One of them is missing: a failure is an end too.
            let session = try await DownloadSession(
                identifier: "idle-\(concurrent)", configuration: sessionConfiguration(sandbox, concurrent: concurrent))
            let urls = (0..<tasks).map { server.url($0 == tasks / 2 ? "/missing" : "/f\($0)") }
            #expect(urls.count == tasks)
            // Added at once or in parts, as a batch adds its list.
            for first in stride(from: 0, to: tasks, by: part) {
                let slice = urls[first..<min(first + part, tasks)]
                _ = try await session.add(try slice.map { DownloadRequest(url: try UserInput.url($0)) })
            }
            await session.waitUntilIdle()
            let states = try await session.tasks().map(\.state)
            #expect(states.count == tasks)
            #expect(states.filter { $0 == .finished }.count == tasks - 1)
            #expect(states.filter { $0 == .failed }.count == 1)
            await session.close()
        }
    }
}
