import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite("TaskStore journal") struct TaskStoreJournalTests {
    let sandbox = StoreSandbox()

    @Test func appendsWithTheTaskChangeAndAcknowledgesUpToASequence() throws {
        let store = try TaskStore(path: sandbox.storePath)
        let a = try store.add(sandbox.newTask(1, id: "a")).task, b = try store.add(sandbox.newTask(2, id: "b")).task
        let first = try #require(try store.update(id: a.id, journaling: "finished", payload: { "{\"id\":\"\($0.id)\",\"state\":\"\($0.state.rawValue)\"}" }) {
            $0.state = .finished
        })
        #expect(first.task.state == .finished)
        #expect(try store.task(id: "a")?.state == .finished, "the change is stored with the entry")
        let second = try #require(try store.update(id: b.id, journaling: "failed", payload: { _ in "{}" }) { $0.state = .failed })
        #expect(second.sequence > first.sequence)
        #expect(try store.journal().map(\.taskID) == ["a", "b"])
        #expect(try store.journal().first?.payload == "{\"id\":\"a\",\"state\":\"finished\"}", "the payload sees the changed task")
        #expect(try store.journal(after: first.sequence).map(\.kind) == ["failed"])

        #expect(try store.acknowledgeJournal(through: first.sequence) == 1)
        #expect(try store.journal().map(\.taskID) == ["b"])
        #expect(try store.acknowledgeJournal(through: first.sequence) == 0, "acknowledging twice changes nothing")
        #expect(try store.update(id: "missing", journaling: "finished", payload: { _ in "{}" }) { $0.state = .finished } == nil)
        #expect(try store.journal().count == 1, "no entry for a task that does not exist")
    }

    @Test func acknowledgingTasksLeavesTheOthersEntries() throws {
        let store = try TaskStore(path: sandbox.storePath)
        let ids = (0..<1_200).map { "t\($0)" }
        for (index, id) in ids.enumerated() { _ = try store.add(sandbox.newTask(index, id: id)) }
        for id in ids {
            _ = try store.update(id: id, journaling: "failed", payload: { _ in "{}" }) { $0.state = .failed }
        }
        // More ids than one SQLite statement may bind, and one that has no entry.
        let shown = ids.filter { !$0.hasSuffix("0") } + ["never-journaled"]
        #expect(try store.acknowledgeJournal(taskIDs: shown) == shown.count - 1)
        let left = try store.journal().map(\.taskID)
        #expect(left == ids.filter { !shown.contains($0) })
        #expect(try store.acknowledgeJournal(taskIDs: []) == 0)
        #expect(try store.acknowledgeJournal(taskIDs: shown) == 0, "acknowledging twice changes nothing")
    }

    @Test func sequencesAreNeverReusedAfterAcknowledgement() throws {
        let store = try TaskStore(path: sandbox.storePath)
        _ = try store.add(sandbox.newTask(1, id: "a"))
        let first = try #require(try store.update(id: "a", journaling: "failed", payload: { _ in "{}" }) { $0.state = .failed })
        try store.acknowledgeJournal(through: first.sequence)
        let reopened = try TaskStore(path: sandbox.storePath)
        let second = try #require(try reopened.update(id: "a", journaling: "finished", payload: { _ in "{}" }) { $0.state = .finished })
        #expect(second.sequence > first.sequence)
    }

    @Test func aVersion1StoreIsMigratedKeepingItsTasks() throws {
        do {
            let store = try TaskStore(path: sandbox.storePath)
            _ = try store.add(sandbox.newTask(1, id: "kept"))
            // Undo v4, v3 and v2, as a store written by an older haul would be.
            try store.execute(sql: """
                DROP TABLE transfer; DROP TABLE choice; DELETE FROM grdb_migrations WHERE identifier = 'v4';
                ALTER TABLE task DROP COLUMN errorReason; DELETE FROM grdb_migrations WHERE identifier = 'v3';
                DROP TABLE journal; ALTER TABLE task DROP COLUMN options; DELETE FROM grdb_migrations WHERE identifier = 'v2';
                PRAGMA user_version = 1
                """)
        }
        let store = try TaskStore(path: sandbox.storePath)
        #expect(try store.task(id: "kept") != nil)
        #expect(try store.value(sql: "PRAGMA user_version") == "\(TaskStore.schemaVersion)")
        #expect(try store.journal().isEmpty)
    }

    @Test func aVersion2StoreIsMigratedAndAFailuresReasonIsKept() throws {
        do {
            let store = try TaskStore(path: sandbox.storePath)
            _ = try store.add(sandbox.newTask(1, id: "old"))
            _ = try store.update(id: "old") { $0.fail(HaulError(.network, "connection reset")) }
            // Undo v4 and v3, as a store written by an earlier haul would be.
            try store.execute(sql: """
                DROP TABLE transfer; DROP TABLE choice; DELETE FROM grdb_migrations WHERE identifier = 'v4';
                ALTER TABLE task DROP COLUMN errorReason; DELETE FROM grdb_migrations WHERE identifier = 'v3'; PRAGMA user_version = 2
                """)
        }
        let store = try TaskStore(path: sandbox.storePath)
        let old = try #require(try store.task(id: "old"))
        #expect(old.error == HaulError(.network, "connection reset"), "an older failure keeps its kind and message, without a reason")
        #expect(old.error?.reason == .other)

        _ = try store.add(sandbox.newTask(2, id: "new"))
        let failure = HaulError(.httpStatus, "http://h/f answered 404 Not Found", reason: .httpStatus(404, url: "http://h/f"))
        _ = try store.update(id: "new") { $0.fail(failure) }
        let reopened = try TaskStore(path: sandbox.storePath)
        let stored = try #require(try reopened.task(id: "new"))
        #expect(stored.state == .failed)
        #expect(stored.error?.reason == .httpStatus(404, url: "http://h/f"), "the typed reason survives a reopen")
        #expect(stored.error?.message == failure.message)
        _ = try reopened.update(id: "new") { $0.record(nil) }
        #expect(try reopened.task(id: "new")?.error == nil)
        #expect(try reopened.task(id: "new")?.errorReason == nil)
    }

    @Test func taskOptionsAreStoredAndKeptByUpdates() throws {
        let store = try TaskStore(path: sandbox.storePath)
        var new = sandbox.newTask(1, id: "o")
        new.options.overwrite = true
        new.options.rateLimit = 4096
        _ = try store.add(new)
        _ = try store.update(id: "o") { $0.bytes = 10 }
        #expect(try TaskStore(path: sandbox.storePath).task(id: "o")?.options == new.options)
        _ = try store.add(sandbox.newTask(2, id: "plain"))
        #expect(try store.value(sql: "SELECT options FROM task WHERE id = 'plain'") == nil, "defaults are stored as NULL")
        var invalid = sandbox.newTask(3)
        invalid.options.maxRetries = -1
        #expect(StoreSandbox.thrown { try store.add(invalid) }?.kind == .usage)
    }
}
