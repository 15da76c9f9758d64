import GRDB

// The schema of a session store. Each version is one GRDB migration ("v1", "v2", ...) that also sets
// PRAGMA user_version to its number; a file showing a higher user_version, or a migration this build
// does not know, comes from a newer haul and is refused before anything is written to it.
//
// `sequence` is the rowid: SQLite gives a new row the largest sequence plus one, listing in FIFO order
// walks the table itself, and an insert touches one index fewer. `id` is unique through its own index.
extension TaskStore {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE task (
                    sequence INTEGER PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    url TEXT NOT NULL,
                    destinationKind TEXT NOT NULL,
                    destinationPath TEXT NOT NULL,
                    headers TEXT NOT NULL DEFAULT '[]',
                    checksum TEXT,
                    segments INTEGER,
                    priority INTEGER NOT NULL DEFAULT 0,
                    state TEXT NOT NULL,
                    bytes INTEGER NOT NULL DEFAULT 0,
                    total INTEGER,
                    filePath TEXT,
                    errorKind TEXT,
                    errorMessage TEXT,
                    createdAt REAL NOT NULL,
                    updatedAt REAL NOT NULL
                );
                CREATE UNIQUE INDEX task_on_destination ON task(url, destinationKind, destinationPath);
                CREATE INDEX task_on_state_priority_sequence ON task(state, priority, sequence);
                PRAGMA user_version = 1;
                """)
        }
        // v2: the journal of finished and failed events that a daemon keeps for clients that were away,
        // and each task's TaskOptions as JSON (NULL: the defaults).
        migrator.registerMigration("v2") { db in
            try db.execute(sql: """
                CREATE TABLE journal (
                    sequence INTEGER PRIMARY KEY AUTOINCREMENT,
                    taskID TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    createdAt REAL NOT NULL
                );
                ALTER TABLE task ADD COLUMN options TEXT;
                PRAGMA user_version = 2;
                """)
        }
        // v3: a failed task's typed reason (``FailureReason`` as JSON), so it survives a restart and crosses the wire.
        migrator.registerMigration("v3") { db in
            try db.execute(sql: """
                ALTER TABLE task ADD COLUMN errorReason TEXT;
                PRAGMA user_version = 3;
                """)
        }
        // v4: the resume state of the session's downloads (``TransferRecord`` as JSON, keyed like the record files
        // under `transfers/`), and the name each `--dir` download chose, so that a session's task keeps its progress in
        // this one file instead of a record file and a lock file per download (``SessionRecords``).
        migrator.registerMigration("v4") { db in
            try db.execute(sql: """
                CREATE TABLE transfer (key TEXT PRIMARY KEY NOT NULL, record TEXT NOT NULL) WITHOUT ROWID;
                CREATE TABLE choice (key TEXT PRIMARY KEY NOT NULL, path TEXT NOT NULL) WITHOUT ROWID;
                PRAGMA user_version = 4;
                """)
        }
        // v5: one column for the download's description (``DownloadSpec`` in its one JSON shape), in place of the
        // columns `headers`, `checksum`, `segments` and `options` it is made from. `url`, `destinationKind` and
        // `destinationPath` stay: they are the unique key of a task.
        migrator.registerMigration("v5") { db in
            try db.execute(sql: "ALTER TABLE task ADD COLUMN spec TEXT")
            let rows = try Row.fetchAll(
                db, sql: "SELECT id, url, destinationKind, destinationPath, headers, checksum, segments, options FROM task")
            let update = try db.makeStatement(sql: "UPDATE task SET spec = ? WHERE id = ?")
            for row in rows {
                let id: String = row["id"]
                // A row an older haul could not have run either stays without a spec and is reported as damaged.
                guard let spec = LegacyTaskColumns.spec(
                    url: row["url"], kind: row["destinationKind"], path: row["destinationPath"], headers: row["headers"],
                    checksum: row["checksum"], segments: row["segments"], options: row["options"]) else { continue }
                try update.execute(arguments: [SpecColumn.encode(spec), id])
            }
            try db.execute(sql: """
                ALTER TABLE task DROP COLUMN headers;
                ALTER TABLE task DROP COLUMN checksum;
                ALTER TABLE task DROP COLUMN segments;
                ALTER TABLE task DROP COLUMN options;
                PRAGMA user_version = 5;
                """)
        }
        return migrator
    }

    /// The schema a file claims, when it is newer than this build understands; `nil` when it can be used.
    static func newerSchema(_ db: Database, migrator: DatabaseMigrator) throws -> Int? {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        if version > schemaVersion { return version }
        if try migrator.hasBeenSuperseded(db) {
            // An unknown migration with an old user_version: report at least the next version.
            return max(version, schemaVersion + 1)
        }
        return nil
    }

    /// Refuses a file from a newer haul, then brings an older or new file up to date.
    static func prepareSchema(_ pool: DatabasePool, path: String) throws {
        let migrator = self.migrator
        let newer = try pool.read { db in try newerSchema(db, migrator: migrator) }
        if let newer {
            throw HaulError(
                .fileSystem,
                "the session store at \(path) was written by a newer version of haul (schema \(newer)); upgrade haul")
        }
        try migrator.migrate(pool)
    }
}
