import Foundation
import GRDB

/// The queue of a download session, kept in one SQLite file (WAL mode) so that it survives crashes
/// and can be read by other haul processes while one of them works on it.
///
/// Each call is one transaction, which calls of other threads made meanwhile may share (``GroupCommit``); it
/// returns once its changes are committed. Commits are durable against a crash of the process; with
/// `synchronous = NORMAL` a power loss may undo the last commits, but never damages the file.
package final class TaskStore: Sendable {
    /// The schema this build reads and writes.
    public static let schemaVersion = 5

    /// The SQLite file.
    public let path: String
    let pool: DatabasePool
    let writes: GroupCommit
    /// `--dir` tasks' remembered names read when they started, each for its download's first look.
    let choiceHints = ChoiceHints()
    /// Whether each start is counted in `task_start` (``startIfWaiting(id:)``), for a session that fails the tasks
    /// its processes keep dying on. A session that never reads the counts (a person's `haul get`) writes none:
    /// a table less to change in each start's transaction.
    let countsStarts: Bool

    /// Opens the store at `path` (e.g. `HAUL_HOME/sessions/<id>/tasks.sqlite`), creating its folders and
    /// the file when missing. Throws a `HaulError` when the file is damaged or was written by a newer haul.
    /// Without `countsStarts`, starts are not counted (``unendedStarts(ids:)`` then finds none of them).
    public init(path: String, countsStarts: Bool = true) throws {
        self.path = path
        self.countsStarts = countsStarts
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty { try POSIX.makePrivateDirectories(folder, root: folder) }
        // The store holds request headers (credentials among them): owner-only. SQLite gives its -wal and -shm
        // files the mode of the database file, so creating that one 0600 covers them too.
        try PartialFile(path: path, create: true, private: true).close()
        for companion in [path, path + "-wal", path + "-shm"] { POSIX.makePrivate(companion) }

        var configuration = Configuration()
        configuration.label = "haul.tasks"
        configuration.busyMode = .timeout(10)
        // Two readers are plenty for one session, and each holds three descriptors (the file, its -wal and -shm).
        configuration.maximumReaderCount = 2
        // GRDB opens the pool in WAL mode with synchronous = NORMAL.
        pool = try Self.mapErrors(path: path) {
            let pool = try DatabasePool(path: path, configuration: configuration)
            try Self.prepareSchema(pool, path: path)
            try Self.prepareStarts(pool)
            return pool
        }
        writes = GroupCommit(pool: pool)
    }

    /// Adds a task unless one with the same id, or the same URL and destination, exists; then returns
    /// that one with `created == false`. One write transaction.
    /// The request's spec must have an absolute file or folder destination (a session sees to it).
    public func add(_ task: DownloadRequest) throws -> (task: StoredTask, created: Bool) {
        try Self.validate(task)
        let now = Self.now()
        return try write { db in try Self.insertOrFind(task, db, now: now) }
    }

    /// Adds many tasks in one write transaction, with the same rules as adding one; a task
    /// that repeats an earlier one of the same batch returns that one. Results follow the input order.
    public func add(_ tasks: [DownloadRequest]) throws -> [(task: StoredTask, created: Bool)] {
        for task in tasks { try Self.validate(task) }
        let now = Self.now()
        return try write { db in try tasks.map { try Self.insertOrFind($0, db, now: now) } }
    }

    /// All tasks, in the order they were added.
    public func tasks() throws -> [StoredTask] {
        try read { db in
            try StoredTask.fetchAll(try db.cachedStatement(sql: StoredTask.selectSQL + " ORDER BY sequence"))
        }
    }

    /// The tasks in `state`, highest priority first, then in the order they were added; with `limit`, only
    /// the first ones.
    public func tasks(in state: TaskState, limit: Int? = nil) throws -> [StoredTask] {
        try read { db in
            let sql = StoredTask.selectSQL + " WHERE state = ? ORDER BY priority DESC, sequence LIMIT ?"
            return try StoredTask.fetchAll(try db.cachedStatement(sql: sql), arguments: [state.rawValue, limit ?? -1])
        }
    }

    /// Up to `limit` tasks added after the task whose sequence is `sequence` (0: from the first), in the
    /// order they were added: a page that stays in place while tasks are added or removed around it.
    public func tasks(after sequence: Int64, limit: Int) throws -> [StoredTask] {
        try read { db in
            let sql = StoredTask.selectSQL + " WHERE sequence > ? ORDER BY sequence LIMIT ?"
            return try StoredTask.fetchAll(try db.cachedStatement(sql: sql), arguments: [sequence, max(0, limit)])
        }
    }

    /// Up to `limit` tasks in `state` of priority `priority` added after the task whose sequence is `sequence`, in
    /// the order they were added (one range of the index on state, priority and sequence).
    public func tasks(in state: TaskState, priority: Int, after sequence: Int64, limit: Int) throws -> [StoredTask] {
        try read { db in
            let sql = StoredTask.selectSQL + " WHERE state = ? AND priority = ? AND sequence > ? ORDER BY sequence LIMIT ?"
            return try StoredTask.fetchAll(try db.cachedStatement(sql: sql), arguments: [state.rawValue, priority, sequence, max(0, limit)])
        }
    }

    /// The highest priority of a task in `state` below `priority` (any, when `nil`); `nil` when there is none (one
    /// lookup on the index).
    public func highestPriority(in state: TaskState, below priority: Int?) throws -> Int? {
        try read { db in
            let sql = "SELECT max(priority) FROM task WHERE state = ? AND priority < ?"
            return try Int.fetchOne(try db.cachedStatement(sql: sql), arguments: [state.rawValue, priority ?? Int.max])
        }
    }

    /// The tasks of `ids` that exist, each once, in the order they were added.
    public func tasks(ids: [String]) throws -> [StoredTask] {
        try read { db in
            var found: [String: StoredTask] = [:]
            for id in ids where found[id] == nil {
                if let task = try Self.fetch(id: id, db) { found[id] = task }
            }
            return found.values.sorted { $0.sequence < $1.sequence }
        }
    }

    /// Whether any task is waiting or running (one indexed lookup).
    public func hasWaitingOrRunningTasks() throws -> Bool {
        try read { db in
            let sql = "SELECT EXISTS (SELECT 1 FROM task WHERE state IN ('waiting', 'running'))"
            return try Bool.fetchOne(try db.cachedStatement(sql: sql)) ?? false
        }
    }

    public func task(id: String) throws -> StoredTask? {
        try readStatement { db in try Self.fetch(id: id, db) }
    }

    /// Applies `change` to the task `id` and saves it with a new `updatedAt`, in one transaction;
    /// `nil` when there is no such task. `id`, `sequence`, `spec` and `createdAt` cannot be changed.
    public func update(id: String, _ change: (inout StoredTask) -> Void) throws -> StoredTask? {
        let now = Self.now()
        return try write { db in try Self.update(id: id, db, now: now, change) }
    }

    /// Applies `change` to each task of `ids` in one transaction; returns the updated tasks in the
    /// order of `ids`, skipping ids that do not exist.
    public func updateAll(ids: [String], _ change: (inout StoredTask) -> Void) throws -> [StoredTask] {
        let now = Self.now()
        return try write { db in try ids.compactMap { try Self.update(id: $0, db, now: now, change) } }
    }

    /// Removes the tasks of `ids`; unknown ids are ignored. One transaction.
    public func remove(ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try write { db in
            let statement = try db.cachedStatement(sql: "DELETE FROM task WHERE id = ?")
            let starts = try db.cachedStatement(sql: "DELETE FROM task_start WHERE id = ?")
            for id in ids {
                try statement.execute(arguments: [id])
                try starts.execute(arguments: [id])
            }
        }
    }

    public func count() throws -> Int {
        try read { db in try Int.fetchOne(try db.cachedStatement(sql: "SELECT COUNT(*) FROM task")) ?? 0 }
    }

    // MARK: - Internals

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try Self.mapErrors(path: path) { try pool.read(body) }
    }

    /// One read-only statement on a reader connection, outside a transaction (one statement sees one state of
    /// the file anyway): GRDB's snapshot transaction around a read costs two more statements.
    func readStatement<T>(_ body: (Database) throws -> T) throws -> T {
        try Self.mapErrors(path: path) { try pool.unsafeRead(body) }
    }

    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try Self.mapErrors(path: path) { try writes.write(body) }
    }

    /// One statement on the writer connection, outside a transaction: SQLite's autocommit makes it atomic and
    /// durable like one, without the cost of BEGIN and COMMIT (when no other write shares its commit). Only for a
    /// body that executes a single statement.
    func writeStatement<T>(_ body: (Database) throws -> T) throws -> T {
        try Self.mapErrors(path: path) { try writes.write(transaction: false, body) }
    }

    /// Runs raw SQL on the writer connection (tests use it to fake other versions of the file).
    func execute(sql: String) throws {
        try write { db in try db.execute(sql: sql) }
    }

    /// The first column of the first row of a query, as text (for tests).
    func value(sql: String) throws -> String? {
        try read { db in try String.fetchOne(db, sql: sql) }
    }

    package static func now() -> Double { Date().timeIntervalSince1970 }

    package static func validate(_ task: DownloadRequest) throws(HaulError) {
        if let id = task.id, id.isEmpty { throw HaulError(.usage, "a task id cannot be empty") }
        switch task.destination {
        case .file(let path)?, .directory(let path)?:
            guard path.hasPrefix("/") else { throw HaulError(.usage, "the destination \(path) of a task must be an absolute path") }
        case .standardOutput?, nil:
            throw HaulError(.usage, "a task needs a file or folder destination: a session saves its downloads to files")
        }
        do { try task.spec.validate() } catch { throw HaulError(.usage, error.message) }
    }

    static func fetch(id: String, _ db: Database) throws -> StoredTask? {
        let statement = try db.cachedStatement(sql: StoredTask.selectSQL + " WHERE id = ?")
        return try StoredTask.fetchOne(statement, arguments: [id])
    }

    static func insertOrFind(_ new: DownloadRequest, _ db: Database, now: Double) throws -> (task: StoredTask, created: Bool) {
        var task = StoredTask(
            id: new.id ?? RandomID.make(), sequence: 0, spec: new.spec, priority: new.priority, state: .waiting,
            createdAt: now, updatedAt: now)
        try db.cachedStatement(sql: StoredTask.insertSQL).execute(arguments: task.insertArguments())
        if db.changesCount == 1 {
            task.sequence = db.lastInsertedRowID
            return (task, true)
        }
        if let existing = try fetch(id: task.id, db) { return (existing, false) }
        let sameDestination = try db.cachedStatement(
            sql: StoredTask.selectSQL + " WHERE url = ? AND destinationKind = ? AND destinationPath = ?")
        let destination = StoredTask.key(of: new.destination)
        if let existing = try StoredTask.fetchOne(sameDestination, arguments: [task.url, destination.kind, destination.path]) {
            return (existing, false)
        }
        throw HaulError(.fileSystem, "could not add the task for \(Redaction.url(task.url)) to the session store")
    }

    static func update(
        id: String, _ db: Database, now: Double, _ change: (inout StoredTask) -> Void
    ) throws -> StoredTask? {
        guard let original = try fetch(id: id, db) else { return nil }
        return try update(original, db, now: now, change)
    }

    /// Applies `change` to `original`, the task as just read in this transaction, and saves it.
    static func update(
        _ original: StoredTask, _ db: Database, now: Double, _ change: (inout StoredTask) -> Void
    ) throws -> StoredTask {
        var task = original
        change(&task)
        task.id = original.id
        task.sequence = original.sequence
        task.spec = original.spec
        task.createdAt = original.createdAt
        // A store of one process keeps no node, claim or request (a fleet's claims set them).
        task.node = original.node
        task.epoch = original.epoch
        task.requested = original.requested
        task.updatedAt = now
        try db.cachedStatement(sql: StoredTask.updateSQL).execute(arguments: task.updateArguments())
        return task
    }
}
