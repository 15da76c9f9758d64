import GRDB

// Which tasks a process started and did not see end: a side table, `task_start`, beside the versioned schema.
// It is advisory (a count per task that a daemon reads when it starts), so an older haul may ignore it and still
// open the file: adding it does not bump the schema version, which would lock older builds out of the store.
extension TaskStore {
    static let startsTableSQL = """
        CREATE TABLE IF NOT EXISTS task_start (
            id TEXT PRIMARY KEY NOT NULL,
            unended INTEGER NOT NULL
        )
        """

    /// Creates the side table when missing (called when the store opens).
    static func prepareStarts(_ pool: DatabasePool) throws {
        try pool.write { db in try db.execute(sql: startsTableSQL) }
    }

    /// Moves the task `id` to `running` if it is waiting, and counts one more start of it that has not ended, in one
    /// transaction: written before the transfer begins, so that a process that dies during it leaves the count behind.
    /// Returns the task as stored and whether it was started (a task no longer waiting is returned unchanged), or
    /// `nil` when there is no such task.
    ///
    /// A `--dir` task's remembered name is read in the same transaction and kept for its download's first look
    /// (``choice(key:)``): one read transaction less per file, the largest share of a tiny file's store reads.
    public func startIfWaiting(id: String) throws -> (task: StoredTask, started: Bool)? {
        let now = Self.now()
        let counts = countsStarts
        guard let result = try write({ db in try Self.start(id: id, db, now: now, counting: counts) }) else { return nil }
        // Only once committed: a body that runs twice (grouped, then alone) keeps no hint of a rolled-back read.
        if let choice = result.choice { choiceHints.keep(choice.key, choice.path) }
        return (result.task, result.started)
    }

    /// ``startIfWaiting(id:)`` within a write transaction, with the name a `--dir` task had chosen (its key and path);
    /// the start is counted in `task_start` when `counting`.
    static func start(id: String, _ db: Database, now: Double, counting: Bool) throws -> StartedRow? {
        guard let found = try fetch(id: id, db) else { return nil }
        guard found.state == .waiting else { return StartedRow(task: found, started: false, choice: nil) }
        let task = try update(found, db, now: now) { $0.state = .running }
        if counting {
            try db.cachedStatement(
                sql: "INSERT INTO task_start (id, unended) VALUES (?, 1) ON CONFLICT (id) DO UPDATE SET unended = unended + 1"
            ).execute(arguments: [id])
        }
        var choice: (key: String, path: String?)?
        if case .directory(let folder)? = task.spec.destination {
            let key = TransferRecord.directoryKey(url: task.spec.url, directory: folder)
            choice = (key, try fetchChoice(key: key, db))
        }
        return StartedRow(task: task, started: true, choice: choice)
    }

    struct StartedRow {
        var task: StoredTask
        var started: Bool
        var choice: (key: String, path: String?)?
    }

    /// Forgets the starts of `ids`: they ended, or stopped in an orderly way.
    public func clearStarts(ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try write { db in
            let statement = try db.cachedStatement(sql: "DELETE FROM task_start WHERE id = ?")
            for id in ids { try statement.execute(arguments: [id]) }
        }
    }

    /// How many processes in a row started each of `ids` and stopped without seeing it end (absent: none).
    public func unendedStarts(ids: [String]) throws -> [String: Int] {
        try read { db in
            let statement = try db.cachedStatement(sql: "SELECT unended FROM task_start WHERE id = ?")
            var counts: [String: Int] = [:]
            for id in ids {
                if let count = try Int.fetchOne(statement, arguments: [id]), count > 0 { counts[id] = count }
            }
            return counts
        }
    }
}
