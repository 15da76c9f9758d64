import HaulKit
import PostgresNIO

/// The schema of a fleet's store, in the database's schema `haul`. Each version is a list of statements applied in
/// one transaction with its row in `haul.schema_migration`; a daemon applies the versions a database lacks, under an
/// advisory lock (two daemons starting at once do it once), and refuses a database that shows a version it does not
/// know (written by a newer haul) before writing anything.
enum PostgresSchema {
    /// The schema this build reads and writes.
    static let version = 3
    /// The advisory lock taken while migrating (any number: it only has to be the same for every haul).
    static let migrationLock: Int64 = 0x4841_554c_0027

    static let migrations: [(version: Int, statements: [String])] = [
        // v1: one session store per session name: tasks (each its spec), the starts that tell a crash loop, the journal
        // of finished and failed events, resume records and name choices, and each session's settings.
        (1, [
            """
            CREATE TABLE haul.session (
                name text PRIMARY KEY,
                settings text,
                created_at double precision NOT NULL DEFAULT extract(epoch FROM now())
            )
            """,
            // `destination_key` is a SHA-256 of the URL and destination: a unique index on a URL of 64 KiB would not fit
            // a B-tree entry. `sequence` orders a session's tasks as they were added.
            """
            CREATE TABLE haul.task (
                session text NOT NULL,
                id text NOT NULL,
                sequence bigint GENERATED ALWAYS AS IDENTITY,
                url text NOT NULL,
                destination_kind text NOT NULL,
                destination_path text NOT NULL,
                destination_key text NOT NULL,
                spec text NOT NULL,
                host text NOT NULL,
                priority integer NOT NULL DEFAULT 0,
                state text NOT NULL,
                bytes bigint NOT NULL DEFAULT 0,
                total bigint,
                file_path text,
                error_kind text,
                error_message text,
                error_reason text,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                PRIMARY KEY (session, id),
                UNIQUE (session, destination_key)
            )
            """,
            "CREATE UNIQUE INDEX task_order ON haul.task (session, sequence)",
            "CREATE INDEX task_queue ON haul.task (session, state, priority DESC, sequence)",
            """
            CREATE TABLE haul.task_start (
                session text NOT NULL, id text NOT NULL, unended integer NOT NULL, PRIMARY KEY (session, id)
            )
            """,
            """
            CREATE TABLE haul.journal (
                session text NOT NULL,
                sequence bigint GENERATED ALWAYS AS IDENTITY,
                task_id text NOT NULL,
                kind text NOT NULL,
                payload text NOT NULL,
                created_at double precision NOT NULL,
                PRIMARY KEY (session, sequence)
            )
            """,
            "CREATE INDEX journal_task ON haul.journal (session, task_id)",
            "CREATE TABLE haul.transfer (session text NOT NULL, key text NOT NULL, record text NOT NULL, PRIMARY KEY (session, key))",
            "CREATE TABLE haul.choice (session text NOT NULL, key text NOT NULL, path text NOT NULL, PRIMARY KEY (session, key))",
        ]),
        // v2: a fleet. A running task's node, the epoch of its claim (the fencing token) and its lease's expiry by the
        // database's clock; what a user asked of it on another node; and, on every write, the transaction that made it
        // and the node that wrote it, so that each node reads what the others changed. The nodes themselves, with the
        // database's time each was last seen. Tasks a store of schema 1 left running have no lease: the first claim
        // takes them over.
        (2, [
            """
            ALTER TABLE haul.task
                ADD COLUMN node text, ADD COLUMN epoch bigint NOT NULL DEFAULT 0, ADD COLUMN lease_until timestamptz,
                ADD COLUMN requested text, ADD COLUMN change_xid bigint NOT NULL DEFAULT 0, ADD COLUMN writer text
            """,
            "ALTER TABLE haul.journal ADD COLUMN change_xid bigint NOT NULL DEFAULT 0, ADD COLUMN writer text",
            "ALTER TABLE haul.session ADD COLUMN settings_xid bigint NOT NULL DEFAULT 0, ADD COLUMN settings_writer text",
            "CREATE INDEX task_change ON haul.task (session, change_xid)",
            "CREATE INDEX journal_change ON haul.journal (session, change_xid)",
            """
            CREATE TABLE haul.node (
                name text PRIMARY KEY,
                instance text NOT NULL,
                host text NOT NULL,
                pid integer NOT NULL,
                home text NOT NULL,
                started_at timestamptz NOT NULL,
                seen_at timestamptz NOT NULL,
                stopped boolean NOT NULL DEFAULT false
            )
            """,
        ]),
        // v3: the destination files being written now, found at each claim (a file is written by one download of the
        // fleet at a time): a small index of the running tasks' files.
        (3, [
            "CREATE INDEX task_running_file ON haul.task (destination_path) WHERE state = 'running' AND destination_kind = 'file'",
        ]),
    ]

    /// Brings the database up to `target` (default: this build's schema): creates the schema in an empty database,
    /// applies the versions it lacks, refuses one of a newer haul. Returns the version it found.
    @discardableResult
    static func prepare(_ link: PostgresLink, upTo target: Int = version) async throws -> Int {
        // A database already at this build's schema (every start but the first) is read without the lock: nodes
        // starting together do not wait for each other.
        if target == version {
            let present = try await link.query("SELECT to_regclass('haul.schema_migration') IS NOT NULL AS present")
            if try present.rows.first?.makeRandomAccess()["present"].decode(Bool.self) == true {
                let found = try await link.query("SELECT coalesce(max(version), 0) AS version FROM haul.schema_migration")
                if let current = try found.rows.first?.makeRandomAccess()["version"].decode(Int.self), current == version { return current }
            }
        }
        return try await link.transaction(durable: true) { transaction in
            try await transaction.query("SELECT pg_advisory_xact_lock(\(migrationLock))")
            try await transaction.execute("CREATE SCHEMA IF NOT EXISTS haul")
            try await transaction.execute("""
                CREATE TABLE IF NOT EXISTS haul.schema_migration (
                    version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            let found = try await transaction.query("SELECT coalesce(max(version), 0) AS version FROM haul.schema_migration")
            let current = try found.rows.first?.makeRandomAccess()["version"].decode(Int.self) ?? 0
            guard current <= version else {
                throw SessionStoreError.refused(
                    "the store at \(link.location) was written by a newer version of haul (schema \(current)); upgrade haul")
            }
            for migration in migrations where migration.version > current && migration.version <= target {
                for statement in migration.statements { try await transaction.execute(statement) }
                var binds = PostgresBindings()
                binds.append(migration.version)
                try await transaction.query("INSERT INTO haul.schema_migration (version) VALUES ($1)", binds)
            }
            return current
        }
    }
}
