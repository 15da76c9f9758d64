import HaulKit
import PostgresNIO

// What a fleet's session keeps about its tasks' runs: the starts that tell a crash loop, the conclusions (with the final
// resume record and the journal entry, in one transaction) and the journal, the session's across the fleet.
extension PostgresSessionStore {
    // MARK: Starts

    nonisolated(nonsending) package func startIfWaiting(id: String) async throws -> (task: StoredTask, started: Bool)? {
        try await mapped {
            try await link.transaction { transaction in
                guard let found = try await lockedTask(id, transaction) else { return nil }
                guard found.state == .waiting else { return (found, false) }
                var task = found
                task.state = .running
                let saved = try await save(task, over: found, transaction)
                var binds = PostgresBindings()
                binds.append(session)
                binds.append(id)
                try await transaction.query("""
                    INSERT INTO haul.task_start (session, id, unended) VALUES ($1, $2, 1)
                    ON CONFLICT (session, id) DO UPDATE SET unended = haul.task_start.unended + 1
                    """, binds)
                return (saved, true)
            }
        }
    }

    nonisolated(nonsending) package func clearStarts(ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await mapped {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(ids)
            _ = try await link.query("DELETE FROM haul.task_start WHERE session = $1 AND id = ANY($2)", binds)
        }
    }

    nonisolated(nonsending) package func unendedStarts(ids: [String]) async throws -> [String: Int] {
        guard !ids.isEmpty else { return [:] }
        return try await mapped {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(ids)
            let result = try await link.query(
                "SELECT id, unended FROM haul.task_start WHERE session = $1 AND id = ANY($2) AND unended > 0", binds)
            var counts: [String: Int] = [:]
            for row in result.rows {
                let r = row.makeRandomAccess()
                counts[try r["id"].decode(String.self)] = try r["unended"].decode(Int.self)
            }
            return counts
        }
    }

    /// Reads the task (locked), then writes its new state, forgets its start, writes the final record, appends the
    /// journal entry and rings the doorbell in one statement: four round trips in all, one commit.
    nonisolated(nonsending) package func conclude(
        id: String, lease: TaskLease?, journaling kind: String?, payload: (StoredTask) -> String, finalRecord: StoredRecord?,
        _ change: (inout StoredTask) -> Void
    ) async throws -> (old: TaskState, task: StoredTask, sequence: Int64?)? {
        try await mapped {
            try await link.transaction { transaction in
                guard let original = try await lockedTask(id, transaction) else { return nil }
                try check(lease, original)
                var task = original
                change(&task)
                task.id = original.id
                // The entry's task is the changed one as stored (its node and lease as the update leaves them).
                var entry = task
                if task.state != .running { entry.requested = nil }
                if task.state == .waiting { entry.node = nil }
                var binds = Self.updateBindings(task, over: original, session: session, node: node)
                binds.append(finalRecord?.key)
                binds.append(finalRecord?.value)
                binds.append(kind)
                binds.append(kind.map { _ in payload(entry) })
                binds.append(Self.notification(session, waiting: task.state == .waiting))
                let rows = try await transaction.rows(Concluded.self, binds)
                guard let row = rows.first else { throw SessionStoreError.refused("task \(id) vanished from \(location)") }
                var saved = try Self.task(row)
                saved.spec = original.spec
                let sequence = try row.makeRandomAccess()["journal_sequence"].decode(Int64?.self)
                if let sequence, sequence % 256 == 0 { try await trimJournal(transaction) }
                return (original.state, saved, sequence)
            }
        }
    }

    /// A task's end: its row ($1 to $11), its start forgotten, its final record ($12, $13), its journal entry ($14,
    /// $15) and the doorbell ($16), in one statement.
    enum Concluded: PreparedText {
        static let name = "haul_concluded"
        static let sql = """
            WITH saved AS (\(PostgresSessionStore.updateSQL) RETURNING \(PostgresSessionStore.columns)),
            started AS (DELETE FROM haul.task_start WHERE session = $1 AND id = $2),
            record AS (
                INSERT INTO haul.transfer (session, key, record) SELECT $1, $12, $13 WHERE $12::text IS NOT NULL
                ON CONFLICT (session, key) DO UPDATE SET record = EXCLUDED.record
            ),
            entry AS (
                INSERT INTO haul.journal (session, task_id, kind, payload, created_at, change_xid, writer)
                SELECT $1, $2, $14, $15, \(PostgresSessionStore.now), pg_current_xact_id()::text::bigint, $11 WHERE $14::text IS NOT NULL
                RETURNING sequence
            )
            SELECT saved.*, (SELECT sequence FROM entry) AS journal_sequence, pg_notify('\(PostgresSessionStore.channel)', $16) FROM saved
            """
        static let types = PostgresSessionStore.updateTypes + [.text, .text, .text, .text, .text]
    }

    // MARK: Journal

    nonisolated(nonsending) package func journal(after sequence: Int64) async throws -> [JournalEntry] {
        try await mapped {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(sequence)
            let result = try await link.query("""
                SELECT sequence, task_id, kind, payload, created_at FROM haul.journal WHERE session = $1 AND sequence > $2
                ORDER BY sequence
                """, binds)
            return try result.rows.map(Self.entry)
        }
    }

    nonisolated(nonsending) package func acknowledgeJournal(taskIDs ids: [String]) async throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try await mapped {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(ids)
            let result = try await link.query("DELETE FROM haul.journal WHERE session = $1 AND task_id = ANY($2)", binds)
            return result.metadata.rows ?? 0
        }
    }

    nonisolated(nonsending) package func acknowledgeJournal(through sequence: Int64) async throws -> Int {
        try await mapped {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(sequence)
            let result = try await link.query("DELETE FROM haul.journal WHERE session = $1 AND sequence <= $2", binds)
            return result.metadata.rows ?? 0
        }
    }

    /// Drops the session's entries beyond ``TaskStore/journalLimit``, oldest first (every 256 entries, not at each).
    func trimJournal(_ transaction: PostgresLink.Transaction) async throws {
        var binds = PostgresBindings()
        binds.append(session)
        binds.append(TaskStore.journalLimit)
        try await transaction.query("""
            DELETE FROM haul.journal WHERE session = $1 AND sequence <= (
                SELECT sequence FROM haul.journal WHERE session = $1 ORDER BY sequence DESC OFFSET $2 LIMIT 1)
            """, binds)
    }
}
