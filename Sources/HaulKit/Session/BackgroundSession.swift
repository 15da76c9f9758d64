import Foundation

/// A session whose transfers run in `haul daemon`: every call is a message to the daemon, and its events
/// come back as notifications. Finished and failed events are journaled by the daemon and kept here in
/// ``pendingEvents()`` until acknowledged.
actor BackgroundSession: SessionBackend {
    let identifier: String
    private let configuration: SessionConfiguration
    private let client: DaemonClient
    private var subscribers: [UUID: (filter: String?, continuation: AsyncStream<SessionEvent>.Continuation)] = [:]
    /// Journaled events delivered to this process and not yet acknowledged, with their sequence.
    private var pending: [(sequence: Int64, event: SessionEvent)] = []
    private var pump: Task<Void, Never>?
    /// The connection to the daemon has closed: no more events will come.
    private var ended = false

    init(identifier: String, configuration: SessionConfiguration, daemon: DaemonEndpoint) async throws {
        self.identifier = identifier
        var configuration = configuration
        configuration.defaultDirectory = configuration.defaultDirectory.map(absolutePath)
        self.configuration = configuration
        client = try await DaemonLauncher.connect(daemon, home: configuration.home)
        do {
            _ = try await client.call(
                OpenSession.self, session: identifier, .init(configuration: DaemonProtocol.encode(configuration).objectValue))
            let journal = try await client.call(Subscribe.self, session: identifier, .init(replay: true))
            for entry in journal.journal { receive(entry) }
            // A long journal comes in pages; entries also sent live are kept once (by sequence).
            var next = journal.next
            for _ in 0..<Int(TaskStore.journalLimit) {
                guard let after = next else { break }
                let page = try await client.call(ListJournal.self, session: identifier, .init(after: after, limit: 1_000))
                for entry in page.events { receive(entry) }
                guard let following = page.next, following > after else { break }
                next = following
            }
        } catch {
            await client.close()
            throw error
        }
        let notifications = client.notifications
        pump = Task { [weak self] in
            for await (method, params) in notifications where method == "event" {
                guard let event = params["event"] else { continue }
                await self?.receive(event)
            }
            await self?.finishStreams()
        }
    }

    private func receive(_ value: JSONValue) {
        guard let (event, sequence) = DaemonProtocol.decodeEvent(value) else { return }
        if let sequence {
            guard !pending.contains(where: { $0.sequence == sequence }) else { return }
            pending.append((sequence, event))
            if case .finished(let task) = event { configuration.onCompletion?(task) }
            if case .failed(let task) = event { configuration.onCompletion?(task) }
        }
        for (_, subscriber) in subscribers where subscriber.filter == nil || subscriber.filter == event.taskID {
            subscriber.continuation.yield(event)
        }
    }

    private func finishStreams() {
        ended = true
        for (_, subscriber) in subscribers { subscriber.continuation.finish() }
        subscribers = [:]
    }

    // MARK: SessionBackend

    func add(_ requests: [DownloadRequest]) async throws -> [TaskSnapshot] {
        if requests.contains(where: { $0.destination == .standardOutput }) {
            throw HaulError(.usage, "a session saves its downloads to files; standard output takes a single download")
        }
        let encoded = requests.map { request in
            var request = request
            // Relative paths, and tasks without a destination, are about this process's folder, not the daemon's.
            request.spec = request.spec.anchored(defaultDirectory: configuration.defaultDirectory ?? ".", absolutePath)
            // The session's download settings (proxies, TLS trust, retries…) travel with each task, resolved under
            // its own: the daemon's environment is not this process's. Certificate paths, like destinations, are
            // this process's.
            var sessions = configuration.downloadSettings
            sessions.tls = sessions.tls?.mappingPaths(absolutePath)
            request.spec.settings = request.spec.settings.resolved(over: sessions)
            return AddTasks.Addition(request)
        }
        // Added in chunks that fit a message each, then read back a page at a time.
        let ids = try await client.add(session: identifier, encoded)
        let byID = Dictionary(try await client.tasks(session: identifier, ids: ids).map { ($0.id, $0) }) { first, _ in first }
        let result = ids.compactMap { byID[$0] }
        guard result.count == ids.count else {
            throw HaulError(.usage, "a task was removed from session \(identifier) while it was being added")
        }
        return result
    }

    func apply(_ command: TaskCommand, to ids: [String]?) async throws {
        let selection = SelectedTasks(ids)
        switch command {
        case .pause: _ = try await client.call(PauseTasks.self, session: identifier, selection)
        case .resume: _ = try await client.call(ResumeTasks.self, session: identifier, selection)
        case .cancel: _ = try await client.call(CancelTasks.self, session: identifier, selection)
        case .start, .finish, .fail: throw HaulError(.usage, "only pause, resume and cancel can be asked of a task")
        }
    }

    func remove(_ ids: [String]?, deleteFile: Bool) async throws -> [RemovedFile] {
        try await client.call(RemoveTasks.self, session: identifier, .init(SelectedTasks(ids), deleteFile: deleteFile)).files ?? []
    }

    func setPriority(_ priority: Int, for ids: [String]) async throws {
        _ = try await client.call(SetPriority.self, session: identifier, .init(priority: priority, ids: ids))
    }

    func setMaxConcurrentDownloads(_ count: Int) async throws {
        _ = try await client.call(SetMaxConcurrentDownloads.self, session: identifier, .init(count: count))
    }

    func tasks() async throws -> [TaskSnapshot] {
        try await client.tasks(session: identifier)
    }

    func task(_ id: String) async throws -> TaskSnapshot? {
        try await client.call(ListTasks.self, session: identifier, .init(ids: [id])).tasks.first?.value
    }

    func events(filter: String?) -> AsyncStream<SessionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionEvent.self, bufferingPolicy: .unbounded)
        for (_, event) in pending where filter == nil || filter == event.taskID { continuation.yield(event) }
        if ended {
            continuation.finish()
            return stream
        }
        let key = UUID()
        subscribers[key] = (filter, continuation)
        continuation.onTermination = { _ in Task { await self.unsubscribe(key) } }
        return stream
    }

    private func unsubscribe(_ key: UUID) { subscribers[key] = nil }

    func waitUntilIdle() async {
        let stream = events(filter: nil)
        if await isIdle() { return }
        for await event in stream {
            switch event {
            case .allFinished, .finished, .failed, .stateChanged:
                if await isIdle() { return }
            default:
                continue
            }
        }
    }

    private func isIdle() async -> Bool {
        guard let tasks = try? await tasks() else { return true }
        return !tasks.contains { $0.state == .waiting || $0.state == .running }
    }

    func pendingEvents() -> [SessionEvent] { pending.map(\.event) }

    func acknowledgeEvents() async throws {
        guard let last = pending.last?.sequence else { return }
        _ = try await client.call(AcknowledgeJournal.self, session: identifier, .init(through: last))
        pending.removeAll { $0.sequence <= last }
    }

    func close() async {
        await client.close()
        await pump?.value
        finishStreams()
    }

}
