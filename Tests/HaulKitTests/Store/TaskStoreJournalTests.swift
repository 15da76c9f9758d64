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
            // Undo v5, v4, v3 and v2, as a store written by an older haul would be.
            try store.execute(sql: """
                ALTER TABLE task ADD COLUMN headers TEXT NOT NULL DEFAULT '[]'; ALTER TABLE task ADD COLUMN checksum TEXT;
                ALTER TABLE task ADD COLUMN segments INTEGER; ALTER TABLE task ADD COLUMN options TEXT;
                ALTER TABLE task DROP COLUMN spec; DELETE FROM grdb_migrations WHERE identifier = 'v5';
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
            // Undo v5, v4 and v3, as a store written by an earlier haul would be.
            try store.execute(sql: """
                ALTER TABLE task ADD COLUMN headers TEXT NOT NULL DEFAULT '[]'; ALTER TABLE task ADD COLUMN checksum TEXT;
                ALTER TABLE task ADD COLUMN segments INTEGER; ALTER TABLE task ADD COLUMN options TEXT;
                ALTER TABLE task DROP COLUMN spec; DELETE FROM grdb_migrations WHERE identifier = 'v5';
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

    @Test func aVersion4StoreIsMigratedIntoOneSpecColumn() throws {
        let checksum = "sha256:" + String(repeating: "ab", count: 32)
        do {
            let store = try TaskStore(path: sandbox.storePath)
            _ = try store.add(sandbox.newTask(1, id: "plain"))
            _ = try store.add(sandbox.newTask(2, id: "rich"))
            _ = try store.add(sandbox.newTask(3, id: "broken"))
            // The columns of schema 4, filled as haul 4 wrote them (TaskOptions as JSON, headers as JSON).
            try store.execute(sql: """
                \(Self.undoVersion5)
                UPDATE task SET headers = '[{"name":"Cookie","value":"k=v"}]', checksum = '\(checksum)', segments = 4,
                    options = '{"overwrite":true,"continuePartial":false,"rateLimit":4096,"allowInsecureRedirects":false,"keepsRemoteTime":false,"completionCommand":"echo hi","proxies":{"noProxy":"localhost","environment":{}}}'
                    WHERE id = 'rich';
                UPDATE task SET checksum = 'nope' WHERE id = 'broken';
                PRAGMA user_version = 4
                """)
        }
        let store = try TaskStore(path: sandbox.storePath)
        #expect(try store.value(sql: "PRAGMA user_version") == "5")
        let plain = try #require(try store.task(id: "plain")?.spec)
        #expect(plain == sandbox.newTask(1).spec)
        let rich = try #require(try store.task(id: "rich")?.spec)
        var expected = sandbox.newTask(2).spec
        expected.headers = ["Cookie": "k=v"]
        expected.checksum = try Checksum(parsing: checksum)
        expected.segments = 4
        expected.overwrite = true
        expected.rateLimit = 4096
        expected.keepsRemoteTime = false
        expected.completionCommand = "echo hi"
        expected.proxies = ProxyChoice(noProxy: "localhost")
        #expect(rich == expected)
        // A row that could not describe a download stays unreadable (reported as damaged), not made up.
        #expect(try store.value(sql: "SELECT spec FROM task WHERE id = 'broken'") == nil)
        #expect(StoreSandbox.thrown { try store.task(id: "broken") }?.message.contains("damaged") == true)
    }

    static let undoVersion5 = """
        ALTER TABLE task ADD COLUMN headers TEXT NOT NULL DEFAULT '[]'; ALTER TABLE task ADD COLUMN checksum TEXT;
        ALTER TABLE task ADD COLUMN segments INTEGER; ALTER TABLE task ADD COLUMN options TEXT;
        ALTER TABLE task DROP COLUMN spec; DELETE FROM grdb_migrations WHERE identifier = 'v5';
        """

    @Test func aTasksSpecIsStoredAndKeptByUpdates() throws {
        let store = try TaskStore(path: sandbox.storePath)
        var new = sandbox.newTask(1, id: "o")
        new.overwrite = true
        new.rateLimit = 4096
        _ = try store.add(new)
        _ = try store.update(id: "o") { $0.bytes = 10 }
        #expect(try TaskStore(path: sandbox.storePath).task(id: "o")?.spec == new.spec)
        _ = try store.add(sandbox.newTask(2, id: "plain"))
        #expect(try store.value(sql: "SELECT spec FROM task WHERE id = 'plain'")?.contains("options") == false, "defaults are left out")
        var invalid = sandbox.newTask(3)
        invalid.maxRetries = -1
        #expect(StoreSandbox.thrown { try store.add(invalid) }?.kind == .usage)
    }
}
