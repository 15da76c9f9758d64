/// A session store that several daemons share (a fleet): on top of what every ``SessionStore`` keeps, each node
/// claims the tasks it runs, under leases it renews, and reads what the other nodes changed.
///
/// A ``LocalSession`` on such a store keeps no queue of its own: it claims from the store (``claim(_:)``), by priority
/// then age within its slots and the per-host limits, fences every write for a running task with that task's lease
/// (a node that lost it is refused, and stops writing the file by its ``LeaseTerms`` deadline before anyone else may
/// claim), and turns the other nodes' changes (``changes(since:)``) into the events its clients get.
package protocol SharedSessionStore: SessionStore {
    /// This node's name in the fleet.
    var node: String { get }
    /// How long a claim or renewal holds a task.
    var leaseTerms: LeaseTerms { get }
    /// Whether the store's change notifications are heard now; when not, the session polls ``changes(since:)``
    /// every second.
    var isListening: Bool { get }
    /// How often the session reads the changes while the notifications are heard (a safety net: it needs none).
    var quietPollInterval: Duration { get }

    /// Claims tasks for this node: waiting ones, and running ones whose lease expired (their node died or was cut
    /// off), highest priority first, then the oldest, within `limits` (``FleetClaim``; the store fills in the fleet's
    /// running downloads per host). Rows another node is claiming at the same moment are skipped, never waited for.
    /// Each comes back running under a new lease of this node, its start counted.
    nonisolated(nonsending) func claim(_ limits: FleetClaim.Limits) async throws -> [ClaimedTask]
    /// Renews the leases of the tasks this node runs (by id); the ids whose lease it still held, now renewed.
    nonisolated(nonsending) func renew(_ leases: [String: TaskLease]) async throws -> Set<String>
    /// Carries out `request` of task `id` if no node runs it under a live lease, else asks the node that does (it
    /// stops the task and carries it out). What happened.
    nonisolated(nonsending) func request(_ request: TaskRequest, id: String) async throws -> RequestOutcome
    /// What changed in the session since `cursor` (`nil`: nothing yet, only a cursor for the next call): every task
    /// written since, with the node that wrote it, and the journal entries the other nodes appended.
    nonisolated(nonsending) func changes(since cursor: Int64?) async throws -> FleetChanges
    /// Rings once per batch of changes to the session anywhere in the fleet (and when the notifications are heard
    /// again after a break); ends when the store closes.
    func doorbell() -> AsyncStream<Void>
}

/// A task a node has just claimed.
package struct ClaimedTask: Sendable {
    /// The task as stored now: running, under ``lease``.
    package var task: StoredTask
    /// The new lease.
    package var lease: TaskLease
    /// It was running under another node's lease, which expired: this node takes it over.
    package var takenOver: Bool
    /// How many starts of it before this one ended without being seen to end (the crash-loop count).
    package var unendedStarts: Int

    package init(task: StoredTask, lease: TaskLease, takenOver: Bool, unendedStarts: Int) {
        self.task = task
        self.lease = lease
        self.takenOver = takenOver
        self.unendedStarts = unendedStarts
    }
}

/// What ``SharedSessionStore/request(_:id:)`` did.
package enum RequestOutcome: Sendable, Equatable {
    /// Another node runs the task under a live lease: it was asked to carry the request out.
    case asked
    /// No node held the task (its lease had expired): the request was carried out; the task as it is now (`nil`:
    /// removed), and the state it was in.
    case applied(old: TaskState, task: StoredTask?)
    /// The task is not running: the caller carries the request out as for any task (the task as it is).
    case notRunning(StoredTask)
    /// There is no such task.
    case missing
}

/// The changes ``SharedSessionStore/changes(since:)`` found.
package struct FleetChanges: Sendable {
    /// Each task written since the cursor, once, as it is now, with the node that wrote it last.
    package var tasks: [(task: StoredTask, writer: String?)]
    /// Journal entries other nodes appended since the cursor, oldest first.
    package var journal: [JournalEntry]
    /// Where the next call starts.
    package var cursor: Int64
    /// Changes were written past the cursor by a transaction that had not ended when these were read (or, with it,
    /// by one begun after another still running): a next call soon finds them.
    package var pending: Bool

    package init(tasks: [(task: StoredTask, writer: String?)], journal: [JournalEntry], cursor: Int64, pending: Bool = false) {
        self.tasks = tasks
        self.journal = journal
        self.cursor = cursor
        self.pending = pending
    }
}
