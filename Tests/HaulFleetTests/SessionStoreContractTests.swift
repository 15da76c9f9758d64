import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulFleet
@testable import HaulKit

/// The one suite of a session store, run against SQLite (``TaskStore``) and PostgreSQL (``PostgresSessionStore``):
/// the same tasks and transitions, journal, starts (what the crash-loop rules count) and resume records.
@Suite("SessionStore contract", .timeLimit(.minutes(5))) struct SessionStoreContractTests {
    @Test(.enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing); the suite then runs against SQLite only"))
    func postgresIsAmongTheBackends() {
        #expect(StoreBackend.tested.contains(.postgres))
    }

    @Test(arguments: StoreBackend.tested)
    func addCreatesAWaitingTaskWithAGeneratedID(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            let added = try await store.add([harness.newTask(1)])
            let (task, created) = try #require(added.first)
            #expect(created && !task.id.isEmpty && task.sequence > 0)
            #expect(task.state == .waiting && task.bytes == 0 && task.total == nil && task.filePath == nil && task.node == nil)
            #expect(task.createdAt == task.updatedAt && task.createdAt > 0)
            #expect(try await store.task(id: task.id) == task)
            #expect(try await store.count() == 1)
            #expect(try await store.hasWaitingOrRunningTasks())
        }
    }

    @Test(arguments: StoreBackend.tested)
    func theSameIDOrURLAndDestinationReturnsTheExistingTask(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            let first = try #require(try await store.add([harness.newTask(1, id: "movie")]).first)
            let sameID = try #require(try await store.add([harness.newTask(2, id: "movie")]).first)
            #expect(first.created && !sameID.created && sameID.task == first.task)
            let sameURL = try #require(try await store.add([harness.newTask(1, id: "other")]).first)
            #expect(!sameURL.created && sameURL.task.id == "movie")
            #expect(try await store.task(id: "other") == nil)
            var elsewhere = harness.newTask(1, id: "c")
            elsewhere.destination = .directory(harness.root + "/other")
            #expect(try await store.add([elsewhere]).first?.created == true)
            var asFile = harness.newTask(1)
            asFile.destination = .file(harness.root + "/downloads")
            #expect(try await store.add([asFile]).first?.created == true)
            #expect(try await store.count() == 3)
        }
    }

    @Test(arguments: StoreBackend.tested)
    func aBatchIsOneCallAndKeepsItsDuplicatesAndOrder(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            _ = try await store.add([harness.newTask(0, id: "old")])
            let results = try await store.add([
                harness.newTask(1, id: "a"), harness.newTask(2, id: "a"), harness.newTask(1, id: "b"), harness.newTask(0), harness.newTask(3),
            ])
            #expect(results.map(\.created) == [true, false, false, false, true])
            #expect(results.map(\.task.id).prefix(4) == ["a", "a", "a", "old"])
            let sequences = try await store.tasks().map(\.sequence)
            #expect(sequences.count == 3 && sequences == sequences.sorted() && Set(sequences).count == 3)
            #expect(try await store.add([]).isEmpty)
            // A batch of thousands (more than one statement's worth in PostgreSQL), in the order given.
            let many = (10..<2_510).map { harness.newTask($0, id: "m\($0)") }
            let added = try await store.add(many)
            #expect(added.allSatisfy(\.created) && added.map(\.task.id) == many.compactMap(\.id))
            #expect(zip(added, added.dropFirst()).allSatisfy { $0.task.sequence < $1.task.sequence })
        }
    }

    @Test(arguments: StoreBackend.tested)
    func invalidTasksAreRefusedAndABadOneAddsNothing(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            var relative = harness.newTask(1)
            relative.destination = .directory("downloads")
            var standardOutput = harness.newTask(2)
            standardOutput.destination = .standardOutput
            var invalid = harness.newTask(3)
            invalid.maxRetries = -1
            for task in [relative, standardOutput, harness.newTask(4, id: ""), invalid] {
                #expect(await thrownHaulError { try await store.add([task]) }?.kind == .usage)
            }
            #expect(await thrownHaulError { try await store.add([harness.newTask(5), relative]) }?.kind == .usage)
            #expect(try await store.count() == 0)
        }
    }

    @Test(arguments: StoreBackend.tested)
    func listingIsFIFOAndAStateListsByPriorityThenAge(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            for (n, priority) in [(1, 0), (2, 9), (3, 0), (4, 99), (5, 9)] {
                _ = try await store.add([harness.newTask(n, id: "t\(n)", priority: priority)])
            }
            _ = try await store.update(id: "t4") { $0.state = .finished }
            #expect(try await store.tasks().map(\.id) == ["t1", "t2", "t3", "t4", "t5"])
            #expect(try await store.tasks(in: .waiting).map(\.id) == ["t2", "t5", "t1", "t3"])
            #expect(try await store.tasks(in: .waiting, limit: 2).map(\.id) == ["t2", "t5"])
            #expect(try await store.tasks(in: .finished).map(\.id) == ["t4"])
            #expect(try await store.tasks(in: .failed).isEmpty)
            let all = try await store.tasks()
            #expect(try await store.tasks(after: 0, limit: 2).map(\.id) == ["t1", "t2"])
            #expect(try await store.tasks(after: all[1].sequence, limit: 10).map(\.id) == ["t3", "t4", "t5"])
            #expect(try await store.tasks(after: all[4].sequence, limit: 10).isEmpty)
            #expect(try await store.tasks(ids: ["t5", "nope", "t1", "t5"]).map(\.id) == ["t1", "t5"])
            try await store.remove(ids: ["t2", "unknown"])
            try await store.remove(ids: [])
            #expect(try await store.tasks().map(\.id) == ["t1", "t3", "t4", "t5"])
            let again = try #require(try await store.add([harness.newTask(2, id: "t2")]).first)
            #expect(again.created && again.task.sequence > all[4].sequence, "a removed task can be added again, at the end")
        }
    }

    @Test(arguments: StoreBackend.tested)
    func anUpdateChangesWhereATaskStandsNeverWhatItIs(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            var new = harness.newTask(1, id: "t")
            new.headers = ["Authorization": "Bearer a\"b\\c", "X-Empty": ""]
            new.checksum = Checksum(algorithm: .sha256, hex: String(repeating: "ab", count: 32))
            new.segments = 4
            new.rateLimit = 4096
            let original = try #require(try await store.add([new]).first?.task)
            let updated = try #require(try await store.update(id: "t") { task in
                task.state = .paused
                task.bytes = 1234
                task.total = 5000
                task.filePath = "/tmp/x.bin"
                task.priority = 3
                task.id = "hijacked"
                task.sequence = 99
                task.createdAt = 0
                task.spec.url = URL(string: "https://example.com/other")!
                task.node = "intruder"
                task.epoch = 42
            })
            #expect(updated.id == "t" && updated.sequence == original.sequence && updated.createdAt == original.createdAt)
            #expect(updated.spec == new.spec && updated.node == nil && updated.epoch == original.epoch)
            #expect(updated.state == .paused && updated.bytes == 1234 && updated.total == 5000 && updated.priority == 3)
            #expect(updated.updatedAt >= original.updatedAt)
            #expect(try await store.task(id: "t") == updated)
            #expect(try await store.task(id: "hijacked") == nil)
            #expect(try await store.update(id: "missing") { $0.state = .failed } == nil)
            let failure = HaulError(.httpStatus, "http://h/f answered 404 Not Found", reason: .httpStatus(404, url: "http://h/f"))
            let failed = try #require(try await store.update(id: "t") { $0.fail(failure) })
            #expect(failed.state == .failed && failed.error == failure && failed.error?.reason == failure.reason)
            _ = try await store.update(id: "t") { $0.record(nil) }
            #expect(try await store.task(id: "t")?.error == nil)

            for n in 2...4 { _ = try await store.add([harness.newTask(n, id: "t\(n)")]) }
            let paused = try await store.updateAll(ids: ["t3", "nope", "t2"]) { $0.state = .paused }
            #expect(paused.map(\.id) == ["t3", "t2"])
            #expect(try await store.tasks().map(\.state) == [.failed, .paused, .paused, .waiting])
            #expect(try await store.updateAll(ids: []) { $0.state = .failed }.isEmpty)
        }
    }

    @Test(arguments: StoreBackend.tested)
    func everythingSurvivesReopening(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            var before: [StoredTask] = []
            var spec = harness.newTask(1, id: "t1")
            spec.headers = ["Cookie": "k=v", "Accept": "ünïcödé ✓"]
            spec.completionCommand = "echo hi"
            do {
                let store = try await harness.open()
                _ = try await store.add([spec, harness.newTask(2, id: "t2"), harness.newTask(3, id: "t3")])
                _ = try await store.update(id: "t2") { $0.state = .paused; $0.bytes = 77 }
                _ = try await store.update(id: "t3") { $0.state = .finished; $0.filePath = "/done/3.bin" }
                before = try await store.tasks()
            }
            let store = try await harness.open()
            #expect(try await store.tasks() == before)
            #expect(try await store.task(id: "t1")?.spec == spec.spec)
            let later = try #require(try await store.add([harness.newTask(4)]).first?.task)
            #expect(later.sequence > before.map(\.sequence).max() ?? 0)
        }
    }

    // MARK: Starts and conclusions

    @Test(arguments: StoreBackend.tested)
    func startsAreCountedUntilARunEndsWhatTheCrashLoopRuleReads(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            _ = try await store.add([harness.newTask(1, id: "a"), harness.newTask(2, id: "b")])
            let started = try #require(try await store.startIfWaiting(id: "a"))
            #expect(started.started && started.task.state == .running)
            #expect(try await store.task(id: "a")?.state == .running)
            let again = try #require(try await store.startIfWaiting(id: "a"))
            #expect(!again.started && again.task.state == .running, "a task no longer waiting is not started")
            #expect(try await store.startIfWaiting(id: "missing") == nil)
            #expect(try await store.unendedStarts(ids: ["a", "b", "missing"]) == ["a": 1])
            // The process died: the next one restores it and starts it again, and dies too.
            _ = try await store.update(id: "a") { $0.state = .waiting }
            _ = try await store.startIfWaiting(id: "a")
            #expect(try await store.unendedStarts(ids: ["a"]) == ["a": 2])
            // Reopened (another process): still counted.
            let reopened = try await harness.open()
            #expect(try await reopened.unendedStarts(ids: ["a"]) == ["a": 2])
            try await reopened.clearStarts(ids: ["a"])
            #expect(try await reopened.unendedStarts(ids: ["a"]).isEmpty)
            _ = try await reopened.startIfWaiting(id: "b")
            try await reopened.remove(ids: ["b"])
            #expect(try await reopened.unendedStarts(ids: ["b"]).isEmpty, "a removed task's starts go with it")
        }
    }

    @Test(arguments: StoreBackend.tested)
    func aConclusionThenAStartEndsOneTaskAndStartsTheOneTakingItsSlot(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            _ = try await store.add([harness.newTask(1, id: "a"), harness.newTask(2, id: "b"), harness.newTask(3, id: "c")])
            _ = try await store.startIfWaiting(id: "a")
            let final = StoredRecord(key: "k-a", value: "{\"final\":true}")
            let both = try await store.conclude(
                id: "a", lease: nil, journaling: "finished", payload: { "{\"id\":\"\($0.id)\"}" }, finalRecord: final,
                thenStarting: "b", { $0.state = .finished; $0.bytes = 10 })
            let concluded = try #require(both.concluded)
            #expect(concluded.old == .running && concluded.task.state == .finished && concluded.task.bytes == 10)
            #expect(concluded.sequence != nil)
            let journaled = try await store.journal().map(\.taskID)
            #expect(journaled == ["a"])
            let next = try #require(both.next)
            #expect(next.started && next.task.id == "b" && next.task.state == .running)
            #expect(try await store.task(id: "a")?.state == .finished)
            #expect(try await store.task(id: "b")?.state == .running)
            #expect(try await store.unendedStarts(ids: ["a", "b"]) == ["b": 1], "the end forgets a's start, b's start is counted")
            #expect(try store.record(key: "k-a") == final.value)
            // A task no longer waiting is not started; a missing one ends nothing and the next still starts.
            let notWaiting = try await store.conclude(
                id: "b", lease: nil, journaling: nil, payload: { _ in "" }, finalRecord: nil, thenStarting: "a", { $0.state = .failed })
            #expect(notWaiting.concluded?.task.state == .failed)
            #expect(notWaiting.next.map { !$0.started && $0.task.state == .finished } == true)
            let missing = try await store.conclude(
                id: "missing", lease: nil, journaling: nil, payload: { _ in "" }, finalRecord: nil, thenStarting: "c", { $0.state = .failed })
            #expect(missing.concluded == nil && missing.next?.started == true)
            let none = try await store.conclude(
                id: "c", lease: nil, journaling: nil, payload: { _ in "" }, finalRecord: nil, thenStarting: "missing", { $0.state = .finished })
            #expect(none.concluded?.task.state == .finished && none.next == nil)
        }
    }

    @Test(arguments: StoreBackend.tested)
    func aConclusionChangesTheTaskForgetsItsStartWritesTheFinalRecordAndJournalsInOneGo(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            _ = try await store.add([harness.newTask(1, id: "a"), harness.newTask(2, id: "b")])
            _ = try await store.startIfWaiting(id: "a")
            let final = StoredRecord(key: "k-a", value: "{\"final\":true}")
            let concluded = try #require(try await store.conclude(
                id: "a", lease: nil, journaling: "finished", payload: { "{\"id\":\"\($0.id)\",\"state\":\"\($0.state.rawValue)\"}" },
                finalRecord: final, { $0.state = .finished; $0.bytes = 10 }))
            #expect(concluded.old == .running && concluded.task.state == .finished && concluded.task.bytes == 10)
            let sequence = try #require(concluded.sequence)
            #expect(try await store.task(id: "a")?.state == .finished)
            #expect(try await store.unendedStarts(ids: ["a"]).isEmpty)
            #expect(try store.record(key: "k-a") == final.value)
            let entries = try await store.journal()
            #expect(entries.map(\.taskID) == ["a"] && entries.first?.sequence == sequence)
            #expect(entries.first?.payload == "{\"id\":\"a\",\"state\":\"finished\"}", "the payload sees the changed task")
            #expect(entries.first?.kind == "finished")
            // Without journaling: no entry, no sequence.
            let quiet = try #require(try await store.conclude(
                id: "b", lease: nil, journaling: nil, payload: { _ in "x" }, finalRecord: nil, { $0.state = .failed }))
            #expect(quiet.old == .waiting && quiet.sequence == nil)
            #expect(try await store.journal().count == 1)
            #expect(try await store.conclude(id: "missing", lease: nil, journaling: "failed", payload: { _ in "{}" }, finalRecord: nil, { _ in }) == nil)
            #expect(try await store.journal().count == 1, "no entry for a task that does not exist")
        }
    }

    // MARK: Journal

    @Test(arguments: StoreBackend.tested)
    func theJournalIsAcknowledgedByTaskOrUpToASequenceAndNeverReusesOne(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            let ids = (0..<1_200).map { "t\($0)" }
            _ = try await store.add(ids.enumerated().map { harness.newTask($0.offset, id: $0.element) })
            var sequences: [Int64] = []
            for id in ids {
                let concluded = try await store.conclude(
                    id: id, lease: nil, journaling: "failed", payload: { _ in "{}" }, finalRecord: nil, { $0.state = .failed })
                sequences.append(try #require(concluded?.sequence))
            }
            #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count)
            #expect(try await store.journal(after: sequences[1_198]).map(\.taskID) == ["t1199"])
            // More ids than one SQLite statement may bind, and one that has no entry.
            let shown = ids.filter { !$0.hasSuffix("0") } + ["never-journaled"]
            #expect(try await store.acknowledgeJournal(taskIDs: shown) == shown.count - 1)
            #expect(try await store.journal().map(\.taskID) == ids.filter { $0.hasSuffix("0") })
            #expect(try await store.acknowledgeJournal(taskIDs: shown) == 0, "acknowledging twice changes nothing")
            #expect(try await store.acknowledgeJournal(taskIDs: []) == 0)
            #expect(try await store.acknowledgeJournal(through: sequences[500]) == 51)
            #expect(try await store.acknowledgeJournal(through: sequences[500]) == 0)
            #expect(try await store.acknowledgeJournal(through: sequences.last ?? 0) == 69)
            // After everything was acknowledged, and in another process: a new entry gets a new sequence.
            let reopened = try await harness.open()
            _ = try await reopened.update(id: "t5") { $0.state = .running }
            let next = try await reopened.conclude(
                id: "t5", lease: nil, journaling: "finished", payload: { _ in "{}" }, finalRecord: nil, { $0.state = .finished })
            #expect((next?.sequence ?? 0) > (sequences.last ?? 0))
        }
    }

    // MARK: Resume records and name choices

    @Test(arguments: StoreBackend.tested)
    func recordsAndChoicesAreKeptReplacedAndRemoved(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            #expect(try store.record(key: "k") == nil)
            try store.save(StoredRecord(key: "k", value: "{\"offset\":1}"), choice: nil, fence: nil)
            try store.save(StoredRecord(key: "k", value: "{\"offset\":2}"), choice: nil, fence: nil)
            #expect(try store.record(key: "k") == "{\"offset\":2}")
            try store.save(StoredRecord(key: "k2", value: "{}"), choice: StoredRecord(key: "dir-key", value: "/d/name.bin"), fence: nil)
            #expect(try store.record(key: "k2") == "{}" && store.choice(key: "dir-key") == "/d/name.bin")
            try store.setChoice(key: "dir-key", path: "/d/other.bin")
            #expect(try store.choice(key: "dir-key") == "/d/other.bin")
            try store.setChoice(key: "dir-key", path: nil)
            #expect(try store.choice(key: "dir-key") == nil)
            try store.removeRecord(key: "k")
            try store.removeRecord(key: "never")
            #expect(try store.record(key: "k") == nil && store.record(key: "k2") == "{}")
            let reopened = try await harness.open()
            #expect(try reopened.record(key: "k2") == "{}", "kept across processes")
        }
    }

    /// The records a session's downloads use, through ``SessionRecords``, on either store: a saved record is what a
    /// rerun continues from, and the final one waits for the conclusion.
    @Test(arguments: StoreBackend.tested)
    func sessionRecordsWorkOnEitherStore(_ backend: StoreBackend) async throws {
        try await StoreHarness.with(backend) { harness in
            let store = try await harness.open()
            let records = SessionRecords(store: store, files: TransferRecordStore(home: HaulHome(path: harness.root + "/home")))
            let destination = harness.root + "/a.bin"
            var record = TransferRecord(
                url: "https://example.com/a", destinationPath: destination, partialPath: destination + ".haul-part", offset: 5,
                totalLength: 10, state: .running, adopted: false)
            try records.save(record, durable: true)
            #expect(try records.load(record.key) == record)
            record.state = .finished
            record.offset = 10
            #expect(records.deferFinal(record))
            #expect(try records.load(record.key)?.offset == 5, "the final record waits")
            let task = try #require(try await store.add([DownloadRequest(url: URL(string: "https://example.com/a")!, destination: .file(destination))]).first?.task)
            _ = try await store.conclude(
                id: task.id, lease: nil, journaling: nil, payload: { _ in "" }, finalRecord: records.takeFinal(destinationPath: destination),
                { $0.state = .finished })
            #expect(try records.load(record.key) == record)
            #expect(records.takeFinal(destinationPath: destination) == nil, "written once")
        }
    }
}
