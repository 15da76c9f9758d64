import GRDB

// TaskStore as a SessionStore: one session in one SQLite file, written by one process (no leases).
extension TaskStore: SessionStore {
    package var location: String { path }

    /// ``update(id:_:)``; a store of one process has no leases to check.
    package func update(id: String, lease: TaskLease?, _ change: (inout StoredTask) -> Void) throws -> StoredTask? {
        try update(id: id, change)
    }

    package func conclude(
        id: String, lease: TaskLease?, journaling kind: String?, payload: (StoredTask) -> String, finalRecord: StoredRecord?,
        _ change: (inout StoredTask) -> Void
    ) throws -> (old: TaskState, task: StoredTask, sequence: Int64?)? {
        let now = Self.now()
        return try write { db in
            try Self.conclude(id: id, kind: kind, payload: payload, finalRecord: finalRecord, change, db, now: now)
        }
    }

    /// Both in one transaction: one commit a file less in a batch, where each download's end frees the slot of the
    /// next one's start.
    package func conclude(
        id: String, lease: TaskLease?, journaling kind: String?, payload: (StoredTask) -> String, finalRecord: StoredRecord?,
        thenStarting next: String, _ change: (inout StoredTask) -> Void
    ) throws -> ConcludedAndStarted {
        let now = Self.now(), counts = countsStarts
        let result = try write { db in
            let concluded = try Self.conclude(id: id, kind: kind, payload: payload, finalRecord: finalRecord, change, db, now: now)
            return (concluded, try Self.start(id: next, db, now: now, counting: counts))
        }
        if let choice = result.1?.choice { choiceHints.keep(choice.key, choice.path) }
        return (result.0, result.1.map { ($0.task, $0.started) })
    }

    /// ``conclude(id:lease:journaling:payload:finalRecord:_:)`` within a write transaction.
    private static func conclude(
        id: String, kind: String?, payload: (StoredTask) -> String, finalRecord: StoredRecord?, _ change: (inout StoredTask) -> Void,
        _ db: Database, now: Double
    ) throws -> (old: TaskState, task: StoredTask, sequence: Int64?)? {
        var old: TaskState?
        guard let task = try update(id: id, db, now: now, { old = $0.state; change(&$0) }), let old else { return nil }
        try db.cachedStatement(sql: "DELETE FROM task_start WHERE id = ?").execute(arguments: [id])
        if let finalRecord { try db.cachedStatement(sql: saveRecordSQL).execute(arguments: [finalRecord.key, finalRecord.value]) }
        guard let kind else { return (old, task, nil) }
        return (old, task, try appendJournal(id: id, kind: kind, payload: payload(task), db, now: now))
    }

    // MARK: Resume records and name choices (tables `transfer` and `choice`, schema v4)

    static let saveRecordSQL = "INSERT OR REPLACE INTO transfer (key, record) VALUES (?, ?)"
    static let saveChoiceSQL = "INSERT OR REPLACE INTO choice (key, path) VALUES (?, ?)"

    package func record(key: String) throws -> String? {
        try readStatement { db in
            try String.fetchOne(try db.cachedStatement(sql: "SELECT record FROM transfer WHERE key = ?"), arguments: [key])
        }
    }

    package func save(_ record: StoredRecord, choice: StoredRecord?, fence: RecordFence?) throws {
        if let choice { choiceHints.forget(choice.key) }
        guard let choice else {
            // One statement: atomic and as durable as a transaction in SQLite's autocommit, without BEGIN and COMMIT.
            return try writeStatement { db in
                try db.cachedStatement(sql: Self.saveRecordSQL).execute(arguments: [record.key, record.value])
            }
        }
        try write { db in
            try db.cachedStatement(sql: Self.saveChoiceSQL).execute(arguments: [choice.key, choice.value])
            try db.cachedStatement(sql: Self.saveRecordSQL).execute(arguments: [record.key, record.value])
        }
    }

    package func removeRecord(key: String) throws {
        try writeStatement { db in
            try db.cachedStatement(sql: "DELETE FROM transfer WHERE key = ?").execute(arguments: [key])
        }
    }

    /// The name chosen under `key`: as read when its task started (``startIfWaiting(id:)``), the first time it is
    /// asked for after that start, else as stored now.
    package func choice(key: String) throws -> String? {
        if let hint = choiceHints.take(key) { return hint }
        return try readStatement { db in try Self.fetchChoice(key: key, db) }
    }

    static func fetchChoice(key: String, _ db: Database) throws -> String? {
        try String.fetchOne(try db.cachedStatement(sql: "SELECT path FROM choice WHERE key = ?"), arguments: [key])
    }

    package func setChoice(key: String, path: String?) throws {
        choiceHints.forget(key)
        try writeStatement { db in
            if let path {
                try db.cachedStatement(sql: Self.saveChoiceSQL).execute(arguments: [key, path])
            } else {
                try db.cachedStatement(sql: "DELETE FROM choice WHERE key = ?").execute(arguments: [key])
            }
        }
    }
}
