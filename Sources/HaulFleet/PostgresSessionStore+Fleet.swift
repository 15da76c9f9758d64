import HaulKit
import PostgresNIO

// Claims, leases, requests to other nodes and the change feed of a fleet's session. Leases are the database's:
// `lease_until` is set from its clock (`now()`), and only its clock decides that one has expired.
extension PostgresSessionStore: SharedSessionStore {
    package var leaseTerms: LeaseTerms { fleet.leaseTerms }
    package var isListening: Bool { fleet.isListening }
    package var quietPollInterval: Duration { fleet.quietPollInterval }

    /// The lease's length as SQL (`$n` milliseconds).
    private static func leaseInterval(_ parameter: Int) -> String { "($\(parameter) * interval '1 millisecond')" }

    private var leaseMilliseconds: Int64 { fleet.leaseMilliseconds }

    nonisolated(nonsending) package func claim(_ requested: FleetClaim.Limits) async throws -> [ClaimedTask] {
        guard requested.slots > 0 else { return [] }
        return try await mapped {
            try await link.transaction(durable: true) { transaction in
                var limits = requested
                if limits.fleetMaxPerHost != nil {
                    // Claims of this session take turns, so that two nodes never both see a host's last free connection.
                    var binds = PostgresBindings()
                    binds.append("haul.claim." + session)
                    try await transaction.query("SELECT pg_advisory_xact_lock(hashtext($1))", binds)
                    var count = PostgresBindings()
                    count.append(session)
                    let rows = try await transaction.query("""
                        SELECT host, count(*) AS running FROM haul.task
                        WHERE session = $1 AND state = 'running' AND lease_until > now() GROUP BY host
                        """, count).rows
                    for row in rows {
                        let r = row.makeRandomAccess()
                        limits.fleetRunningPerHost[try r["host"].decode(String.self)] = Int(try r["running"].decode(Int64.self))
                    }
                }
                let full = Array(FleetClaim.fullHosts(limits))
                let waiting = try await candidates(WaitingCandidates.self, excluding: full, limit: limits.slots, transaction)
                let now = ContinuousClock.now
                let sinceLastLook = lastExpiredLook.withLockedValue { $0.map { $0.duration(to: now) } }
                var expired: [FleetClaim.Candidate] = []
                if FleetClaim.looksForExpired(
                    sinceLastLook: sinceLastLook, waitingFound: waiting.count, slots: limits.slots, interval: fleet.leaseTerms.renewalInterval
                ) {
                    expired = try await candidates(ExpiredCandidates.self, excluding: full, limit: limits.slots, transaction)
                    lastExpiredLook.withLockedValue { $0 = now }
                }
                limits.busyFiles = try await busyFiles(among: expired + waiting, transaction)
                let chosen = FleetClaim.choose(expired + waiting, limits).map(\.id)
                guard !chosen.isEmpty else { return [] }
                let takenOver = Set(expired.map(\.id))
                var binds = PostgresBindings()
                binds.append(session)
                binds.append(chosen)
                binds.append(node)
                binds.append(leaseMilliseconds)
                binds.append(Self.notification(session, waiting: false))
                let rows = try await transaction.rows(Claim.self, binds)
                var claimed: [StoredTask] = []
                var unended: [String: Int] = [:]
                for row in rows {
                    let task = try Self.task(row)
                    claimed.append(task)
                    unended[task.id] = try row.makeRandomAccess()["unended"].decode(Int.self)
                }
                let order = Dictionary(uniqueKeysWithValues: chosen.enumerated().map { ($1, $0) })
                return claimed.sorted { order[$0.id, default: 0] < order[$1.id, default: 0] }.map { task in
                    ClaimedTask(
                        task: task, lease: TaskLease(node: node, epoch: task.epoch), takenOver: takenOver.contains(task.id),
                        unendedStarts: max(0, unended[task.id, default: 1] - 1))
                }
            }
        }
    }

    /// Up to `limit` tasks `Text` selects, by priority then age, skipping the hosts `excluded` and any row another
    /// transaction has locked (another node claiming it now).
    private func candidates<Text: PreparedText>(
        _ text: Text.Type, excluding excluded: [String], limit: Int, _ transaction: PostgresLink.Transaction
    ) async throws -> [FleetClaim.Candidate] {
        var binds = PostgresBindings()
        binds.append(session)
        binds.append(excluded)
        binds.append(Int64(limit))
        return try await transaction.rows(text, binds).map { row in
            let r = row.makeRandomAccess()
            return FleetClaim.Candidate(
                id: try r["id"].decode(String.self), priority: try r["priority"].decode(Int.self),
                sequence: try r["sequence"].decode(Int64.self), host: try r["host"].decode(String.self),
                destinationFile: try r["file"].decode(String?.self))
        }
    }

