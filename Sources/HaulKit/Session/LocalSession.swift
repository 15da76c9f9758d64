import Foundation

/// A session whose downloads run in this process: the backend of an in-process ``DownloadSession``,
/// and what `haul daemon` runs for background sessions (then with a journal of finished and failed events).
package actor LocalSession: SessionBackend {
    nonisolated let identifier: String
    let configuration: SessionConfiguration
    package nonisolated let store: any SessionStore
    /// The store as a fleet's, when several daemons share it: the session claims its tasks from it.
    nonisolated let shared: (any SharedSessionStore)?
    /// A fleet node's leases, claims and view of the others (LocalSession+Fleet.swift).
    var fleet = FleetBookkeeping()
    package nonisolated let engine: TransferEngine
    /// The tasks' resume records, in `store` (the engine's records too).
    nonisolated let records: SessionRecords
    private let lock: FileLock
    private var maxConcurrent: Int
    /// What a task's spec is resolved over to run: the session's folder, headers, settings, shared rate limit.
    let downloadDefaults: DownloadDefaults
    private var running: [String: Task<Void, Never>] = [:]
    /// The running downloads' events, read by the session in batches (``readEngineEvents()``).
    nonisolated let engineEvents = DownloadEventInbox()
    /// A running task's latest progress being written to the store, if any: its end is written after it.
    var progressSaves: [String: Task<Void, Never>] = [:]
    /// What the user asked of a running task that is stopping.
    private var stopping: [String: TaskCommand] = [:]
    /// The latest progress of each running task (the store is updated at most once a second).
    private var progress: [String: DownloadProgress] = [:]
    /// Why a running task is not moving: its last retry, until bytes arrive past where it stood then.
    private var retryNotes: [String: (text: String, bytes: Int64)] = [:]
    private var hosts: [String: String] = [:]
    /// The first tasks stored as waiting, in the scheduler's order (the store keeps them all): a session of a million
    /// tasks holds a few thousand in memory. The session is the store's only writer, and every change of a task's
    /// state or priority goes through ``noteStored(_:)`` (or ``forget(_:)`` when it is removed). A fleet's node holds
    /// the ones it heard of whole (it claims from the store).
    var window: WaitingWindow
    private var lastSaved: [String: ContinuousClock.Instant] = [:]
    /// Where each running task's download writes and its length, once known: stored with its next progress or
    /// when it ends (a download of a few milliseconds costs no write of its own for this), shown in snapshots meanwhile.
    private var startedFiles: [String: StartedFile] = [:]
    struct StartedFile {
        var path: String
        var total: Int64?
    }
    /// Each subscriber gets every event (or one task's) with its journal sequence, if journaled.
    var subscribers: [UUID: Subscriber] = [:]
    struct Subscriber {
        var filter: String?
        var yield: @Sendable (SessionEvent, Int64?, String?) -> Void
        var finish: @Sendable () -> Void
    }
    /// Callers of ``waitUntilIdle()`` waiting: resumed by the event after which the session is idle, or by closing.
    /// Not an event stream of their own: such a waiter would be woken for every event of every download.
    var idleWaiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    /// The queue drained (``SessionEvent/allFinished``) while idle waiters waited: they are resumed once no start or
    /// end is being written.
    var drainedMeanwhile = false
    /// Finished and failed events go to the store's journal, in the same transaction as the task's state.
    let journaling: Bool
    private var endedSinceDrain = false
    /// Tasks taken from the window and not yet running (their start is being written).
    var startsUnderway = 0
    /// Downloads that ended and whose end is not yet written.
    var endsUnderway = 0
    private var closed = false
    /// What the removal of a running task did with its files, said by its end (``finish(_:_:)``) for the
    /// ``remove(_:deleteFile:)`` that asked, which returns it.
    var removalNotes: [String: RemovedFile] = [:]

    /// Tasks that kept dying with their process are failed instead of resumed (the daemon's sessions; a
    /// person's `haul get` that is killed again and again should go on where it was).
    let failsCrashingTasks: Bool

    /// With `journaling` (the daemon's sessions), finished and failed events go to the store's journal, and a task
    /// that was running when ``maxUnendedStarts`` processes in a row died is failed instead of resumed again.
    /// `store` keeps the session (default: its SQLite file under `HAUL_HOME/sessions/<identifier>/`).
    package init(
        identifier: String, configuration: SessionConfiguration, journaling: Bool = false, store: (any SessionStore)? = nil
    ) async throws {
        try SessionFolder.validate(identifier: identifier)
        let folder = SessionFolder.path(identifier, home: configuration.home)
        try POSIX.makePrivateDirectories(folder, root: configuration.home.path)
        self.identifier = identifier
        self.configuration = configuration
        self.journaling = journaling
        self.failsCrashingTasks = journaling
        self.lock = try FileLock(
            path: folder + "/session.lock",
            busy: HaulError(.busy, "session \"\(identifier)\" is open in another process; close it there first", reason: .busy))
        // Only a session that fails crashing tasks reads how often each was started: only it counts them.
        self.store = try store ?? TaskStore(path: folder + "/tasks.sqlite", countsStarts: failsCrashingTasks)
        self.shared = self.store as? any SharedSessionStore
        var engineConfiguration = TransferEngine.Configuration()
        engineConfiguration.stallTimeout = configuration.stallTimeout
        engineConfiguration.connectTimeout = configuration.connectTimeout
        engineConfiguration.logger = configuration.logger
        engineConfiguration.isReservedPath = configuration.isReservedPath
        // Every download the session may run against one host gets a connection (more than 8 would
        // otherwise show as running while they wait for one).
        engineConfiguration.maxConnectionsPerHost = max(engineConfiguration.maxConnectionsPerHost, configuration.maxDownloadsPerHost)
        // Many files from one host: over HTTP/2 they are streams of one connection (large files keep HTTP/1.1).
        engineConfiguration.multiplexesHTTP2 = true
        // The tasks' resume records live in the session's store with the tasks (one store for a task's progress).
        self.records = SessionRecords(store: self.store, files: TransferRecordStore(home: configuration.home))
        self.engine = TransferEngine(records: records, configuration: engineConfiguration)
        self.maxConcurrent = configuration.maxConcurrentDownloads
        self.window = shared == nil ? WaitingWindow(pageSize: configuration.waitingPageSize) : WaitingWindow(maxHeld: Int.max, isComplete: true)
        var defaults = DownloadDefaults()
        defaults.directory = configuration.defaultDirectory ?? "."
        defaults.headers = configuration.defaultHeaders
        defaults.retry = configuration.retry
        defaults.settings = configuration.downloadSettings
        defaults.sharedRateLimiter = configuration.rateLimit.map { RateLimiter(bytesPerSecond: $0) }
        defaults.progressInterval = configuration.progressInterval
        defaults.failFastBeforeData = configuration.failsFastBeforeData
        self.downloadDefaults = defaults
        // Tasks still stored as running were running when the last process stopped. One that two processes in
        // a row died running (it may be what kills them) fails instead of being resumed a third time. In a fleet,
        // only this node's: another node's are claimed when its lease expires, by the same rule.
        let node = shared?.node
        let stale = try await self.store.tasks(in: .running).filter { node == nil || $0.node == node }
        let starts = failsCrashingTasks ? try await self.store.unendedStarts(ids: stale.map(\.id)) : [:]
        let crashing = stale.map(\.id).filter { starts[$0, default: 0] >= Self.maxUnendedStarts }
        let resume = configuration.resumeRunningTasksOnRelaunch
        _ = try await self.store.updateAll(ids: stale.map(\.id).filter { starts[$0, default: 0] < Self.maxUnendedStarts }) {
            $0.state = TaskTransitions.restored($0.state, resumeRunning: resume)
        }
        await failTasksThatStoppedTheProcess(crashing)
        // A host found to speak HTTP/2 may run more of the session's downloads at once (as streams).
        engine.connections.onMultiplexed { [weak self] _ in
            Task { await self?.schedule() }
        }
        if let shared { try await startFleetLoops(shared) }
        // Otherwise the first page of the waiting tasks is read by the first schedule().
        await schedule()
    }

    // MARK: Controlling tasks (adding them: LocalSession+Adding.swift)

    /// Applies `command` to the tasks `ids` (every task when `nil`).
    package func apply(_ command: TaskCommand, to ids: [String]?) async throws {
        let all = ids == nil ? try await store.tasks().map(\.id) : []
        try await self.command(command, ids ?? all)
    }

    @discardableResult
    package func remove(_ ids: [String]?, deleteFile: Bool) async throws -> [RemovedFile] {
        let all = ids == nil ? try await store.tasks().map(\.id) : []
        var files: [RemovedFile] = []
        for id in ids ?? all {
            guard let task = try await store.task(id: id) else { continue }
            if running[id] != nil {
                // Its end removes it and announces that (``finish(_:_:)``); here only if that could not be done.
                markRemoving(id)
                await stop(id, as: .cancel)
                if let said = removalNotes.removeValue(forKey: id) { files.append(said) }
                if try await store.task(id: id) == nil { continue }
                // It ended otherwise meanwhile (finished, failed): the mark must not outlive it (a task added again
                // with its id would be removed at its next pause).
                _ = removing(id)
            }
            // In a fleet, a task another node runs is removed by that node (or here, when no node holds it).
            if let shared, running[id] == nil, task.state == .running, try await askToRemove(shared, task) { continue }  // announced there
            let options = self.options(for: task)
            // Only the very file the task published goes; anything else at its name stays, and is said.
            if deleteFile, task.state == .finished, let path = task.filePath ?? engine.knownPath(options),
               let said = engine.deleteFinishedFile(at: path, options, id: id) {
                files.append(said)
            }
            if let said = engine.discardPartialData(options, id: id) { files.append(said) }
            try await store.remove(ids: [id])
            forget(id)
            emit(.removed(id: id))
        }
        await schedule()
        return files
    }

    package func setPriority(_ priority: Int, for ids: [String]) async throws {
        for task in try await store.updateAll(ids: ids, { $0.priority = priority }) { noteStored(task) }
        await schedule()
    }

    package func setMaxConcurrentDownloads(_ count: Int) async {
        maxConcurrent = max(0, count)
        await schedule()
    }

    func tasks() async throws -> [TaskSnapshot] {
        try await store.tasks().map(snapshot(of:))
    }

    /// Up to `limit` tasks added after the one with sequence `sequence`, each with its sequence (a page).
    package func tasks(after sequence: Int64, limit: Int) async throws -> [(sequence: Int64, task: TaskSnapshot)] {
        try await store.tasks(after: sequence, limit: limit).map { ($0.sequence, snapshot(of: $0)) }
    }

    /// The tasks this session runs now, in the order added: read by their ids, however long the queue.
    package func runningTasks() async throws -> [TaskSnapshot] {
        try await tasks(ids: Array(running.keys)).map(\.task)
    }

    /// The tasks of `ids` that exist, in the order added, each with its sequence.
    package func tasks(ids: [String]) async throws -> [(sequence: Int64, task: TaskSnapshot)] {
        try await store.tasks(ids: ids).map { ($0.sequence, snapshot(of: $0)) }
    }

    func task(_ id: String) async throws -> TaskSnapshot? {
        try await store.task(id: id).map(snapshot(of:))
    }

    /// Tasks running or waiting to run (in a fleet: running here, and one more while a claim may find work; one more,
    /// too, while waiting tasks are in the store only; and those whose end waits to be written).
    package func activeTaskCount() -> Int {
        running.count + window.queue.count + (window.isComplete ? 0 : 1) + (shared != nil && fleet.mayHaveWork ? 1 : 0)
            + fleet.ending.count
    }

    // MARK: Bookkeeping for the running tasks

    var isClosed: Bool { closed }
    var currentMaxConcurrent: Int { maxConcurrent }
    var hasRunningTasks: Bool { !running.isEmpty }
    var runningCount: Int { running.count }
    func noteHost(_ id: String, _ host: String) { hosts[id] = host }

    /// How many tasks run against each host.
    func runningPerHost() -> [String: Int] {
        var counts: [String: Int] = [:]
        for id in running.keys { counts[hosts[id] ?? "", default: 0] += 1 }
        return counts
    }

    /// The file a task's destination names from the start (a folder's file is named by the server later).
    static func filePath(of destination: DownloadSpec.Destination?) -> String? {
        if case .file(let path)? = destination { return path }
        return nil
    }
    func isRunning(_ id: String) -> Bool { running[id] != nil }
    /// Asks a running task to stop, without waiting.
    func cancelRunning(_ id: String) { running[id]?.cancel() }
    func track(_ id: String, _ task: Task<Void, Never>) { running[id] = task }

    /// Forgets a running task; returns what the user had asked of it while it stopped.
    func untrack(_ id: String) -> TaskCommand? {
        running[id] = nil
        progress[id] = nil
        retryNotes[id] = nil
        hosts[id] = nil
        lastSaved[id] = nil
        startedFiles[id] = nil
        return stopping.removeValue(forKey: id)
    }

    func markEnded() { endedSinceDrain = true }
    var drainPending: Bool { endedSinceDrain }

    func takeDrainSignal() -> Bool {
        defer { endedSinceDrain = false }
        return endedSinceDrain
    }

    func noteProgress(_ id: String, _ latest: DownloadProgress) {
        progress[id] = latest
        if let note = retryNotes[id], latest.bytes > note.bytes { retryNotes[id] = nil }
    }

    func noteRetry(_ id: String, retry: Int, of maxRetries: Int, after delay: Duration, reason: String) {
        let seconds = max(1, Int(delay.seconds.rounded()))
        retryNotes[id] = ("retry \(retry)/\(maxRetries) in \(seconds) s: \(reason)", progress[id]?.bytes ?? 0)
    }

    /// Every connection to `host` is taken by the session's other downloads: `id` waits for one (until it moves).
    func noteWaitingForConnection(_ id: String, host: String) {
        retryNotes[id] = ("waiting for a connection to \(host)", progress[id]?.bytes ?? 0)
    }

    func retryNote(_ id: String) -> String? { retryNotes[id]?.text }
    func noteStartedFile(_ id: String, _ file: StartedFile) { startedFiles[id] = file }
    func startedFile(_ id: String) -> StartedFile? { startedFiles[id] }
    func latestProgress(_ id: String) -> DownloadProgress? { progress[id] }

    /// Where task `id`'s bytes are: a running segmented download's segments, else its first `bytes`; nil when
    /// the session has no such task.
    package func segmentMap(_ id: String) async throws -> SegmentMap? {
        guard let task = try await store.task(id: id) else { return nil }
        let latest = progress[id]
        if task.state == .running, let latest, let segments = latest.segments, let total = latest.total {
            return SegmentMap(total: total, segments: segments, fetching: latest.fetching)
        }
        // A segmented download that is not running: its resume record says which segments hold what.
        if task.state != .finished, task.state != .running, let path = task.filePath,
           let record = try? engine.store.load(TransferRecord.key(destinationPath: path)),
           let segments = record.segments, let total = record.totalLength, total > 0 {
            return SegmentMap(total: total, segments: segments, running: false)
        }
        return SegmentMap(total: latest?.total ?? task.total, bytes: latest?.bytes ?? task.bytes, running: task.state == .running)
    }

    /// The task was just written to the store: its next progress is saved a second from now.
    func noteSaved(_ id: String) { lastSaved[id] = ContinuousClock.now }

    /// Progress is written to the store at most once a second per task.
    func shouldSaveProgress(_ id: String) -> Bool {
        let now = ContinuousClock.now
        if let last = lastSaved[id], now - last < .seconds(1) { return false }
        lastSaved[id] = now
        return true
    }

    /// Asks a running task to stop and waits until it has.
    func stop(_ id: String, as command: TaskCommand) async {
        guard let task = running[id] else { return }
        stopping[id] = command
        task.cancel()
        await task.value
    }

    package func close() async {
        guard !closed else { return }
        closed = true
        // All at once: each saves its progress in parallel (a daemon stopping on SIGTERM has a deadline).
        // Their stored state stays `running`, so the next open restores them as configured.
        let stoppingIDs = Array(running.keys)
        let stopping = Array(running.values)
        let files = startedFiles
        stopFleetLoops()
        for task in stopping { task.cancel() }
        for task in stopping { await task.value }
        // They stopped in order: a crash did not happen while they ran.
        try? await store.clearStarts(ids: stoppingIDs)
        // Where each one writes was only in memory until now. In a fleet, each is given back at once (as it would be
        // restored here), so that another node goes on with it instead of waiting for its lease to expire.
        let resume = configuration.resumeRunningTasksOnRelaunch
        for id in stoppingIDs {
            let file = files[id]
            let giveBack = shared != nil
            _ = await write(for: id, retrying: false) { lease in
                try await self.store.update(id: id, lease: lease) {
                    if let file { $0.filePath = file.path; $0.total = file.total ?? $0.total }
                    if giveBack { $0.state = TaskTransitions.restored($0.state, resumeRunning: resume) }
                }
            }
        }
        fleet.leases = [:]
        for (_, subscriber) in subscribers { subscriber.finish() }
        subscribers = [:]
        resumeIdleWaiters()
        try? await engine.shutdown()
        lock.release()
    }
}

extension LocalSession {

    /// A task that this many processes in a row started and died running is failed rather than resumed again.
    static let maxUnendedStarts = 2
}
