import Foundation
import Logging

/// The daemon's brain: the open sessions, the clients subscribed to them, and what each method does.
/// The socket server (``DaemonServer``) hands it decoded requests and delivers what it sends.
actor DaemonService {
    let home: HaulHome
    private let logger: Logger
    private var sessions: [String: LocalSession] = [:]
    private var configurations: [String: SessionConfiguration] = [:]
    private var opening: [String: Task<LocalSession, any Error>] = [:]
    private var pumps: [String: Task<Void, Never>] = [:]
    /// Per session, the subscribed connections and the journal sequence each has already been given.
    private var subscribers: [String: [Int: (outbox: ConnectionOutbox, replayedThrough: Int64)]] = [:]
    private var shuttingDown = false

    init(home: HaulHome, logger: Logger) {
        self.home = home
        self.logger = logger
    }

    /// Reopens every session the daemon ran before (those with a saved configuration): their tasks resume.
    func restoreSessions() async {
        let folder = home.path + "/sessions"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for name in names.sorted() where FileManager.default.fileExists(atPath: Self.configurationPath(name, home: home)) {
            do {
                _ = try await session(name)
                logger.info("restored session \(name)")
            } catch {
                logger.error("could not restore session \(name): \(error)")
            }
        }
    }

    /// Stops every session: running downloads save their progress and resume when the daemon starts again.
    func shutdown() async {
        shuttingDown = true
        for (_, task) in opening { _ = try? await task.value }
        await withTaskGroup(of: Void.self) { group in
            for (_, session) in sessions { group.addTask { await session.close() } }
        }
        for (_, pump) in pumps { await pump.value }
        sessions = [:]
        for (_, connections) in subscribers { for (_, subscriber) in connections { subscriber.outbox.finish() } }
        subscribers = [:]
    }

    func disconnected(_ outbox: ConnectionOutbox) {
        for name in subscribers.keys { subscribers[name]?[outbox.id] = nil }
    }

    // MARK: Requests

    func handle(_ request: JSONRPC.Request, from outbox: ConnectionOutbox) async -> Result<JSONValue, RPCError> {
        do {
            return .success(try await perform(request, outbox))
        } catch let error as RPCError {
            return .failure(error)
        } catch let error as HaulError {
            return .failure(.haul(error))
        } catch {
            return .failure(.haul(HaulError(.server, "the daemon failed: \(error)")))
        }
    }

    private func perform(_ request: JSONRPC.Request, _ outbox: ConnectionOutbox) async throws -> JSONValue {
        let params = request.params
        switch request.method {
        case "daemon.hello":
            let asked = try params.requiredInt("protocol")
            guard asked == DaemonProtocol.version else { throw RPCError.unsupportedProtocol(asked) }
            return .object(Self.identity)
        case "daemon.status":
            var status = Self.identity
            status["sessions"] = .array(sessions.keys.sorted().map(JSONValue.string))
            return .object(status)
        default:
            guard Self.sessionMethods.contains(request.method) else { throw RPCError.methodNotFound(request.method) }
        }
        let name = try params.requiredString("session")
        do { try LocalSession.validate(identifier: name) } catch { throw RPCError.invalidParams("\"session\": \(error.message)") }
        switch request.method {
        case "session.open":
            _ = try await session(name, configuring: try params.object("configuration"))
            return ["session": .string(name)]
        case "session.setMaxConcurrentDownloads":
            let count = try params.requiredInt("count")
            guard count >= 0 else { throw RPCError.invalidParams("\"count\" must be 0 or more") }
            _ = try await session(name, configuring: Params(["maxConcurrentDownloads": JSONValue(count)]))
            return [:]
        case "tasks.add":
            guard let objects = try params.objects("tasks"), !objects.isEmpty else {
                throw RPCError.invalidParams("\"tasks\" must be a non-empty array of objects")
            }
            guard objects.count <= DaemonProtocol.maxTasksPerAdd else {
                throw RPCError.invalidParams("\"tasks\" holds more than \(DaemonProtocol.maxTasksPerAdd) tasks")
            }
            var requests: [DownloadRequest] = []
            for object in objects { requests.append(try DaemonProtocol.decodeRequest(object)) }
            let added = try await session(name).add(requests)
            return ["tasks": .array(added.map(DaemonProtocol.encode))]
        case "tasks.list":
            var tasks = try await session(name).tasks()
            if let ids = try params.strings("ids") {
                let wanted = Set(ids)
                tasks = tasks.filter { wanted.contains($0.id) }
            }
            return ["tasks": .array(tasks.map(DaemonProtocol.encode))]
        case "tasks.pause", "tasks.resume", "tasks.cancel":
            let command: TaskCommand = request.method == "tasks.pause" ? .pause : request.method == "tasks.resume" ? .resume : .cancel
            let session = try await session(name)
            try await session.apply(command, to: try await selection(params, in: session, name))
            return [:]
        case "tasks.remove":
            let session = try await session(name)
            try await session.remove(try await selection(params, in: session, name), deleteFile: try params.bool("deleteFile") ?? false)
            return [:]
        case "tasks.setPriority":
            let priority = try params.requiredInt("priority")
            let session = try await session(name)
            guard let ids = try await selection(params, in: session, name) else {
                throw RPCError.invalidParams("\"ids\" is required")
            }
            try await session.setPriority(priority, for: ids)
            return [:]
        case "events.subscribe":
            let session = try await session(name)
            let replay = try params.bool("replay") ?? true
            let journal = try session.store.journal()
            subscribers[name, default: [:]][outbox.id] = (outbox, journal.last?.sequence ?? 0)
            return ["journal": .array(replay ? journal.compactMap(Self.event(from:)) : [])]
        case "events.unsubscribe":
            subscribers[name]?[outbox.id] = nil
            return [:]
        case "journal.list":
            return ["events": .array(try await session(name).store.journal().compactMap(Self.event(from:)))]
        case "journal.ack":
            guard let through = try params.int64("through") else { throw RPCError.invalidParams("\"through\" is required") }
            return ["acknowledged": JSONValue(try await session(name).store.acknowledgeJournal(through: through))]
        default:
            throw RPCError.methodNotFound(request.method)
        }
    }

    /// What `daemon.hello` answers: the protocol, this haul's version and the daemon's process id.
    static let identity: [String: JSONValue] = [
        "protocol": JSONValue(DaemonProtocol.version), "version": .string(HaulVersion.string), "pid": JSONValue(Int(getpid())),
    ]

    /// The methods that act on a session (all but `daemon.*`).
    static let sessionMethods: Set<String> = [
        "session.open", "session.setMaxConcurrentDownloads", "tasks.add", "tasks.list", "tasks.pause", "tasks.resume",
        "tasks.cancel", "tasks.remove", "tasks.setPriority", "events.subscribe", "events.unsubscribe", "journal.list",
        "journal.ack",
    ]

    /// The ids named by `ids` (all must exist) or `nil` for `"all": true`.
    private func selection(_ params: Params, in session: LocalSession, _ name: String) async throws -> [String]? {
        if try params.bool("all") == true { return nil }
        guard let ids = try params.strings("ids"), !ids.isEmpty else {
            throw RPCError.invalidParams("give \"ids\" (a non-empty array of task ids) or \"all\": true")
        }
        let known = Set(try await session.tasks().map(\.id))
        if let missing = ids.first(where: { !known.contains($0) }) {
            throw HaulError(.usage, "no task \(missing) in session \(name); `haul ls` lists them")
        }
        return ids
    }

    /// A journal entry as a wire event.
    private static func event(from entry: JournalEntry) -> JSONValue? {
        guard let task = JSONValue.parse(Array(entry.payload.utf8)) else { return nil }
        return ["type": .string(entry.kind), "task": task, "seq": JSONValue(entry.sequence)]
    }

    // MARK: Sessions

    /// The open session `name`, opened on first use from its saved configuration. With `changes`, the
    /// configuration is updated and saved; a changed session is reopened (its downloads resume at once).
    private func session(_ name: String, configuring changes: Params? = nil) async throws -> LocalSession {
        // One opening at a time per session; `open` registers the session before `opening` is cleared.
        while let pending = opening[name] { _ = try? await pending.value }
        guard !shuttingDown else { throw HaulError(.interrupted, "the haul daemon is shutting down; try again in a moment") }
        var configuration = configurations[name] ?? loadConfiguration(name)
        if let changes { try DaemonProtocol.apply(changes, to: &configuration) }
        if let open = sessions[name] {
            let old = configurations[name].map(DaemonProtocol.encode)
            guard old != DaemonProtocol.encode(configuration) else { return open }
            try saveConfiguration(configuration, for: name)
            configurations[name] = configuration
            if let old, Self.onlyConcurrencyDiffers(old, DaemonProtocol.encode(configuration)) {
                await open.setMaxConcurrentDownloads(configuration.maxConcurrentDownloads)
                return open
            }
        } else {
            try saveConfiguration(configuration, for: name)
        }
        let task = Task { try await self.open(name, configuration) }
        opening[name] = task
        return try await task.value
    }

    /// (Re)opens a session with `configuration` (closing the open one first) and starts forwarding its events.
    private func open(_ name: String, _ configuration: SessionConfiguration) async throws -> LocalSession {
        defer { opening[name] = nil }
        if let old = sessions.removeValue(forKey: name) {
            await old.close()
            await pumps.removeValue(forKey: name)?.value
        }
        var settings = configuration
        settings.home = home
        let session = try await LocalSession(identifier: name, configuration: settings, journaling: true)
        sessions[name] = session
        configurations[name] = configuration
        let events = await session.journaledEvents()
        pumps[name] = Task { [weak self] in
            for await (event, sequence) in events { await self?.broadcast(name, event, sequence) }
        }
        logger.info("opened session \(name)")
        return session
    }

    private static func onlyConcurrencyDiffers(_ old: JSONValue, _ new: JSONValue) -> Bool {
        guard var old = old.objectValue, var new = new.objectValue else { return false }
        old["maxConcurrentDownloads"] = nil
        new["maxConcurrentDownloads"] = nil
        return old == new
    }

    private func broadcast(_ name: String, _ event: SessionEvent, _ sequence: Int64?) {
        guard let connections = subscribers[name], !connections.isEmpty else { return }
        let line = JSONRPC.notification(
            method: "event", params: ["session": .string(name), "event": DaemonProtocol.encode(event, sequence: sequence)])
        var droppable = false
        if case .progress = event { droppable = true }
        for (_, subscriber) in connections {
            // Entries already given in the subscription's journal are not sent twice.
            if let sequence, sequence <= subscriber.replayedThrough { continue }
            subscriber.outbox.send(line, droppable: droppable)
        }
    }

    // MARK: Saved configurations

    static func configurationPath(_ name: String, home: HaulHome) -> String {
        LocalSession.folder(name, home: home) + "/daemon.json"
    }

    private func loadConfiguration(_ name: String) -> SessionConfiguration {
        var configuration = SessionConfiguration()
        configuration.home = home
        let path = Self.configurationPath(name, home: home)
        if let data = FileManager.default.contents(atPath: path), let saved = JSONValue.parse(Array(data))?.objectValue {
            do {
                try DaemonProtocol.apply(Params(saved), to: &configuration)
            } catch {
                logger.warning("ignoring the saved configuration of session \(name) (\(error.message)); using defaults")
            }
        }
        return configuration
    }

    private func saveConfiguration(_ configuration: SessionConfiguration, for name: String) throws {
        let folder = LocalSession.folder(name, home: home)
        try POSIX.makePrivateDirectories(folder, root: home.path)
        let path = Self.configurationPath(name, home: home)
        let text = DaemonProtocol.encode(configuration).serialized + "\n"
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]),
              rename(temporary, path) == 0 else {
            throw POSIX.error("saving", path)
        }
    }
}
