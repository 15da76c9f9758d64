import Foundation
import GRDB

/// The writes to one store, made in as few transactions as keep each caller's guarantees (group commit).
///
/// A caller that writes while another write is being committed waits; the writes that gathered meanwhile are then
/// made together, in one transaction, by one of their callers. Each caller still returns only after its own
/// changes are committed, with its own result. Should any of a group fail (or its commit), the group is rolled back
/// and each of its writes made again alone, in its own transaction, as if none had been grouped: one caller's error
/// never undoes or fails another's write.
///
/// Many downloads ending at once in one session then cost a few commits instead of several each: each commit writes
/// the same few pages of the task table again, and its locking and WAL bookkeeping are most of a small write's cost.
///
/// A body must only change the database (it may run twice: grouped, then alone) and must not write to the store
/// itself.
final class GroupCommit: @unchecked Sendable {
    private let pool: DatabasePool
    private let condition = NSCondition()
    /// Writes waiting for the next commit, the first of them to lead it (guarded by `condition`).
    private var queue: [PendingWrite] = []
    /// Whether a caller is committing a group now (guarded by `condition`).
    private var committing = false
    /// How many groups of more than one write were committed together (guarded by `condition`; for tests).
    private var groupsCommitted = 0

    init(pool: DatabasePool) {
        self.pool = pool
    }

    /// Runs `body` in a transaction, possibly shared with writes of other threads, and returns once it is
    /// committed. With `transaction: false`, a body that executes one statement runs in SQLite's autocommit when
    /// it is alone (see ``TaskStore/writeStatement(_:)``).
    func write<T>(transaction: Bool = true, _ body: (Database) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            var outcome: Result<T, any Error>?
            let pending = PendingWrite(
                grouped: { db in outcome = .success(try body(db)) },
                alone: { pool in
                    outcome = Result { transaction ? try Self.transaction(pool, body) : try pool.writeWithoutTransaction(body) }
                })
            submit(pending)
            guard let outcome else { throw HaulError(.fileSystem, "a write to the session store was not made") }
            return try outcome.get()
        }
    }

    /// Queues `pending` and returns once it is done: committed by this caller, leading a group, or by another.
    ///
    /// A caller that waits is woken once, by its own semaphore: when its write is done, or when it is to lead the
    /// next group (the first of those that queued while a group was committed). A broadcast to every waiter on each
    /// commit put a thread to sleep and woke it again for nothing, a share of a small write's cost.
    private func submit(_ pending: PendingWrite) {
        condition.lock()
        guard committing else {
            committing = true
            condition.unlock()
            return lead([pending])
        }
        queue.append(pending)
        condition.unlock()
        pending.wake.wait()
        // Woken done, or to lead: then the writes queued since (this one first) are its group.
        if pending.done { return }
        condition.lock()
        let group = queue
        queue.removeAll(keepingCapacity: true)
        condition.unlock()
        lead(group)
    }

    /// Commits `group`, whose first write is the caller's own (`committing` is set: the caller leads), wakes each of
    /// its other writers, then hands the lead to the first write queued meanwhile, or ends it.
    private func lead(_ group: [PendingWrite]) {
        let grouped = commit(group)
        condition.lock()
        if grouped { groupsCommitted += 1 }
        let next = queue.first
        if next == nil { committing = false }
        condition.unlock()
        // Each caller's body escapes only for as long as its `write` runs: let go of them all before any returns.
        for write in group { write.forgetBody() }
        for write in group.dropFirst() {
            write.done = true
            write.wake.signal()
        }
        next?.wake.signal()
    }

    /// Commits `group`: together when it has several writes and none fails, else each alone. Whether together.
    private func commit(_ group: [PendingWrite]) -> Bool {
        if group.count > 1 {
            do {
                try Self.transaction(pool) { db in
                    for write in group { try write.grouped?(db) }
                }
                return true
            } catch {
                // Rolled back as a whole: each is made alone below, and reports its own outcome.
            }
        }
        for write in group { write.alone?(pool) }
        return false
    }

    /// Runs `body` in one transaction of the writer connection, begun and ended by cached statements: GRDB's own
    /// transactions prepare their BEGIN and COMMIT again each time, a visible share of a small write.
    private static func transaction<T>(_ pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
            do {
                let value = try body(db)
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
                return value
            } catch {
                // SQLite may have rolled back already (some errors do): then there is nothing to end.
                if db.isInsideTransaction { try? db.rollback() }
                throw error
            }
        }
    }

    /// The writes waiting for a commit, and how many groups were committed together so far (for tests).
    var counts: (waiting: Int, groups: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (queue.count, groupsCommitted)
    }
}

/// One caller's write, as its group runs it and as it runs alone. `done` is set before `wake` is signalled, and read
/// after it is waited for.
private final class PendingWrite {
    private(set) var grouped: ((Database) throws -> Void)?
    private(set) var alone: ((DatabasePool) -> Void)?
    let wake = DispatchSemaphore(value: 0)
    var done = false

    init(grouped: @escaping (Database) throws -> Void, alone: @escaping (DatabasePool) -> Void) {
        self.grouped = grouped
        self.alone = alone
    }

    /// Once committed, by the group's leader, before the caller is woken.
    func forgetBody() {
        grouped = nil
        alone = nil
    }
}
