import HaulKit
import PostgresNIO

// The resume records and name choices of a fleet's session (tables `transfer` and `choice`): synchronous, as the
// transfer engine calls them from its blocking-I/O threads. Each write is one statement (atomic on its own).
extension PostgresSessionStore {
    package func record(key: String) throws -> String? {
        try mappedSync {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(key)
            let result = try fleet.recordLink.querySync("SELECT record FROM haul.transfer WHERE session = $1 AND key = $2", binds)
            return try result.rows.first?.makeRandomAccess()["record"].decode(String.self)
        }
    }

    /// The record (and a `--dir` download's choice) in one statement, made only while `fence`'s task is still held
    /// under its lease: a node that lost the task can no longer move the record another node resumes from.
    package func save(_ record: StoredRecord, choice: StoredRecord?, fence: RecordFence?) throws {
        try mappedSync {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(record.key)
            binds.append(record.value)
            binds.append(fence?.taskID)
            binds.append(fence?.lease.node)
            binds.append(fence?.lease.epoch)
            binds.append(choice?.key)
            binds.append(choice?.value)
            let result = try fleet.recordLink.querySync("""
                WITH fence AS (
                    SELECT 1 AS held WHERE $4::text IS NULL OR EXISTS (
                        SELECT 1 FROM haul.task WHERE session = $1 AND id = $4 AND state = 'running' AND node = $5 AND epoch = $6)
                ),
                chosen AS (
                    INSERT INTO haul.choice (session, key, path) SELECT $1, $7, $8 FROM fence WHERE $7::text IS NOT NULL
                    ON CONFLICT (session, key) DO UPDATE SET path = EXCLUDED.path
                )
                INSERT INTO haul.transfer (session, key, record) SELECT $1, $2, $3 FROM fence
                ON CONFLICT (session, key) DO UPDATE SET record = EXCLUDED.record
                """, binds)
            if let fence, (result.metadata.rows ?? 0) == 0 { throw SessionStoreError.leaseLost(taskID: fence.taskID) }
        }
    }

    package func removeRecord(key: String) throws {
        try mappedSync {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(key)
            _ = try fleet.recordLink.querySync("DELETE FROM haul.transfer WHERE session = $1 AND key = $2", binds)
        }
    }

    package func choice(key: String) throws -> String? {
        try mappedSync {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(key)
            let result = try fleet.recordLink.querySync("SELECT path FROM haul.choice WHERE session = $1 AND key = $2", binds)
            return try result.rows.first?.makeRandomAccess()["path"].decode(String.self)
        }
    }

    package func setChoice(key: String, path: String?) throws {
        try mappedSync {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(key)
            if let path {
                binds.append(path)
                _ = try fleet.recordLink.querySync("""
                    INSERT INTO haul.choice (session, key, path) VALUES ($1, $2, $3)
                    ON CONFLICT (session, key) DO UPDATE SET path = EXCLUDED.path
                    """, binds)
            } else {
                _ = try fleet.recordLink.querySync("DELETE FROM haul.choice WHERE session = $1 AND key = $2", binds)
            }
        }
    }

    /// ``mapped(_:)`` for the synchronous calls.
    func mappedSync<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as StoreUnavailable {
            throw SessionStoreError.unavailable("the store at \(link.location) cannot be reached (\(error.description)); check that PostgreSQL runs there")
        } catch let error as StoreRefusal {
            throw SessionStoreError.refused("the store at \(link.location) refused a change (\(error.description))")
        } catch let error as PostgresDecodingError {
            throw SessionStoreError.refused("the store at \(link.location) holds a row haul cannot read (\(error.code))")
        }
    }
}
