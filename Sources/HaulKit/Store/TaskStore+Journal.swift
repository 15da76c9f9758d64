import GRDB

/// One event in a session's durable journal (a task finished or failed), kept until a client acknowledges it.
package struct JournalEntry: Equatable, Sendable {
    /// Increases with each entry of the session, never reused.
    public var sequence: Int64
    public var taskID: String
    /// `"finished"` or `"failed"`; in a fleet also ``removedKind`` (with no payload), so that every node hears of it.
    public var kind: String

    /// The kind of a fleet's entry for a task removed.
    package static let removedKind = "removed"
    /// The task as it ended, in the daemon protocol's JSON.
    public var payload: String
    /// Unix seconds.
    public var createdAt: Double

    package init(sequence: Int64, taskID: String, kind: String, payload: String, createdAt: Double) {
        self.sequence = sequence
        self.taskID = taskID
        self.kind = kind
        self.payload = payload
        self.createdAt = createdAt
    }
}

extension TaskStore {
    /// Unacknowledged entries beyond this many are dropped, oldest first.
    public static let journalLimit: Int64 = 10_000

    /// Changes a task and appends a journal entry about the result in one transaction, so a crash keeps both
    /// or neither. Returns the task and the entry's sequence, or `nil` when there is no such task.
    public func update(
        id: String, journaling kind: String, payload: @escaping (StoredTask) -> String, _ change: (inout StoredTask) -> Void
    ) throws -> (task: StoredTask, sequence: Int64)? {
        let now = Self.now()
        return try write { db in
            guard let task = try Self.update(id: id, db, now: now, change) else { return nil }
            return (task, try Self.appendJournal(id: id, kind: kind, payload: payload(task), db, now: now))
        }
    }

    /// Appends an entry (dropping the oldest beyond ``journalLimit``); returns its sequence.
    static func appendJournal(id: String, kind: String, payload: String, _ db: Database, now: Double) throws -> Int64 {
        try db.cachedStatement(sql: "INSERT INTO journal (taskID, kind, payload, createdAt) VALUES (?, ?, ?, ?)")
            .execute(arguments: [id, kind, payload, now])
        let sequence = db.lastInsertedRowID
        try db.cachedStatement(sql: "DELETE FROM journal WHERE sequence <= ?").execute(arguments: [sequence - Self.journalLimit])
        return sequence
    }

    /// Unacknowledged entries with a sequence above `after`, oldest first.
    public func journal(after sequence: Int64 = 0) throws -> [JournalEntry] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT sequence, taskID, kind, payload, createdAt FROM journal WHERE sequence > ? ORDER BY sequence",
                arguments: [sequence]
            ).map { row in
                JournalEntry(sequence: row[0], taskID: row[1], kind: row[2], payload: row[3], createdAt: row[4])
            }
        }
    }

    /// Acknowledges (deletes) every entry about the tasks `ids`, whatever their sequence; returns how many there were.
    @discardableResult
    public func acknowledgeJournal(taskIDs ids: [String]) throws -> Int {
        try write { db in
            var count = 0
            // In groups, within SQLite's limit on bound parameters.
            for start in stride(from: 0, to: ids.count, by: 500) {
                let group = Array(ids[start..<min(start + 500, ids.count)])
                let marks = Array(repeating: "?", count: group.count).joined(separator: ",")
                try db.execute(sql: "DELETE FROM journal WHERE taskID IN (\(marks))", arguments: StatementArguments(group))
                count += db.changesCount
            }
            return count
        }
    }

    /// Acknowledges (deletes) every entry up to and including `sequence`; returns how many there were.
    @discardableResult
    public func acknowledgeJournal(through sequence: Int64) throws -> Int {
        try write { db in
            try db.execute(sql: "DELETE FROM journal WHERE sequence <= ?", arguments: [sequence])
            return db.changesCount
        }
    }
}
