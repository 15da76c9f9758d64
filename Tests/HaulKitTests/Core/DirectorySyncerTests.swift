import Foundation
import Testing
@testable import HaulKit

@Suite struct DirectorySyncerTests {
    /// Counts syncs as they begin and end; the first one waits until released, so callers pile up behind it.
    final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var began = 0
        private var ended: [Int] = []
        let gate = DispatchSemaphore(value: 0)

        func sync() {
            lock.lock()
            began += 1
            let number = began
            lock.unlock()
            if number == 1 { gate.wait() }
            lock.lock()
            ended.append(number)
            lock.unlock()
        }

        var beganCount: Int { lock.withLock { began } }
        var endedSyncs: [Int] { lock.withLock { ended } }
    }

    @Test func everyCallerWaitsForASyncThatBeganAfterItAskedAndCallersShareThem() async throws {
        let recorder = Recorder()
        let syncer = DirectorySyncer(sync: { _ in recorder.sync() })
        // The first caller's sync is held: the others all ask while it runs.
        let first = Task { await syncer.sync("/d") }
        while recorder.beganCount == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let asked = recorder.beganCount
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    await syncer.sync("/d")
                    // A sync numbered above the ones begun when this caller asked has ended.
                    #expect(recorder.endedSyncs.contains { $0 > asked })
                }
            }
            try await Task.sleep(for: .milliseconds(50))
            recorder.gate.signal()
            try await group.waitForAll()
        }
        await first.value
        // One for the first caller, then one (or a few) for the twenty that waited: not twenty.
        #expect(recorder.beganCount >= 2 && recorder.beganCount <= 4, "\(recorder.beganCount) syncs")
        // Idle again: the next caller gets a sync of its own.
        await syncer.sync("/d")
        #expect(recorder.endedSyncs.count == recorder.beganCount)
    }

    @Test func directoriesAreSyncedSeparately() async {
        let syncer = DirectorySyncer(sync: { _ in })
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<50 { group.addTask { await syncer.sync("/d\(n % 5)") } }
        }
    }
}
