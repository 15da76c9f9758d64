import Foundation
import NIOConcurrencyHelpers
@testable import HaulCore
@testable import HaulFleet
@testable import HaulKit

/// A fleet's session store (a real ``PostgresSessionStore``) that a test can take out of reach: while it is ``down``,
/// every call throws ``SessionStoreError/unavailable`` as a database that stopped makes every call throw, and while
/// ``claimsBlocked`` its claims find nothing (so that no node takes a task over and the test sees what its own node
/// writes). While updates are held (``holdUpdates()``), a task's update (a progress write) is not answered until
/// ``releaseUpdates()``, as a statement the database never answers; every renewal's tasks are kept (``renewals``).
final class OutageStore: SharedSessionStore, @unchecked Sendable {
    let inner: PostgresSessionStore
    private let state = NIOLockedValueBox((down: false, claimsBlocked: false))
    private let held = NIOLockedValueBox((holding: false, waiting: [CheckedContinuation<Void, Never>]()))
    private let renewed = NIOLockedValueBox([Set<String>]())

    init(_ inner: PostgresSessionStore) { self.inner = inner }

    var down: Bool {
        get { state.withLockedValue { $0.down } }
        set { state.withLockedValue { $0.down = newValue } }
    }

    var claimsBlocked: Bool {
        get { state.withLockedValue { $0.claimsBlocked } }
        set { state.withLockedValue { $0.claimsBlocked = newValue } }
    }

    private func reach() throws {
        if down { throw SessionStoreError.unavailable("the test's store is down") }
    }

    /// From now on, updates wait until ``releaseUpdates()``.
    func holdUpdates() {
        held.withLockedValue { $0.holding = true }
    }

    /// Lets the updates held go on (and the later ones through).
    func releaseUpdates() {
        let waiting = held.withLockedValue { held in
            held.holding = false
            defer { held.waiting = [] }
            return held.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// How many updates wait now.
    var heldUpdates: Int { held.withLockedValue { $0.waiting.count } }

    /// The tasks of each renewal asked so far (answered or not).
    var renewals: [Set<String>] { renewed.withLockedValue { $0 } }

    private func waitWhileHeld() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = held.withLockedValue { held in
                if held.holding { held.waiting.append(continuation) }
                return !held.holding
            }
            if now { continuation.resume() }
        }
    }

    var location: String { inner.location }
    var node: String { inner.node }
    var leaseTerms: LeaseTerms { inner.leaseTerms }
    var isListening: Bool { !down && inner.isListening }
    var quietPollInterval: Duration { inner.quietPollInterval }
    func doorbell() -> AsyncStream<Void> { inner.doorbell() }

    nonisolated(nonsending) func add(_ requests: [DownloadRequest]) async throws -> [(task: StoredTask, created: Bool)] {
        try reach()
        return try await inner.add(requests)
    }

    nonisolated(nonsending) func tasks() async throws -> [StoredTask] {
        try reach()
        return try await inner.tasks()
    }

    nonisolated(nonsending) func tasks(in state: TaskState, limit: Int?) async throws -> [StoredTask] {
        try reach()
        return try await inner.tasks(in: state, limit: limit)
    }

    nonisolated(nonsending) func tasks(after sequence: Int64, limit: Int) async throws -> [StoredTask] {
        try reach()
        return try await inner.tasks(after: sequence, limit: limit)
    }

    nonisolated(nonsending) func tasks(in state: TaskState, priority: Int, after sequence: Int64, limit: Int) async throws -> [StoredTask] {
        try reach()
        return try await inner.tasks(in: state, priority: priority, after: sequence, limit: limit)
    }

    nonisolated(nonsending) func highestPriority(in state: TaskState, below priority: Int?) async throws -> Int? {
        try reach()
        return try await inner.highestPriority(in: state, below: priority)
    }

    nonisolated(nonsending) func tasks(ids: [String]) async throws -> [StoredTask] {
        try reach()
        return try await inner.tasks(ids: ids)
    }

