import Foundation

/// A persistent, managed queue of downloads, like a background `URLSession` or YCDownloadSession.
///
/// Tasks live in a SQLite store under `HAUL_HOME/sessions/<identifier>/`. Opening the same identifier
/// again after the process ended restores every task: running ones resume (or stay paused, as
/// configured), waiting ones stay queued in order. At most ``SessionConfiguration/maxConcurrentDownloads``
/// run at once, higher priority first, then first in first out.
public actor DownloadSession {
    public nonisolated let identifier: String
    let configuration: SessionConfiguration
    let store: TaskStore
    let engine: TransferEngine
    private let lock: SessionLock
    private var maxConcurrent: Int
    let rateLimiter: RateLimiter?
    private var running: [String: Task<Void, Never>] = [:]
    /// What the user asked of a running task that is stopping.
    private var stopping: [String: TaskCommand] = [:]
    private var speeds: [String: Double] = [:]
    private var hosts: [String: String] = [:]
    private var lastSaved: [String: ContinuousClock.Instant] = [:]
    private var subscribers: [UUID: (filter: String?, continuation: AsyncStream<SessionEvent>.Continuation)] = [:]
    private var endedSinceDrain = false
    private var closed = false

    /// Opens (or creates) the session `identifier`: letters, digits, `.`, `_` and `-`.
    public init(identifier: String, configuration: SessionConfiguration = SessionConfiguration()) async throws {
        guard !identifier.isEmpty, identifier.count <= 100,
              identifier.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }),
              !identifier.hasPrefix(".") else {
            throw HaulError(.usage, "session identifier \"\(identifier)\" must be letters, digits, '.', '_' or '-'")
        }
        let folder = configuration.home.path + "/sessions/" + identifier
        try POSIX.makeDirectories(folder)
        self.identifier = identifier
        self.configuration = configuration
        self.lock = try SessionLock(path: folder + "/session.lock", identifier: identifier)
        self.store = try TaskStore(path: folder + "/tasks.sqlite")
        var engineConfiguration = TransferEngine.Configuration()
        engineConfiguration.stallTimeout = configuration.stallTimeout
        self.engine = TransferEngine(home: configuration.home, configuration: engineConfiguration)
        self.maxConcurrent = configuration.maxConcurrentDownloads
        self.rateLimiter = configuration.rateLimit.map { RateLimiter(bytesPerSecond: $0) }
        let stale = try store.tasks().filter { $0.state == .running }.map(\.id)
        let resume = configuration.resumeRunningTasksOnRelaunch
        _ = try store.updateAll(ids: stale) { $0.state = TaskTransitions.restored($0.state, resumeRunning: resume) }
        await schedule()
    }

    // MARK: Adding and controlling tasks

    /// Adds a download, or returns the existing task with the same id or the same URL and destination.
    @discardableResult
    public func add(_ request: DownloadRequest) throws -> TaskSnapshot {
        let destination = request.destination ?? .directory(absolutePath(configuration.defaultDirectory ?? "."))
        let absolute: DownloadOptions.Destination
        switch destination {
        case .file(let file): absolute = .file(absolutePath(file))
        case .directory(let folder): absolute = .directory(absolutePath(folder))
        }
        let new = NewTask(
            id: request.id, url: request.url.absoluteString, destination: absolute,
            headers: request.headers.fields, checksum: request.checksum?.description, segments: request.segments,
            priority: request.priority)
        let (task, created) = try store.add(new)
        let snapshot = self.snapshot(of: task)
        if created {
            emit(.added(snapshot))
            Task { await self.schedule() }
        }
        return snapshot
    }

    /// Pauses tasks (running ones stop after saving their progress).
    public func pause(_ ids: [String]) async throws { try await command(.pause, ids) }
    public func resume(_ ids: [String]) async throws { try await command(.resume, ids) }
    /// Cancels tasks; their partial data is deleted.
    public func cancel(_ ids: [String]) async throws { try await command(.cancel, ids) }
    public func pauseAll() async throws { try await command(.pause, try store.tasks().map(\.id)) }
    public func resumeAll() async throws { try await command(.resume, try store.tasks().map(\.id)) }
    public func cancelAll() async throws { try await command(.cancel, try store.tasks().map(\.id)) }

    /// Removes tasks from the session, cancelling running ones; with `deleteFile`, finished files are deleted too.
    public func remove(_ ids: [String], deleteFile: Bool = false) async throws {
        for id in ids {
            guard let task = try store.task(id: id) else { continue }
            if running[id] != nil { await stop(id, as: .cancel) }
            if let options = self.options(for: task) {
                if deleteFile, task.state == .finished, let path = task.filePath ?? engine.knownPath(options) {
                    POSIX.unlink(path)
                }
                engine.discardPartialData(options)
            }
            try store.remove(ids: [id])
        }
        await schedule()
    }

    public func setPriority(_ priority: Int, for ids: [String]) async throws {
        _ = try store.updateAll(ids: ids) { $0.priority = priority }
        await schedule()
    }

    /// Changes the cap on concurrent downloads; takes effect at once.
    public func setMaxConcurrentDownloads(_ count: Int) async {
        maxConcurrent = max(0, count)
        await schedule()
    }

    /// Every task, in the order they were added.
    public func tasks() throws -> [TaskSnapshot] {
        try store.tasks().map(snapshot(of:))
    }

    public func task(_ id: String) throws -> TaskSnapshot? {
        try store.task(id: id).map(snapshot(of:))
    }

    // MARK: Events

    /// A new stream of every event from now on.
    public func events() -> AsyncStream<SessionEvent> { subscribe(filter: nil) }

    /// A new stream of the events about one task.
    public func events(for id: String) -> AsyncStream<SessionEvent> { subscribe(filter: id) }

    private func subscribe(filter: String?) -> AsyncStream<SessionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionEvent.self, bufferingPolicy: .unbounded)
        let key = UUID()
        subscribers[key] = (filter, continuation)
        continuation.onTermination = { _ in Task { await self.unsubscribe(key) } }
        return stream
    }

    private func unsubscribe(_ key: UUID) { subscribers[key] = nil }

    func emit(_ event: SessionEvent) {
        for (_, subscriber) in subscribers where subscriber.filter == nil || subscriber.filter == event.taskID {
            subscriber.continuation.yield(event)
        }
    }

    /// Waits until no task is waiting or running.
    public func waitUntilIdle() async {
        let stream = events()
        if isIdle() { return }
        for await event in stream {
            if case .allFinished = event { return }
            if isIdle() { return }
        }
    }

    private func isIdle() -> Bool {
        running.isEmpty && ((try? store.tasks(in: .waiting).isEmpty) ?? true)
    }

    // MARK: Bookkeeping for the running tasks

    var isClosed: Bool { closed }
    var currentMaxConcurrent: Int { maxConcurrent }
    var hasRunningTasks: Bool { !running.isEmpty }
    var runningCount: Int { running.count }
    func noteHost(_ id: String, _ host: String) { hosts[id] = host }

    /// The running tasks as the scheduler sees them (their host is what counts).
    func runningEntries() -> [SchedulerEntry] {
        running.keys.map { SchedulerEntry(id: $0, state: .running, priority: 0, sequence: 0, host: hosts[$0] ?? "") }
    }
    func isRunning(_ id: String) -> Bool { running[id] != nil }
    func track(_ id: String, _ task: Task<Void, Never>) { running[id] = task }

    /// Forgets a running task; returns what the user had asked of it while it stopped.
    func untrack(_ id: String) -> TaskCommand? {
        running[id] = nil
        speeds[id] = nil
        hosts[id] = nil
        lastSaved[id] = nil
        return stopping.removeValue(forKey: id)
    }

    func markEnded() { endedSinceDrain = true }
    var drainPending: Bool { endedSinceDrain }

    func takeDrainSignal() -> Bool {
        defer { endedSinceDrain = false }
        return endedSinceDrain
    }

    func noteSpeed(_ id: String, _ speed: Double?) { speeds[id] = speed }
    func speed(_ id: String) -> Double? { speeds[id] }

    /// Progress is written to the store at most once a second per task.
    func shouldSaveProgress(_ id: String) -> Bool {
        let now = ContinuousClock.now
        if let last = lastSaved[id], now - last < .seconds(1) { return false }
        lastSaved[id] = now
        return true
    }

    /// Asks a running task to stop and waits until it has. `nil` (closing): its stored state stays `running`,
    /// so the next open restores it as configured.
    func stop(_ id: String, as command: TaskCommand?) async {
        guard let task = running[id] else { return }
        if let command { stopping[id] = command }
        task.cancel()
        await task.value
    }

    /// Stops running tasks (saving their progress, restored as configured next time), ends the event streams.
    public func close() async {
        guard !closed else { return }
        closed = true
        for id in Array(running.keys) { await stop(id, as: nil) }
        for (_, subscriber) in subscribers { subscriber.continuation.finish() }
        subscribers = [:]
        try? await engine.shutdown()
        lock.release()
    }
}
