import Foundation
import GRDB
import Testing
@testable import HaulKit

/// Writes of many threads share commits, and each still gets its own outcome.
@Suite("Group commit of a store's writes")
struct GroupCommitTests {
    let sandbox = StoreSandbox()

    struct Refused: Error {}

    /// Holds the store's writer in a first write until `count` more writes wait, then lets them all go.
    private func whileAWriteIsRunning(_ store: TaskStore, thenWaitFor count: Int, _ start: @escaping @Sendable () -> Void) throws {
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread {
            _ = try? store.write { db in
                try db.execute(sql: "INSERT INTO scratch (name) VALUES ('first')")
                entered.signal()
                release.wait()
            }
        }.start()
        #expect(entered.wait(timeout: .now() + 60) == .success)
        // The first write is being committed: the others queue behind it.
        start()
        let deadline = Date().addingTimeInterval(60)
        while store.writes.counts.waiting < count, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        #expect(store.writes.counts.waiting == count, "the other writes wait while one is committing")
        release.signal()
    }

    @Test func writesThatWaitedAreCommittedTogetherEachWithItsOwnResult() throws {
        let store = try TaskStore(path: sandbox.storePath)
        try store.execute(sql: "CREATE TABLE scratch (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        let results = LockedResults()
        let done = DispatchGroup()
        try whileAWriteIsRunning(store, thenWaitFor: 8) {
            for index in 0..<8 {
                done.enter()
                Thread {
                    let id = try? store.write { db -> Int64 in
                        try db.execute(sql: "INSERT INTO scratch (name) VALUES (?)", arguments: ["w\(index)"])
                        return db.lastInsertedRowID
                    }
                    results.set(index, id)
                    done.leave()
                }.start()
            }
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        let ids = results.values
        #expect(ids.count == 8 && ids.allSatisfy { $0 != nil })
        #expect(Set(ids.compactMap { $0 }).count == 8, "each write got the id of its own row")
        #expect(try store.value(sql: "SELECT COUNT(*) FROM scratch") == "9")
        for (index, id) in ids.enumerated() {
            #expect(try store.value(sql: "SELECT name FROM scratch WHERE id = \(id ?? -1)") == "w\(index)")
        }
        #expect(store.writes.counts.groups >= 1, "the eight waiting writes were one commit")
    }

    @Test func aWriteThatFailsInAGroupFailsAloneAndTheOthersAreCommitted() throws {
        let store = try TaskStore(path: sandbox.storePath)
        try store.execute(sql: "CREATE TABLE scratch (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        let outcomes = LockedResults()
        let done = DispatchGroup()
        try whileAWriteIsRunning(store, thenWaitFor: 5) {
            for index in 0..<5 {
                done.enter()
                Thread {
                    do {
                        try store.write { db in
                            try db.execute(sql: "INSERT INTO scratch (name) VALUES (?)", arguments: ["w\(index)"])
                            if index == 2 { throw Refused() }
                        }
                        outcomes.set(index, 1)
                    } catch {
                        outcomes.set(index, -1)
                    }
                    done.leave()
                }.start()
            }
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(outcomes.values == [1, 1, -1, 1, 1], "only the failing write reports its own error")
        #expect(try store.value(sql: "SELECT COUNT(*) FROM scratch WHERE name = 'w2'") == "0", "its change was undone")
        #expect(try store.value(sql: "SELECT COUNT(*) FROM scratch") == "5", "the first write and the four others")
    }
}

/// Results written by several threads, by index.
final class LockedResults: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Int: Int64?] = [:]

    func set(_ index: Int, _ value: Int64?) {
        lock.lock()
        storage[index] = value
        lock.unlock()
    }

    var values: [Int64?] {
        lock.lock()
        defer { lock.unlock() }
        return storage.keys.sorted().map { storage[$0] ?? nil }
    }
}