    nonisolated(nonsending) func task(id: String) async throws -> StoredTask? {
        try reach()
        return try await inner.task(id: id)
    }

    nonisolated(nonsending) func hasWaitingOrRunningTasks() async throws -> Bool {
        try reach()
        return try await inner.hasWaitingOrRunningTasks()
    }

    nonisolated(nonsending) func count() async throws -> Int {
        try reach()
        return try await inner.count()
    }

    nonisolated(nonsending) func update(id: String, lease: TaskLease?, _ change: (inout StoredTask) -> Void) async throws -> StoredTask? {
        await waitWhileHeld()
        try reach()
        return try await inner.update(id: id, lease: lease, change)
    }

    nonisolated(nonsending) func updateAll(ids: [String], _ change: (inout StoredTask) -> Void) async throws -> [StoredTask] {
        try reach()
        return try await inner.updateAll(ids: ids, change)
    }

    nonisolated(nonsending) func remove(ids: [String]) async throws {
        try reach()
        try await inner.remove(ids: ids)
    }

    nonisolated(nonsending) func startIfWaiting(id: String) async throws -> (task: StoredTask, started: Bool)? {
        try reach()
        return try await inner.startIfWaiting(id: id)
    }

    nonisolated(nonsending) func clearStarts(ids: [String]) async throws {
        try reach()
        try await inner.clearStarts(ids: ids)
    }

    nonisolated(nonsending) func unendedStarts(ids: [String]) async throws -> [String: Int] {
        try reach()
        return try await inner.unendedStarts(ids: ids)
    }

    nonisolated(nonsending) func conclude(
        id: String, lease: TaskLease?, journaling kind: String?, payload: (StoredTask) -> String, finalRecord: StoredRecord?,
        _ change: (inout StoredTask) -> Void
    ) async throws -> (old: TaskState, task: StoredTask, sequence: Int64?)? {
        try reach()
        return try await inner.conclude(id: id, lease: lease, journaling: kind, payload: payload, finalRecord: finalRecord, change)
    }

    nonisolated(nonsending) func journal(after sequence: Int64) async throws -> [JournalEntry] {
        try reach()
        return try await inner.journal(after: sequence)
    }

    nonisolated(nonsending) func acknowledgeJournal(taskIDs ids: [String]) async throws -> Int {
        try reach()
        return try await inner.acknowledgeJournal(taskIDs: ids)
    }

    nonisolated(nonsending) func acknowledgeJournal(through sequence: Int64) async throws -> Int {
        try reach()
        return try await inner.acknowledgeJournal(through: sequence)
    }

    func record(key: String) throws -> String? {
        try reach()
        return try inner.record(key: key)
    }

    func save(_ record: StoredRecord, choice: StoredRecord?, fence: RecordFence?) throws {
        try reach()
        try inner.save(record, choice: choice, fence: fence)
    }

    func removeRecord(key: String) throws {
        try reach()
        try inner.removeRecord(key: key)
    }

    func choice(key: String) throws -> String? {
        try reach()
        return try inner.choice(key: key)
    }

    func setChoice(key: String, path: String?) throws {
        try reach()
        try inner.setChoice(key: key, path: path)
    }

    nonisolated(nonsending) func claim(_ limits: FleetClaim.Limits) async throws -> [ClaimedTask] {
        try reach()
        if claimsBlocked { return [] }
        return try await inner.claim(limits)
    }

    nonisolated(nonsending) func renew(_ leases: [String: TaskLease]) async throws -> Set<String> {
        renewed.withLockedValue { $0.append(Set(leases.keys)) }
        try reach()
        return try await inner.renew(leases)
    }

    nonisolated(nonsending) func request(_ request: TaskRequest, id: String) async throws -> RequestOutcome {
        try reach()
        return try await inner.request(request, id: id)
    }

    nonisolated(nonsending) func changes(since cursor: Int64?) async throws -> FleetChanges {
        try reach()
        return try await inner.changes(since: cursor)
    }
}