    /// The candidates of a claim: `$1` the session, `$2` the hosts left out, `$3` how many.
    private static func candidatesSQL(_ condition: String) -> String {
        """
        SELECT id, priority, sequence, host, CASE WHEN destination_kind = 'file' THEN destination_path END AS file
        FROM haul.task
        WHERE session = $1 AND \(condition) AND NOT (host = ANY($2::text[]))
        ORDER BY priority DESC, sequence LIMIT $3
        FOR UPDATE SKIP LOCKED
        """
    }

    enum WaitingCandidates: PreparedText {
        static let name = "haul_waiting_candidates"
        static let sql = candidatesSQL("state = 'waiting'")
        static let types: [PostgresDataType] = [.text, .textArray, .int8]
    }

    enum ExpiredCandidates: PreparedText {
        static let name = "haul_expired_candidates"
        static let sql = candidatesSQL("state = 'running' AND (lease_until IS NULL OR lease_until < now())")
        static let types: [PostgresDataType] = [.text, .textArray, .int8]
    }

    /// A claim of tasks `$2` of session `$1` by node `$3` for `$4` ms, its count of starts and the doorbell `$5`, in
    /// one statement (a doorbell rung for every row is delivered once: PostgreSQL folds equal notifications of one
    /// transaction).
    enum Claim: PreparedText {
        static let name = "haul_claim"
        static let sql = """
            WITH claimed AS (
                UPDATE haul.task SET state = 'running', node = $3, epoch = epoch + 1, lease_until = now() + \(leaseInterval(4)),
                    updated_at = \(PostgresSessionStore.now), \(PostgresSessionStore.stamp)$3
                WHERE session = $1 AND id = ANY($2)
                RETURNING \(PostgresSessionStore.columns)
            ),
            counted AS (
                INSERT INTO haul.task_start (session, id, unended) SELECT $1, unnest($2::text[]), 1
                ON CONFLICT (session, id) DO UPDATE SET unended = haul.task_start.unended + 1
                RETURNING id, unended
            )
            SELECT claimed.*, counted.unended AS unended, pg_notify('\(PostgresSessionStore.channel)', $5) FROM claimed JOIN counted USING (id)
            """
        static let types: [PostgresDataType] = [.text, .textArray, .text, .int8, .text]
    }

    /// Which of the candidates' destination files a live download writes now, on any node and in any session of the
    /// database. Each node keeps a file's lock in its own `HAUL_HOME`, which another node never sees; here the
    /// claims of one file take turns instead: each holds an advisory lock on it (taken in one order, so two claims
    /// never wait on each other) until its transaction ends, by when the download it chose is `running` for the
    /// next claim to see.
    private func busyFiles(among candidates: [FleetClaim.Candidate], _ transaction: PostgresLink.Transaction) async throws -> Set<String> {
        let files = Set(candidates.compactMap(\.destinationFile))
        guard !files.isEmpty else { return [] }
        var binds = PostgresBindings()
        binds.append(Array(files))
        try await transaction.query("""
            SELECT pg_advisory_xact_lock(key) FROM (
                SELECT DISTINCT hashtextextended('haul.file.' || path, 0) AS key FROM unnest($1::text[]) AS path ORDER BY key
            ) AS keys
            """, binds)
        let rows = try await transaction.query("""
            SELECT DISTINCT destination_path FROM haul.task
            WHERE state = 'running' AND destination_kind = 'file' AND destination_path = ANY($1::text[]) AND lease_until > now()
            """, binds).rows
        return Set(try rows.map { try $0.makeRandomAccess()["destination_path"].decode(String.self) })
    }

    nonisolated(nonsending) package func renew(_ leases: [String: TaskLease]) async throws -> Set<String> {
        let mine = leases.filter { $0.value.node == node }
        guard !mine.isEmpty else { return [] }
        return try await mapped {
            try await link.transaction(durable: true) { transaction in
                var binds = PostgresBindings()
                binds.append(session)
                binds.append(node)
                binds.append(Array(mine.keys))
                binds.append(mine.keys.map { mine[$0]?.epoch ?? -1 })
                binds.append(leaseMilliseconds)
                let rows = try await transaction.query("""
                    UPDATE haul.task SET lease_until = now() + \(Self.leaseInterval(5))
                    WHERE session = $1 AND state = 'running' AND node = $2
                        AND (id, epoch) IN (SELECT * FROM unnest($3::text[], $4::bigint[]))
                    RETURNING id
                    """, binds).rows
                return Set(try rows.map { try $0.makeRandomAccess()["id"].decode(String.self) })
            }
        }
    }

