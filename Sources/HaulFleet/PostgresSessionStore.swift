import Crypto
import Foundation
import HaulKit
import NIOConcurrencyHelpers
import PostgresNIO

/// One session of a fleet, kept in PostgreSQL: the same ``SessionStore`` as ``TaskStore``'s SQLite file, shared by
/// every daemon of the fleet (rows keyed by the session's name). Times are the database's (`created_at`,
/// `updated_at`, leases), never a node's.
///
/// Every write records the transaction that made it and the node that wrote it (`change_xid`, `writer`) and rings the
/// fleet's doorbell (`NOTIFY haul_fleet`): each node reads what the others changed (``PostgresSessionStore/changes(since:)``).
package final class PostgresSessionStore: SessionStore, Sendable {
    let fleet: PostgresFleet
    /// The session's name.
    package let session: String
    var link: PostgresLink { fleet.link }
    package var node: String { fleet.node }
    /// When a claim last looked for tasks whose lease expired (``FleetClaim/looksForExpired(sinceLastLook:waitingFound:slots:interval:)``).
    let lastExpiredLook = NIOLockedValueBox<ContinuousClock.Instant?>(nil)

    init(fleet: PostgresFleet, session: String) {
        self.fleet = fleet
        self.session = session
    }

    package var location: String { "\(link.location) (session \(session))" }

    /// The columns of a task, in `task(_:)`'s names.
    static let columns = """
        id, sequence, spec, priority, state, bytes, total, file_path, error_kind, error_message, error_reason, created_at, updated_at,
        node, epoch, requested
        """
    static let select = "SELECT \(columns) FROM haul.task"
    /// What every write sets beside its own columns.
    static let stamp = "change_xid = pg_current_xact_id()::text::bigint, writer = "
    static let now = "extract(epoch FROM clock_timestamp())"
    static let channel = "haul_fleet"

    // MARK: Tasks

    nonisolated(nonsending) package func add(_ requests: [DownloadRequest]) async throws -> [(task: StoredTask, created: Bool)] {
        for request in requests { try TaskStore.validate(request) }
        guard !requests.isEmpty else { return [] }
        let rows = requests.map { request -> NewRow in
            let destination = StoredTask.key(of: request.destination)
            return NewRow(
                id: request.id ?? RandomID.make(), url: request.spec.url.absoluteString, kind: destination.kind, path: destination.path,
                spec: SpecColumn.encode(request.spec), host: request.spec.url.host?.lowercased() ?? "", priority: request.priority)
        }
        return try await mapped {
            try await link.transaction { transaction in
                try await ensureSession(transaction)
                var created: [String: (sequence: Int64, createdAt: Double)] = [:]
                // In chunks, each one statement; rows are inserted in the input's order, so sequences follow it.
                for start in stride(from: 0, to: rows.count, by: 1_000) {
                    let chunk = rows[start..<min(start + 1_000, rows.count)]
                    var binds = PostgresBindings()
                    binds.append(session)
                    binds.append(node)
                    binds.append(chunk.map(\.id))
                    binds.append(chunk.map(\.url))
                    binds.append(chunk.map(\.kind))
                    binds.append(chunk.map(\.path))
                    binds.append(chunk.map(\.key))
                    binds.append(chunk.map(\.spec))
                    binds.append(chunk.map(\.host))
                    binds.append(chunk.map { Int64($0.priority) })
                    let result = try await transaction.query("""
                        INSERT INTO haul.task (session, id, url, destination_kind, destination_path, destination_key, spec, host, priority,
                            state, created_at, updated_at, change_xid, writer)
                        SELECT $1, i, u, k, p, d, s, h, r, 'waiting', extract(epoch FROM now()), extract(epoch FROM now()),
                            pg_current_xact_id()::text::bigint, $2
                        FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[])
                            WITH ORDINALITY AS t(i, u, k, p, d, s, h, r, n)
                        ORDER BY n
                        ON CONFLICT DO NOTHING
                        RETURNING id, sequence, created_at
                        """, binds)
                    for row in result.rows {
                        let r = row.makeRandomAccess()
                        created[try r["id"].decode(String.self)] = (try r["sequence"].decode(Int64.self), try r["created_at"].decode(Double.self))
                    }
                }
                // The others: an existing task with the same id, or the same URL and destination.
                var attributed = Set<String>()
                var wanted: [NewRow] = []
                for row in rows where created[row.id] == nil || !attributed.insert(row.id).inserted { wanted.append(row) }
                var byID: [String: StoredTask] = [:], byKey: [String: StoredTask] = [:]
                if !wanted.isEmpty {
                    var binds = PostgresBindings()
                    binds.append(session)
                    binds.append(wanted.map(\.id))
                    binds.append(wanted.map(\.key))
                    let found = try await transaction.query(
                        "SELECT \(Self.columns), destination_key FROM haul.task WHERE session = $1 AND (id = ANY($2) OR destination_key = ANY($3))",
                        binds)
                    for row in found.rows {
                        let task = try Self.task(row)
                        byID[task.id] = task
                        byKey[try row.makeRandomAccess()["destination_key"].decode(String.self)] = task
                    }
                }
                if !created.isEmpty { try await notify(transaction, waiting: true) }
                var given = Set<String>()
                return try zip(rows, requests).map { row, request in
                    if let (sequence, createdAt) = created[row.id], given.insert(row.id).inserted {
                        let task = StoredTask(
                            id: row.id, sequence: sequence, spec: request.spec, priority: request.priority, state: .waiting,
                            createdAt: createdAt, updatedAt: createdAt)
                        return (task, true)
                    }
                    guard let existing = byID[row.id] ?? byKey[row.key] else {
                        throw SessionStoreError.refused("could not add the task for \(Redaction.url(row.url)) to \(location)")
                    }
                    return (existing, false)
                }
            }
        }
    }

    /// A task to insert, with its unique key.
    private struct NewRow {
        var id: String
        var url: String
        var kind: String
        var path: String
        var spec: String
        var host: String
        var priority: Int
        var key: String {
            let digest = SHA256.hash(data: Array("\(url)\n\(kind)\n\(path)".utf8))
            return digest.map { String(format: "%02x", $0) }.joined()
        }
    }

    nonisolated(nonsending) package func tasks() async throws -> [StoredTask] {
        try await select("WHERE session = $1 ORDER BY sequence")
    }

    nonisolated(nonsending) package func tasks(in state: TaskState, limit: Int?) async throws -> [StoredTask] {
        try await select("WHERE session = $1 AND state = $2 ORDER BY priority DESC, sequence LIMIT $3") {
            $0.append(state.rawValue)
            $0.append(limit.map { Int64(max(0, $0)) })
        }
    }

    nonisolated(nonsending) package func tasks(in state: TaskState, priority: Int, after sequence: Int64, limit: Int) async throws -> [StoredTask] {
        try await select("WHERE session = $1 AND state = $2 AND priority = $3 AND sequence > $4 ORDER BY sequence LIMIT $5") {
            $0.append(state.rawValue)
            $0.append(priority)
            $0.append(sequence)
            $0.append(Int64(max(0, limit)))
        }
    }

    nonisolated(nonsending) package func highestPriority(in state: TaskState, below priority: Int?) async throws -> Int? {
        try await mapped {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(state.rawValue)
            binds.append(priority.map(Int64.init) ?? Int64.max)
            let result = try await link.query(
                "SELECT max(priority) AS priority FROM haul.task WHERE session = $1 AND state = $2 AND priority < $3", binds)
            return try result.rows.first?.makeRandomAccess()["priority"].decode(Int?.self)
        }
    }

    nonisolated(nonsending) package func tasks(after sequence: Int64, limit: Int) async throws -> [StoredTask] {
        try await select("WHERE session = $1 AND sequence > $2 ORDER BY sequence LIMIT $3") {
            $0.append(sequence)
            $0.append(Int64(max(0, limit)))
        }
    }

    nonisolated(nonsending) package func tasks(ids: [String]) async throws -> [StoredTask] {
        guard !ids.isEmpty else { return [] }
        return try await select("WHERE session = $1 AND id = ANY($2) ORDER BY sequence") { $0.append(ids) }
    }

    nonisolated(nonsending) package func task(id: String) async throws -> StoredTask? {
        try await select("WHERE session = $1 AND id = $2") { $0.append(id) }.first
    }

    nonisolated(nonsending) package func hasWaitingOrRunningTasks() async throws -> Bool {
        try await mapped {
            var binds = PostgresBindings()
            binds.append(session)
            let result = try await link.query(
                "SELECT EXISTS (SELECT 1 FROM haul.task WHERE session = $1 AND state IN ('waiting', 'running')) AS busy", binds)
            return try result.rows.first?.makeRandomAccess()["busy"].decode(Bool.self) ?? false
        }
    }

    nonisolated(nonsending) package func count() async throws -> Int {
        try await mapped {
            var binds = PostgresBindings()
            binds.append(session)
            let result = try await link.query("SELECT count(*) AS n FROM haul.task WHERE session = $1", binds)
            return Int(try result.rows.first?.makeRandomAccess()["n"].decode(Int64.self) ?? 0)
        }
    }

    nonisolated(nonsending) package func update(id: String, lease: TaskLease?, _ change: (inout StoredTask) -> Void) async throws -> StoredTask? {
        try await mapped {
            try await link.transaction { transaction in
                guard let original = try await lockedTask(id, transaction) else { return nil }
                try check(lease, original)
                var task = original
                change(&task)
                return try await save(task, over: original, transaction)
            }
        }
    }

    nonisolated(nonsending) package func updateAll(ids: [String], _ change: (inout StoredTask) -> Void) async throws -> [StoredTask] {
        guard !ids.isEmpty else { return [] }
        return try await mapped {
            try await link.transaction { transaction in
                var updated: [StoredTask] = []
                for id in ids {
                    guard let original = try await lockedTask(id, transaction) else { continue }
                    var task = original
                    change(&task)
                    updated.append(try await save(task, over: original, transaction))
                }

                return updated
            }
        }
    }

    /// Removes the tasks and leaves a `removed` entry in the journal for each (with no payload), so that every
    /// other node tells its clients; rings the doorbell. One statement.
    nonisolated(nonsending) package func remove(ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await mapped {
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(ids)
            binds.append(node)
            binds.append(Self.notification(session, waiting: false))
            _ = try await link.query("""
                WITH removed AS (DELETE FROM haul.task WHERE session = $1 AND id = ANY($2) RETURNING id),
                started AS (DELETE FROM haul.task_start WHERE session = $1 AND id = ANY($2)),
                \(Self.removalEntries)
                SELECT pg_notify('\(Self.channel)', $4)
                """, binds)
        }
    }

    /// The journal's `removed` entries of the ids in a `removed` CTE, written by `$3` (a statement's CTE).
    static let removalEntries = """
        entries AS (
            INSERT INTO haul.journal (session, task_id, kind, payload, created_at, change_xid, writer)
            SELECT $1, id, '\(JournalEntry.removedKind)', '', \(now), pg_current_xact_id()::text::bigint, $3 FROM removed
        )
        """

    // MARK: Internals

    /// Creates the session's row (its settings) when missing.
    func ensureSession(_ transaction: PostgresLink.Transaction) async throws {
        var binds = PostgresBindings()
        binds.append(session)
        try await transaction.query("INSERT INTO haul.session (name) VALUES ($1) ON CONFLICT DO NOTHING", binds)
    }

    /// Rings the fleet's doorbell about this session's tasks (delivered when the transaction commits); `waiting`:
    /// a task may be waiting now, so that a daemon without the session open opens it to claim.
    func notify(_ transaction: PostgresLink.Transaction, waiting: Bool = false) async throws {
        var binds = PostgresBindings()
        binds.append(Self.notification(session, waiting: waiting))
        try await transaction.query("SELECT pg_notify('\(Self.channel)', $1)", binds)
    }

    /// The task `id`, locked until the transaction ends.
    func lockedTask(_ id: String, _ transaction: PostgresLink.Transaction) async throws -> StoredTask? {
        var binds = PostgresBindings()
        binds.append(session)
        binds.append(id)
        return try await transaction.rows(LockedTask.self, binds).first.map(Self.task)
    }

    enum LockedTask: PreparedText {
        static let name = "haul_locked_task"
        static let sql = PostgresSessionStore.select + " WHERE session = $1 AND id = $2 FOR UPDATE"
        static let types: [PostgresDataType] = [.text, .text]
    }

    /// Throws unless `task` is still held under `lease` (when one is given): the fencing of every write for a task.
    func check(_ lease: TaskLease?, _ task: StoredTask) throws {
        guard let lease else { return }
        guard lease.isHeld(state: task.state, node: task.node, epoch: task.epoch) else { throw SessionStoreError.leaseLost(taskID: task.id) }
    }

    /// Saves what may change of `task` (read as `original` in this transaction): never its id, sequence, spec or
    /// creation; its node and epoch only by a claim. A task leaving `running` loses its lease (and a request made of
    /// it); one going back to `waiting` its node. Rings the doorbell in the same statement.
    func save(_ task: StoredTask, over original: StoredTask, _ transaction: PostgresLink.Transaction) async throws -> StoredTask {
        var binds = Self.updateBindings(task, over: original, session: session, node: node)
        binds.append(Self.notification(session, waiting: task.state == .waiting))
        let rows = try await transaction.rows(SavedTask.self, binds)
        guard let row = rows.first else { throw SessionStoreError.refused("task \(original.id) vanished from \(location)") }
        var saved = try Self.task(row)
        saved.spec = original.spec
        return saved
    }

    /// A task's row saved, and the doorbell `$12` rung.
    enum SavedTask: PreparedText {
        static let name = "haul_saved_task"
        static let sql = """
            WITH saved AS (\(PostgresSessionStore.updateSQL) RETURNING \(PostgresSessionStore.columns))
            SELECT saved.*, pg_notify('\(PostgresSessionStore.channel)', $12) FROM saved
            """
        static let types = PostgresSessionStore.updateTypes + [.text]
    }

    /// The types of ``updateBindings(_:over:session:node:)``'s parameters ($1 to $11).
    static let updateTypes: [PostgresDataType] = [.text, .text, .int8, .text, .int8, .int8, .text, .text, .text, .text, .text]

    /// The update of a task's row by ``updateBindings(_:over:session:node:)`` ($1 to $11).
    static let updateSQL = """
        UPDATE haul.task SET priority = $3, state = $4, bytes = $5, total = $6, file_path = $7, error_kind = $8,
            error_message = $9, error_reason = $10, updated_at = \(now),
            node = CASE WHEN $4 = 'waiting' THEN NULL ELSE node END,
            lease_until = CASE WHEN $4 = 'running' THEN lease_until ELSE NULL END,
            requested = CASE WHEN $4 = 'running' THEN requested ELSE NULL END,
            \(stamp)$11
        WHERE session = $1 AND id = $2
        """

    static func updateBindings(_ task: StoredTask, over original: StoredTask, session: String, node: String) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(session)
        binds.append(original.id)
        binds.append(task.priority)
        binds.append(task.state.rawValue)
        binds.append(task.bytes)
        binds.append(task.total)
        binds.append(task.filePath)
        binds.append(task.errorKind)
        binds.append(task.errorMessage)
        binds.append(task.errorReason)
        binds.append(node)
        return binds
    }

    /// The doorbell's payload about `session`: `w:` when a task may be waiting now, else `t:`.
    static func notification(_ session: String, waiting: Bool) -> String {
        (waiting ? "w:" : "t:") + session
    }

    /// The tasks `clause` selects, its `$1` the session's name and the rest bound by `bind`.
    private func select(_ clause: String, bind: (inout PostgresBindings) -> Void = { _ in }) async throws -> [StoredTask] {
        try await mapped {
            var binds = PostgresBindings()
            binds.append(session)
            bind(&binds)
            return try await link.query(Self.select + " " + clause, binds).rows.map(Self.task)
        }
    }

    /// Runs `body`, turning what the link throws into the store's errors (with this store's location).
    nonisolated(nonsending) func mapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StoreUnavailable {
            throw SessionStoreError.unavailable("the store at \(link.location) cannot be reached (\(error.description)); check that PostgreSQL runs there")
        } catch let error as StoreRefusal {
            throw SessionStoreError.refused("the store at \(link.location) refused a change (\(error.description))")
        } catch let error as PostgresDecodingError {
            throw SessionStoreError.refused("the store at \(link.location) holds a row haul cannot read (\(error.code))")
        }
    }

    /// A task from a row of `columns`.
    static func task(_ row: PostgresRow) throws -> StoredTask {
        let r = row.makeRandomAccess()
        let stateText = try r["state"].decode(String.self)
        guard let state = TaskState(rawValue: stateText) else { throw SessionStoreError.refused("a task's state \"\(stateText)\" is unknown") }
        guard let spec = SpecColumn.decode(try r["spec"].decode(String.self)) else {
            throw SessionStoreError.refused("a task's spec is not a valid download spec")
        }
        var task = StoredTask(
            id: try r["id"].decode(String.self), sequence: try r["sequence"].decode(Int64.self), spec: spec,
            priority: try r["priority"].decode(Int.self), state: state, bytes: try r["bytes"].decode(Int64.self),
            total: try r["total"].decode(Int64?.self), filePath: try r["file_path"].decode(String?.self),
            errorKind: try r["error_kind"].decode(String?.self), errorMessage: try r["error_message"].decode(String?.self),
            errorReason: try r["error_reason"].decode(String?.self), createdAt: try r["created_at"].decode(Double.self),
            updatedAt: try r["updated_at"].decode(Double.self))
        task.node = try r["node"].decode(String?.self)
        task.epoch = try r["epoch"].decode(Int64.self)
        task.requested = try r["requested"].decode(String?.self).flatMap(TaskRequest.init(rawValue:))
        return task
    }

    static func entry(_ row: PostgresRow) throws -> JournalEntry {
        let r = row.makeRandomAccess()
        return JournalEntry(
            sequence: try r["sequence"].decode(Int64.self), taskID: try r["task_id"].decode(String.self),
            kind: try r["kind"].decode(String.self), payload: try r["payload"].decode(String.self),
            createdAt: try r["created_at"].decode(Double.self))
    }
}
