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
    public nonisolated let identifier: String
    private let backend: any SessionBackend

    /// Opens (or creates) the session `identifier`: letters, digits, `.`, `_` and `-`.
    public init(identifier: String, configuration: SessionConfiguration = SessionConfiguration()) async throws {
        try LocalSession.validate(identifier: identifier)
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
    public func resume(_ ids: [String]) async throws { try await backend.apply(.resume, to: ids) }
    /// Cancels tasks; their partial data is deleted.
    public func cancel(_ ids: [String]) async throws { try await backend.apply(.cancel, to: ids) }
    public func pauseAll() async throws { try await backend.apply(.pause, to: nil) }
    public func resumeAll() async throws { try await backend.apply(.resume, to: nil) }
    public func cancelAll() async throws { try await backend.apply(.cancel, to: nil) }

    /// Removes tasks from the session, cancelling running ones; with `deleteFile`, finished files are deleted too.
    public func remove(_ ids: [String], deleteFile: Bool = false) async throws {
        try await backend.remove(ids, deleteFile: deleteFile)
    }

    public func setPriority(_ priority: Int, for ids: [String]) async throws {
        try await backend.setPriority(priority, for: ids)
    }

    /// Changes the cap on concurrent downloads; takes effect at once.
    public func setMaxConcurrentDownloads(_ count: Int) async throws {
        try await backend.setMaxConcurrentDownloads(count)
    }

    /// Every task, in the order they were added.
    public func tasks() async throws -> [TaskSnapshot] { try await backend.tasks() }

    public func task(_ id: String) async throws -> TaskSnapshot? { try await backend.task(id) }

    // MARK: Events

    /// A new stream of every event from now on (for a background session, first the unacknowledged
    /// finished and failed events).
    public func events() async -> AsyncStream<SessionEvent> { await backend.events(filter: nil) }

    /// A new stream of the events about one task.
    public func events(for id: String) async -> AsyncStream<SessionEvent> { await backend.events(filter: id) }

    /// Waits until no task is waiting or running.
    public func waitUntilIdle() async { await backend.waitUntilIdle() }

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
