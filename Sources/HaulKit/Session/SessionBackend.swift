/// What carries out a ``DownloadSession``'s work: ``LocalSession`` in this process, or ``BackgroundSession``
/// through `haul daemon`.
protocol SessionBackend: Actor {
    func add(_ requests: [DownloadRequest]) async throws -> [TaskSnapshot]
    /// `ids == nil`: every task.
    func apply(_ command: TaskCommand, to ids: [String]?) async throws
    func remove(_ ids: [String]?, deleteFile: Bool) async throws -> [RemovedFile]
    func setPriority(_ priority: Int, for ids: [String]) async throws
    func setMaxConcurrentDownloads(_ count: Int) async throws
    func tasks() async throws -> [TaskSnapshot]
    func task(_ id: String) async throws -> TaskSnapshot?
    func events(filter: String?) async -> AsyncStream<SessionEvent>
    func waitUntilIdle() async
    /// Finished and failed events not yet acknowledged (background sessions only).
    func pendingEvents() async -> [SessionEvent]
    func acknowledgeEvents() async throws
    func close() async
}

extension LocalSession {
    func pendingEvents() -> [SessionEvent] { [] }
    func acknowledgeEvents() {}
}
