/// What a download session keeps, whoever keeps it: its tasks (each a ``DownloadSpec`` and where it stands), the
/// starts that tell a crash loop, the journal of finished and failed events, and the resume records and name choices
/// of its downloads.
///
/// ``TaskStore`` keeps one session in a SQLite file under `HAUL_HOME` (the default: nothing else is needed on one
/// machine). A fleet keeps every session in PostgreSQL (HaulFleet's `PostgresSessionStore`), shared by several
/// daemons, and adds claiming, leases and fencing (``SharedSessionStore``). ``LocalSession`` works against this
/// protocol only.
///
/// Each method that changes something is one transaction: it returns once its changes are committed (durable against
/// a crash of the process), and a crash keeps all of them or none. The task methods run on their caller's executor
/// (`nonisolated(nonsending)`): an implementation that needs no I/O wait (SQLite) never suspends its caller, so an
/// actor calling it keeps its turn exactly as with a synchronous call.
///
/// A write that names a ``TaskLease`` is fenced: a store that has leases makes it only while the task is still held
/// under that lease, else throws ``SessionStoreError/leaseLost``. A store of one process (SQLite) has no leases and
/// ignores them.
package protocol SessionStore: AnyObject, Sendable {
    /// Where the session is kept (a file, or a database and the session's name), for messages; never a password.
    var location: String { get }

    // MARK: Tasks

    /// Adds tasks in one transaction. A task with the id, or the URL and destination, of an existing one (or of an
    /// earlier one of the batch) is not added: that one is returned with `created == false`. Results follow the
    /// input order. Each request's spec must have an absolute file or folder destination (a session sees to it).
    nonisolated(nonsending) func add(_ requests: [DownloadRequest]) async throws -> [(task: StoredTask, created: Bool)]
    /// All tasks, in the order they were added.
    nonisolated(nonsending) func tasks() async throws -> [StoredTask]
    /// The tasks in `state`, highest priority first, then in the order added; with `limit`, only the first ones.
    nonisolated(nonsending) func tasks(in state: TaskState, limit: Int?) async throws -> [StoredTask]
    /// Up to `limit` tasks added after the one whose sequence is `sequence` (0: from the first), in the order added.
    nonisolated(nonsending) func tasks(after sequence: Int64, limit: Int) async throws -> [StoredTask]
    /// Up to `limit` tasks in `state` of priority `priority` added after the one whose sequence is `sequence`, in the
    /// order added (one range of the queue's index).
    nonisolated(nonsending) func tasks(in state: TaskState, priority: Int, after sequence: Int64, limit: Int) async throws -> [StoredTask]
    /// The highest priority of a task in `state` below `priority` (any, when `nil`); `nil` when there is none.
    nonisolated(nonsending) func highestPriority(in state: TaskState, below priority: Int?) async throws -> Int?
    /// The tasks of `ids` that exist, each once, in the order they were added.
    nonisolated(nonsending) func tasks(ids: [String]) async throws -> [StoredTask]
    /// The task `id`, if there is one.
    nonisolated(nonsending) func task(id: String) async throws -> StoredTask?
    /// Whether any task is waiting or running.
    nonisolated(nonsending) func hasWaitingOrRunningTasks() async throws -> Bool
    /// How many tasks there are.
    nonisolated(nonsending) func count() async throws -> Int
    /// Applies `change` to the task `id` as stored now and saves it with a new `updatedAt`; `nil` when there is no
    /// such task. `id`, `sequence`, `spec` and `createdAt` cannot be changed. With `lease`, fenced.
    nonisolated(nonsending) func update(
        id: String, lease: TaskLease?, _ change: (inout StoredTask) -> Void
    ) async throws -> StoredTask?
    /// Applies `change` to each task of `ids` in one transaction; the updated tasks in the order of `ids`, skipping
    /// ids that do not exist.
    nonisolated(nonsending) func updateAll(ids: [String], _ change: (inout StoredTask) -> Void) async throws -> [StoredTask]
    /// Removes the tasks of `ids` (and what is kept about their starts); unknown ids are ignored.
    nonisolated(nonsending) func remove(ids: [String]) async throws

    // MARK: Starts: crash loops

    /// Moves the task `id` to `running` if it is waiting, and counts one more start of it that has not ended, in one
    /// transaction: written before the transfer begins, so that a process that dies during it leaves the count.
    /// The task as stored and whether it was started; `nil` when there is no such task.
    nonisolated(nonsending) func startIfWaiting(id: String) async throws -> (task: StoredTask, started: Bool)?
    /// Forgets the starts of `ids`: they ended, or stopped in an orderly way.
    nonisolated(nonsending) func clearStarts(ids: [String]) async throws
    /// How many processes in a row started each of `ids` and stopped without seeing it end (absent: none).
    nonisolated(nonsending) func unendedStarts(ids: [String]) async throws -> [String: Int]
    /// A task's run ended: applies `change` (its new state among others), forgets its start, writes `finalRecord`
    /// (the download's final resume record) and, with `kind`, appends a journal entry about the result (`payload` of
    /// the changed task), all in one transaction. The state it was in, the changed task and the entry's sequence
    /// (when journaling); `nil` when there is no such task. With `lease`, fenced.
    nonisolated(nonsending) func conclude(
        id: String, lease: TaskLease?, journaling kind: String?, payload: (StoredTask) -> String, finalRecord: StoredRecord?,
        _ change: (inout StoredTask) -> Void
    ) async throws -> (old: TaskState, task: StoredTask, sequence: Int64?)?

    /// ``conclude(id:lease:journaling:payload:finalRecord:_:)`` of `id`, then ``startIfWaiting(id:)`` of `next`
    /// (the task that takes the slot `id` leaves): in one transaction where the store can, else one after the other.
    nonisolated(nonsending) func conclude(
        id: String, lease: TaskLease?, journaling kind: String?, payload: (StoredTask) -> String, finalRecord: StoredRecord?,
        thenStarting next: String, _ change: (inout StoredTask) -> Void
    ) async throws -> ConcludedAndStarted

    // MARK: Journal

    /// Unacknowledged entries with a sequence above `sequence`, oldest first.
    nonisolated(nonsending) func journal(after sequence: Int64) async throws -> [JournalEntry]
    /// Acknowledges (deletes) every entry about the tasks `ids`; how many there were.
    nonisolated(nonsending) func acknowledgeJournal(taskIDs ids: [String]) async throws -> Int
    /// Acknowledges (deletes) every entry up to and including `sequence`; how many there were.
    nonisolated(nonsending) func acknowledgeJournal(through sequence: Int64) async throws -> Int

    // MARK: Resume records and name choices
    //
    // Synchronous: the transfer engine calls them as it writes, most of them from its blocking-I/O threads
    // (``Checkpointer``). Each write is one transaction.

    /// The resume record kept under `key` (``TransferRecord`` as JSON), if any.
    func record(key: String) throws -> String?
    /// Replaces the record under its key and, with `choice`, remembers a `--dir` download's chosen name, in one
    /// transaction. With `fence`, only while that task still holds that lease.
    func save(_ record: StoredRecord, choice: StoredRecord?, fence: RecordFence?) throws
    /// Forgets the record under `key`.
    func removeRecord(key: String) throws
    /// The path a `--dir` download chose, kept under `key`.
    func choice(key: String) throws -> String?
    /// Remembers (or, with `nil`, forgets) the path a `--dir` download chose.
    func setChoice(key: String, path: String?) throws
}