    nonisolated(nonsending) package func request(_ request: TaskRequest, id: String) async throws -> RequestOutcome {
        try await mapped {
            try await link.transaction(durable: true) { transaction in
                var binds = PostgresBindings()
                binds.append(session)
                binds.append(id)
                let rows = try await transaction.query(
                    "SELECT \(Self.columns), lease_until > now() AS live FROM haul.task WHERE session = $1 AND id = $2 FOR UPDATE", binds).rows
                guard let row = rows.first else { return .missing }
                let task = try Self.task(row)
                guard task.state == .running else { return .notRunning(task) }
                if try row.makeRandomAccess()["live"].decode(Bool?.self) == true {
                    var ask = PostgresBindings()
                    ask.append(session)
                    ask.append(id)
                    ask.append(request.rawValue)
                    ask.append(node)
                    try await transaction.query(
                        "UPDATE haul.task SET requested = $3, \(Self.stamp)$4 WHERE session = $1 AND id = $2", ask)
                    try await notify(transaction)
                    return .asked
                }
                // Nobody holds it: carried out here, the epoch raised so that a writer of the old claim is fenced off.
                var apply = PostgresBindings()
                apply.append(session)
                apply.append(id)
                if request == .remove {
                    apply.append(node)
                    apply.append(Self.notification(session, waiting: false))
                    try await transaction.query("""
                        WITH removed AS (DELETE FROM haul.task WHERE session = $1 AND id = $2 RETURNING id),
                        started AS (DELETE FROM haul.task_start WHERE session = $1 AND id = $2),
                        \(Self.removalEntries)
                        SELECT pg_notify('\(Self.channel)', $4)
                        """, apply)
                    return .applied(old: .running, task: nil)
                }
                apply.append(request == .pause ? TaskState.paused.rawValue : TaskState.cancelled.rawValue)
                apply.append(node)
                let changed = try await transaction.query("""
                    UPDATE haul.task SET state = $3, node = NULL, lease_until = NULL, requested = NULL, epoch = epoch + 1,
                        updated_at = \(Self.now), \(Self.stamp)$4
                    WHERE session = $1 AND id = $2
                    RETURNING \(Self.columns)
                    """, apply).rows.first.map(Self.task)
                try await transaction.query("DELETE FROM haul.task_start WHERE session = $1 AND id = $2", binds)
                try await notify(transaction)
                return .applied(old: .running, task: changed)
            }
        }
    }

    nonisolated(nonsending) package func changes(since cursor: Int64?) async throws -> FleetChanges {
        try await mapped {
            // Every transaction below the oldest one still running has ended: its rows are all there to read. Rows of a
            // transaction that has not ended yet are read by a later call.
            var first = PostgresBindings()
            first.append(session)
            let found = try await link.query("""
                SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS horizon,
                    greatest((SELECT max(change_xid) FROM haul.task WHERE session = $1),
                             (SELECT max(change_xid) FROM haul.journal WHERE session = $1)) AS newest
                """, first).rows.first?.makeRandomAccess()
            let horizon = try found?["horizon"].decode(Int64.self) ?? 0
            let newest = try found?["newest"].decode(Int64?.self) ?? 0
            let pending = newest >= horizon
            guard let cursor, cursor < horizon else {
                return FleetChanges(tasks: [], journal: [], cursor: max(cursor ?? horizon, horizon), pending: cursor != nil && pending)
            }
            var binds = PostgresBindings()
            binds.append(session)
            binds.append(cursor)
            binds.append(horizon)
            let tasks = try await link.query("""
                SELECT \(Self.columns), writer FROM haul.task
                WHERE session = $1 AND change_xid >= $2 AND change_xid < $3 ORDER BY change_xid, sequence
                """, binds).rows.map { row in
                (task: try Self.task(row), writer: try row.makeRandomAccess()["writer"].decode(String?.self))
            }
            binds.append(node)
            let journal = try await link.query("""
                SELECT sequence, task_id, kind, payload, created_at FROM haul.journal
                WHERE session = $1 AND change_xid >= $2 AND change_xid < $3 AND writer IS DISTINCT FROM $4 ORDER BY sequence
                """, binds).rows.map(Self.entry)
            return FleetChanges(tasks: tasks, journal: journal, cursor: horizon, pending: pending)
        }
    }

    package func doorbell() -> AsyncStream<Void> {
        fleet.doorbell(session: session)
    }
}
