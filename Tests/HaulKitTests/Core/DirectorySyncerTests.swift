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
        let syncer = DirectorySyncer()
        let sync = { @Sendable in try await BlockingIO.run { syncer.sync(key: "/d") { recorder.sync() } } }
        // The first caller's sync is held: the others all ask while it runs.
        let first = Task { try await sync() }
        for _ in 0..<10_000 where recorder.beganCount == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let asked = recorder.beganCount
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await sync()
                    // A sync numbered above the ones begun when this caller asked has ended.
                    #expect(recorder.endedSyncs.contains { $0 > asked })
                }
            }
            // Released once all twenty wait (each on a blocking-I/O thread of its own), however busy the machine.
            for _ in 0..<10_000 where syncer.callersWaiting(for: "/d") < 21 { try await Task.sleep(for: .milliseconds(2)) }
            #expect(syncer.callersWaiting(for: "/d") == 21)
            recorder.gate.signal()
            try await group.waitForAll()
        }
        try await first.value
        // One for the first caller, then one for the twenty that waited: not twenty.
        #expect(recorder.beganCount == 2, "\(recorder.beganCount) syncs")
        // Idle again: the next caller gets a sync of its own.
        try await sync()
        #expect(recorder.endedSyncs.count == recorder.beganCount)
    }

    @Test func directoriesAreSyncedSeparately() async throws {
        let syncer = DirectorySyncer()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<50 { group.addTask { try await BlockingIO.run { syncer.sync(key: "/d\(n % 5)") {} } } }
            try await group.waitForAll()
        }
    }
}

@Suite struct DirectorySyncerPublishingTests {
    /// Files published from many threads at once: every one returns after a sync that began after it asked, and the
    /// syncs are shared.
    @Test func everyPublisherReturnsAfterASyncThatBeganAfterItAsked() async throws {
        final class Counter: @unchecked Sendable {
            let lock = NSLock()
            var began = 0
            var ended = 0
            var running = 0
            var overlapped = false
        }
        let counter = Counter()
        let syncer = DirectorySyncer(gathering: .milliseconds(2))
        let rounds = 200
        try await withThrowingTaskGroup(of: Void.self) { group in
            for publisher in 0..<16 {
                group.addTask {
                    try await BlockingIO.run {
                        for round in 0..<rounds {
                            syncer.willPublish(key: "/d")
                            if (publisher + round) % 3 == 0 { usleep(100) }
                            let before = counter.lock.withLock { counter.began }
                            syncer.syncPublished(key: "/d") {
                                counter.lock.withLock {
                                    counter.began += 1
                                    counter.running += 1
                                    counter.overlapped = counter.overlapped || counter.running > 1
                                }
                                usleep(50)
                                counter.lock.withLock {
                                    counter.ended += 1
                                    counter.running -= 1
                                }
                            }
                            let after = counter.lock.withLock { counter.ended }
                            #expect(after > before)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        // One sync of the folder at a time, and shared.
        #expect(!counter.overlapped)
        #expect(counter.began < 16 * rounds, "\(counter.began) syncs")
        #expect(syncer.callersWaiting(for: "/d") == 0)
    }

    /// Counts the syncs made.
    final class Syncs: @unchecked Sendable {
        private let lock = NSLock()
        private var made = 0
        func sync() { lock.withLock { made += 1 } }
        var count: Int { lock.withLock { made } }
    }

    /// Two files are being published into `key`'s folder, and the first has asked for its sync (and waits for the
    /// second): the task that waits.
    private static func oneOfTwoPublished(into key: String, _ syncer: DirectorySyncer, _ syncs: Syncs) async throws -> Task<Void, any Error> {
        syncer.willPublish(key: key)
        syncer.willPublish(key: key)
        let first = Task { try await BlockingIO.run { syncer.syncPublished(key: key) { syncs.sync() } } }
        for _ in 0..<10_000 where syncer.callersWaiting(for: key) < 1 { try await Task.sleep(for: .milliseconds(2)) }
        #expect(syncer.callersWaiting(for: key) == 1)
        return first
    }

    /// A sync asked for while another file is still being published into the folder waits for it: one sync covers
    /// both.
    @Test func aSyncWaitsForAFileStillBeingPublishedIntoTheFolder() async throws {
        let syncer = DirectorySyncer(gathering: .seconds(3600))
        let syncs = Syncs()
        let first = try await Self.oneOfTwoPublished(into: "/d", syncer, syncs)
        #expect(syncs.count == 0)
        try await BlockingIO.run { syncer.syncPublished(key: "/d") { syncs.sync() } }
        try await first.value
        #expect(syncs.count == 1)
    }

    /// A file given up (``DirectorySyncer/didNotPublish(into:)``) is not waited for, and the wait is bounded anyway.
    @Test func aFileGivenUpOrTooSlowIsNotWaitedFor() async throws {
        let forever = DirectorySyncer(gathering: .seconds(3600))
        let syncs = Syncs()
        let waiting = try await Self.oneOfTwoPublished(into: "/d", forever, syncs)
        forever.didNotPublish(key: "/d")
        try await waiting.value
        #expect(syncs.count == 1)

        let brief = DirectorySyncer(gathering: .milliseconds(20))
        brief.willPublish(key: "/e")
        brief.willPublish(key: "/e")
        // The other file never comes: the sync is made after the moment it was given.
        try await BlockingIO.run { brief.syncPublished(key: "/e") { syncs.sync() } }
        #expect(syncs.count == 2)
        #expect(brief.callersWaiting(for: "/e") == 0)
    }
}