/// A row of a session's resume records (a ``TransferRecord`` as JSON under its key) or name choices (a path under
/// the key of a URL and folder).
package struct StoredRecord: Equatable, Sendable {
    /// ``TransferRecord/key(destinationPath:)`` for a record, ``TransferRecord/directoryKey(url:directory:)`` for a choice.
    package var key: String
    /// The record's JSON, or the chosen path.
    package var value: String

    package init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}

/// Why a session store refused or could not make a change.
package enum SessionStoreError: Error, Equatable, CustomStringConvertible {
    /// The write was fenced by a lease the store no longer shows: another node holds the task now, or it was taken
    /// from this one. The node must stop writing anything for the task at once.
    case leaseLost(taskID: String)
    /// The store cannot be reached now (a database down, a connection broken): the change may or may not have been
    /// made, and may be tried again. The message says where, without a password.
    case unavailable(String)
    /// The store refused the change (the message says why).
    case refused(String)

    /// One line for a person.
    package var description: String {
        switch self {
        case .leaseLost(let id): return "another node of the fleet runs task \(id) now"
        case .unavailable(let message), .refused(let message): return message
        }
    }

    /// The error as a person and a client see it.
    package var haulError: HaulError {
        switch self {
        case .leaseLost: return HaulError(.interrupted, description, reason: .interrupted)
        case .unavailable: return HaulError(.network, description)
        case .refused: return HaulError(.fileSystem, description)
        }
    }
}

