import Foundation
import Synchronization
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// `DownloadSession.result(for:)`: one task's outcome, awaited, never missed; and the README's example, run.
@Suite struct SessionResultTests {
    @Test func aFinishedTaskGivesItsFileAndAFailedOneItsError() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(200_000, seed: 81)
            server.serve("/ok", Resource(body: body, etag: "\"ok\""))
            let session = try await DownloadSession(identifier: "results", configuration: sessionConfiguration(sandbox))
            let ok = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/ok"))))
            let missing = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/missing"))))
            let file = try await session.result(for: ok.id)
            #expect(file.path == sandbox.path("ok"))
            #expect(sandbox.contents("ok") == body)
            do {
                _ = try await session.result(for: missing.id)
                Issue.record("a 404 must throw")
            } catch let error as HaulError {
                #expect(error.kind == .httpStatus)
            }
            // Asked again after the end: the stored outcome, at once.
            #expect(try await session.result(for: ok.id) == file)
            await session.close()
        }
    }

    @Test func anEndBeforeTheCallIsNotMissedAndACancelledTaskThrows() async throws {
        try await withHarness { server, _, sandbox in
            server.serve("/tiny", Resource(body: [1, 2, 3]))
            var slow = Resource(body: TestData.bytes(2_000_000, seed: 82), etag: "\"s\"")
            slow.faults.throttleBytesPerSecond = 100_000
            server.serve("/slow", slow)
            let session = try await DownloadSession(identifier: "early", configuration: sessionConfiguration(sandbox))
            let tiny = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/tiny"))))
            await session.waitUntilIdle()
            #expect(try await session.result(for: tiny.id).path == sandbox.path("tiny"))

            let long = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/slow"))))
            let waiter = Task { try await session.result(for: long.id) }
            try await waitFor("the slow task to run") { try await session.task(long.id)?.state == .running }
            try await session.cancel([long.id])
            do {
                _ = try await waiter.value
                Issue.record("a cancelled task must throw")
            } catch let error as HaulError {
                #expect(error.kind == .interrupted)
            }
            await session.close()
        }
    }

    /// A removed task ends its waiters at once (the `removed` event), running or waiting, and the other tasks' waiters
    /// go on.
    @Test func aRemovedTaskEndsItsWaitersWithInterrupted() async throws {
        try await withHarness { server, _, sandbox in
            var slow = Resource(body: TestData.bytes(2_000_000, seed: 83), etag: "\"r\"")
            slow.faults.throttleBytesPerSecond = 50_000
            server.serve("/slow", slow)
            server.serve("/tiny", Resource(body: [4, 5, 6]))
            var configuration = sessionConfiguration(sandbox)
            configuration.maxConcurrentDownloads = 1
            let session = try await DownloadSession(identifier: "removed", configuration: configuration)
            let running = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/slow"))))
            let waiting = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/tiny"))))
            try await waitFor("the slow task to run") { try await session.task(running.id)?.state == .running }
            let removals = await session.events()
            let waiters = [running.id, waiting.id].map { id in Task { try await session.result(for: id) } }
            // Each waiter subscribes before it reads the task: once all have, none can miss the removal.
            try await waitFor("the waiters to subscribe") { await session.subscriberCount >= 3 }
            // The waiting one first: it cannot start in the slot the other leaves.
            try await session.remove([waiting.id, running.id])
            for (index, waiter) in waiters.enumerated() {
                do {
                    _ = try await waiter.value
                    Issue.record("a removed task must throw")
                } catch let error as HaulError {
                    #expect(error.kind == .interrupted)
                    // A running task is stopped (cancelled) before it is removed: either is said.
                    let said = index == 0 ? ["was removed", "was cancelled"] : ["was removed"]
                    #expect(said.contains { error.message.contains($0) }, "\(error.message)")
                }
            }
            let removed = Mutex<[String]>([])
            let reader = Task { for await event in removals { if case .removed(let id) = event { removed.withLock { $0.append(id) } } } }
            try await waitFor("both removed events") { removed.withLock { $0.count >= 2 } }
            reader.cancel()
            #expect(removed.withLock { $0 } == [waiting.id, running.id])
            await session.close()
        }
    }

    @Test func anUnknownTaskIsAUsageError() async throws {
        try await withHarness { _, _, sandbox in
            let session = try await DownloadSession(identifier: "unknown", configuration: sessionConfiguration(sandbox))
            await #expect(throws: HaulError.self) { try await session.result(for: "nope") }
            await session.close()
        }
    }

    /// The README's HaulKit example, as it is printed there (between the markers), run against the test server.
    @Test func theReadmeExampleRunsAndTheReadmeShowsIt() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(100_000, seed: 83)
            server.serve("/a.iso", Resource(body: body, etag: "\"a\""))
            let exampleURL = server.url("/a.iso")
            var configuration = SessionConfiguration()
            configuration.home = sandbox.home
            configuration.defaultDirectory = sandbox.files
            // README-BEGIN
            configuration.maxConcurrentDownloads = 3
            let session = try await DownloadSession(identifier: "my-app", configuration: configuration)
            let task = try await session.add(DownloadRequest(url: try UserInput.url(exampleURL)))
            let file = try await session.result(for: task.id)   // throws the task's error if it failed
            print("saved", file.path)
            await session.close()
            // README-END
            #expect(FileManager.default.contents(atPath: file.path).map(Array.init) == body)

            let source = try String(contentsOfFile: #filePath, encoding: .utf8)
            let lines = source.components(separatedBy: "\n")
            guard let begin = lines.firstIndex(where: { $0.hasSuffix("// README-" + "BEGIN") }),
                  let end = lines.firstIndex(where: { $0.hasSuffix("// README-" + "END") }) else {
                Issue.record("markers missing")
                return
            }
            let example = lines[(begin + 1)..<end].map { String($0.dropFirst(12)) }.joined(separator: "\n")
                .replacingOccurrences(of: "exampleURL", with: "\"https://example.com/a.iso\"")
            let readme = try String(contentsOfFile: URL(fileURLWithPath: #filePath)
                .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("README.md").path, encoding: .utf8)
            #expect(readme.contains(example), "README.md must show the example this test runs:\n\(example)")
        }
    }
}
