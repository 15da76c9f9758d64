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
            var old: TaskState?
            guard let task = try Self.update(id: id, db, now: now, { old = $0.state; change(&$0) }), let old else { return nil }
            try db.cachedStatement(sql: "DELETE FROM task_start WHERE id = ?").execute(arguments: [id])
            if let finalRecord { try db.cachedStatement(sql: Self.saveRecordSQL).execute(arguments: [finalRecord.key, finalRecord.value]) }
            guard let kind else { return (old, task, nil) }
            return (old, task, try Self.appendJournal(id: id, kind: kind, payload: payload(task), db, now: now))
        }
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

    package func choice(key: String) throws -> String? {
        try readStatement { db in
            try String.fetchOne(try db.cachedStatement(sql: "SELECT path FROM choice WHERE key = ?"), arguments: [key])
        }
    }

    package func setChoice(key: String, path: String?) throws {
        try writeStatement { db in
            if let path {
                try db.cachedStatement(sql: Self.saveChoiceSQL).execute(arguments: [key, path])
            } else {
                try db.cachedStatement(sql: "DELETE FROM choice WHERE key = ?").execute(arguments: [key])
            }
        }
    }
}