/// Which task a write of a resume record is for, and the lease it must still hold (a fleet's fencing).
package struct RecordFence: Equatable, Sendable {
    /// The task whose download writes the record.
    package var taskID: String
    /// The lease its node runs it under.
    package var lease: TaskLease

    package init(taskID: String, lease: TaskLease) {
        self.taskID = taskID
        self.lease = lease
    }
}

/// What ``SessionStore/conclude(id:lease:journaling:payload:finalRecord:thenStarting:_:)`` did: the task that ended
/// (as its conclusion returns it) and the one started after it (as its start returns it).
package typealias ConcludedAndStarted = (
    concluded: (old: TaskState, task: StoredTask, sequence: Int64?)?, next: (task: StoredTask, started: Bool)?
)

extension SessionStore {
    /// One after the other: a store whose transactions cost little more than their statements.
    nonisolated(nonsending) package func conclude(
        id: String, lease: TaskLease?, journaling kind: String?, payload: (StoredTask) -> String, finalRecord: StoredRecord?,
        thenStarting next: String, _ change: (inout StoredTask) -> Void
    ) async throws -> ConcludedAndStarted {
        let concluded = try await conclude(id: id, lease: lease, journaling: kind, payload: payload, finalRecord: finalRecord, change)
        return (concluded, try await startIfWaiting(id: next))
    }

    /// ``update(id:lease:_:)`` without a lease.
    nonisolated(nonsending) package func update(id: String, _ change: (inout StoredTask) -> Void) async throws -> StoredTask? {
        try await update(id: id, lease: nil, change)
    }

    /// ``tasks(in:limit:)`` without a limit.
    nonisolated(nonsending) package func tasks(in state: TaskState) async throws -> [StoredTask] {
        try await tasks(in: state, limit: nil)
    }

    /// Up to `limit` tasks in `state` that come after `position` in the queue's order (higher priority first, then
    /// in the order added; from the first when `nil`): a page of the queue that stays in place while tasks are added
    /// or removed around it, read range by range of one priority on the queue's index.
    nonisolated(nonsending) package func tasks(
        in state: TaskState, after position: QueuePosition?, limit: Int
    ) async throws -> [StoredTask] {
        var result: [StoredTask] = []
        var priority: Int?
        if let position { priority = position.priority } else { priority = try await highestPriority(in: state, below: nil) }
        var sequence = position?.sequence ?? Int64.min
        // Bounded: each turn either fills the page or moves to a lower priority that some task has.
        while let current = priority, result.count < limit {
            result += try await tasks(in: state, priority: current, after: sequence, limit: limit - result.count)
            guard result.count < limit else { break }
            priority = try await highestPriority(in: state, below: current)
            sequence = Int64.min
        }
        return result
    }

    /// Every unacknowledged journal entry.
    nonisolated(nonsending) package func journal() async throws -> [JournalEntry] {
        try await journal(after: 0)
    }
}
