import Foundation

/// A persistent, managed queue of downloads, like a background `URLSession` or YCDownloadSession.
///
/// Tasks live in a SQLite store under `HAUL_HOME/sessions/<identifier>/`. Opening the same identifier
/// again after the process ended restores every task: running ones resume (or stay paused, as
/// configured), waiting ones stay queued in order. At most ``SessionConfiguration/maxConcurrentDownloads``
/// run at once, higher priority first, then first in first out.
///
/// With ``SessionConfiguration/background`` the transfers run in `haul daemon` instead, and go on after
/// this process exits. Opening the identifier again delivers the finished and failed events that were
/// missed (first on every ``events()`` stream, and in ``pendingEvents()``) until they are acknowledged
/// with ``acknowledgeEvents()``.
public actor DownloadSession {
    /// The session's name: its tasks are stored under it, and opening it again (in this process or another)
    /// finds them.
    public nonisolated let identifier: String
    private let backend: any SessionBackend

    /// Opens (or creates) the session `identifier`: letters, digits, `.`, `_` and `-`.
    public init(identifier: String, configuration: SessionConfiguration = SessionConfiguration()) async throws {
        try SessionFolder.validate(identifier: identifier)
        self.identifier = identifier
        if let daemon = configuration.daemon {
            backend = try await BackgroundSession(identifier: identifier, configuration: configuration, daemon: daemon)
        } else {
            backend = try await LocalSession(identifier: identifier, configuration: configuration)
        }
    }

    // MARK: Adding and controlling tasks

    /// Adds a download, or returns the existing task with the same id or the same URL and destination.
    @discardableResult
    public func add(_ request: DownloadRequest) async throws -> TaskSnapshot {
        guard let task = try await backend.add([request]).first else {
            throw HaulError(.server, "the session returned no task for \(request.url.absoluteString)")
        }
        return task
    }

    /// Adds downloads in one step (one transaction, one message to the daemon), in order.
    @discardableResult
    public func add(_ requests: [DownloadRequest]) async throws -> [TaskSnapshot] {
        try await backend.add(requests)
    }

    /// Pauses tasks (running ones stop after saving their progress).
    public func pause(_ ids: [String]) async throws { try await backend.apply(.pause, to: ids) }
    /// Puts paused, failed or cancelled tasks back in the queue; they continue from the bytes held.
    public func resume(_ ids: [String]) async throws { try await backend.apply(.resume, to: ids) }
    /// Cancels tasks; their partial data is deleted.
    public func cancel(_ ids: [String]) async throws { try await backend.apply(.cancel, to: ids) }
    /// Pauses every waiting and running task.
    public func pauseAll() async throws { try await backend.apply(.pause, to: nil) }
    /// Puts every paused, failed and cancelled task back in the queue.
    public func resumeAll() async throws { try await backend.apply(.resume, to: nil) }
    /// Cancels every task that has not finished; their partial data is deleted.
    public func cancelAll() async throws { try await backend.apply(.cancel, to: nil) }

    /// Removes tasks from the session, cancelling running ones and deleting their partial files; with `deleteFile`,
    /// finished files too. Only a file the task itself wrote, and only while its name still holds that very file: a
    /// file `-nc` or `-N` kept, one saved at its name later, or a partial file put in place of the task's stays; a
    /// file given to `--continue` is given back as it was. Returns what there is to say of each such file.
    @discardableResult
    public func remove(_ ids: [String], deleteFile: Bool = false) async throws -> [RemovedFile] {
        try await backend.remove(ids, deleteFile: deleteFile)
    }

    /// Changes tasks' priority: among waiting tasks, a higher priority starts first (then the order they were added).
    public func setPriority(_ priority: Int, for ids: [String]) async throws {
        try await backend.setPriority(priority, for: ids)
    }

    /// Changes the cap on concurrent downloads; takes effect at once.
    public func setMaxConcurrentDownloads(_ count: Int) async throws {
        try await backend.setMaxConcurrentDownloads(count)
    }

    /// Every task, in the order they were added.
    public func tasks() async throws -> [TaskSnapshot] { try await backend.tasks() }

    /// Calls `body` with every task, in the order they were added, reading them a page at a time (a session of a
    /// million tasks is never held whole).
    public func forEachTask(_ body: (TaskSnapshot) throws -> Void) async throws {
        guard let local = backend as? LocalSession else {
            for task in try await backend.tasks() { try body(task) }
            return
        }
        var after: Int64 = 0
        // Bounded: each page moves past the last task it gave, and a session holds finitely many.
        while true {
            let page = try await local.tasks(after: after, limit: Self.pageSize)
            for (_, task) in page { try body(task) }
            guard let last = page.last, page.count == Self.pageSize else { return }
            after = last.sequence
        }
    }

    /// Tasks read at a time by ``forEachTask(_:)``.
    static let pageSize = 1_000

    /// The task `id` as it stands, or `nil` when the session has none by that id.
    public func task(_ id: String) async throws -> TaskSnapshot? { try await backend.task(id) }

    /// How many tasks wait, and whether the per-host limit holds some back while the session has room for more: what
    /// a live view says beside its counts. In-process sessions only; a background session answers `nil` (its waiting
    /// tasks each say why in ``TaskSnapshot/note``, as `haul ls` shows).
    public func waitingSummary() async -> WaitingSummary? {
        guard let local = backend as? LocalSession else { return nil }
        return await local.waitingSummary()
    }

    // MARK: Events

    /// A new stream of every event from now on (for a background session, first the unacknowledged
    /// finished and failed events).
    public func events() async -> AsyncStream<SessionEvent> { await backend.events(filter: nil) }

    /// A new stream of the events about one task.
    public func events(for id: String) async -> AsyncStream<SessionEvent> { await backend.events(filter: id) }

    /// The event streams an in-process session has open (for tests that must subscribe before acting).
    var subscriberCount: Int {
        get async { await (backend as? LocalSession)?.subscriberCount ?? 0 }
    }

    /// Waits until no task is waiting or running.
    public func waitUntilIdle() async { await backend.waitUntilIdle() }

    /// Waits for task `id` to end and returns its file, complete and verified; throws the task's error when it
    /// failed, and an ``HaulError/Kind/interrupted`` error when it was cancelled or removed, or the session closed. A paused
    /// task is waited for (it may be resumed). An end that happened before the call is not missed: the task's
    /// events are followed first, then its stored state is read.
    ///
    /// ```swift
    /// let task = try await session.add(DownloadRequest(url: url))
    /// let file = try await session.result(for: task.id)
    /// ```
    public func result(for id: String) async throws -> URL {
        let events = await backend.events(filter: id)
        guard let current = try await backend.task(id) else {
            throw HaulError(.usage, "no task \(id) in this session")
        }
        if let ended = try Self.outcome(of: current) { return ended }
        for await event in events {
            switch event {
            case .finished(let task), .failed(let task):
                if let ended = try Self.outcome(of: task) { return ended }
            case .stateChanged(_, _, let state) where state == .finished || state == .failed || state == .cancelled:
                // The snapshot with the path or the error comes from the store; gone from it, the task was removed
                // (in a fleet, another node's removal may reach this node as its end only).
                guard let task = try await backend.task(id) else { throw HaulError(.interrupted, "task \(id) was removed") }
                if let ended = try Self.outcome(of: task) { return ended }
            case .removed:
                throw HaulError(.interrupted, "task \(id) was removed")
            default:
                break
            }
        }
        // The stream ended: the session closed.
        if let task = try await backend.task(id), let ended = try Self.outcome(of: task) { return ended }
        throw HaulError(.interrupted, "task \(id) did not end: the session closed")
    }

    /// The file of a finished task, the error of a failed or cancelled one, `nil` while it may still run.
    private static func outcome(of task: TaskSnapshot) throws -> URL? {
        switch task.state {
        case .finished:
            guard let path = task.filePath else { throw HaulError(.fileSystem, "task \(task.id) finished without a file path") }
            return URL(fileURLWithPath: path)
        case .failed:
            throw task.error ?? HaulError(.network, "task \(task.id) failed")
        case .cancelled:
            throw HaulError(.interrupted, "task \(task.id) was cancelled")
        case .waiting, .running, .paused:
            return nil
        }
    }

    /// Background sessions: the finished and failed events delivered to this process and not yet acknowledged,
    /// oldest first (those that happened while no client was connected included). Empty for in-process sessions.
    public func pendingEvents() async -> [SessionEvent] { await backend.pendingEvents() }

    /// Background sessions: marks every event in ``pendingEvents()`` as handled, so that it is not delivered
    /// again — the counterpart of the completion handler of `handleEventsForBackgroundURLSession`.
    public func acknowledgeEvents() async throws { try await backend.acknowledgeEvents() }

    /// In-process: stops running tasks (saving their progress, restored as configured next time).
    /// Background: disconnects from the daemon, whose transfers go on. Ends the event streams.
    public func close() async { await backend.close() }
}
