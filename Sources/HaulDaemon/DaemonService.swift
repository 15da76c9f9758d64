import HaulKit
import Foundation
import Logging

/// The daemon's brain: the open sessions, the clients subscribed to them, and what each method does.
/// The socket server (``DaemonServer``) hands it decoded requests and delivers what it sends.
///
/// Sessions are created only by `session.open` and `tasks.add`; every other method fails on a session that
/// does not exist, and creates nothing. At most ``DaemonLimits/maxOpenSessions`` are open at once, and idle ones
/// are closed (DaemonService+Sessions.swift).
package actor DaemonService {
    let home: HaulHome
    let logger: Logger
    let limits: DaemonLimits
    /// Where the sessions and their settings are kept: `HAUL_HOME`, or a fleet's database.
    let catalog: any SessionCatalog
    /// Follows what the fleet's other daemons change (a fleet only).
    var follower: Task<Void, Never>?
    var sessions: [String: LocalSession] = [:]
    var configurations: [String: SessionConfiguration] = [:]
    var opening: [String: Task<LocalSession, any Error>] = [:]
    /// Sessions being closed (idle): a request naming one waits until it is closed, then opens it again.
    var closing: [String: Task<Void, Never>] = [:]
    var pumps: [String: Task<Void, Never>] = [:]
    /// Requests under way per session: a session in use is never closed as idle.
    var inUse: [String: Int] = [:]
    /// When each open session was last named by a request.
    var lastUsed: [String: ContinuousClock.Instant] = [:]
    /// Per session, the subscribed connections and the journal sequence each has already been given.
    var subscribers: [String: [Int: (outbox: ConnectionOutbox, replayedThrough: Int64)]] = [:]
    var sweeper: Task<Void, Never>?
    var shuttingDown = false
    /// The web dashboard, when the daemon has one (`web.start` starts its listener).
    var web: (any WebListener)?
    /// Called with every event of every open session (the web dashboard's event stream).
    var eventTap: (@Sendable (String, SessionEvent, Int64?) -> Void)?

    init(home: HaulHome, logger: Logger, limits: DaemonLimits = DaemonLimits(), catalog: (any SessionCatalog)? = nil) {
        self.home = home
        self.logger = logger
        self.limits = limits
        self.catalog = catalog ?? FileSessionCatalog(home: home)
    }

    package func disconnected(_ outbox: ConnectionOutbox) {
        for name in subscribers.keys { subscribers[name]?[outbox.id] = nil }
    }

    // MARK: Requests

    /// Carries out a request from `caller` (the owner unless said otherwise): its result, or the JSON-RPC error to
    /// answer with.
    package func handle(_ request: JSONRPC.Request, from outbox: ConnectionOutbox, caller: DaemonCaller = .owner) async -> Result<JSONValue, RPCError> {
        let result = await outcome(of: request, from: outbox, caller: caller)
        // `daemon --verbose`: each request by its method only (its parameters may carry URLs and headers with secrets);
        // a refusal's message, which names no secret.
        if logger.logLevel <= .debug {
            // A name the daemon knows, never the client's text (a line break in it would forge a log line).
            let method = DaemonMethod(rawValue: request.method)?.rawValue ?? "an unknown method"
            switch result {
            case .success: logger.debug("connection \(outbox.id): \(method)")
            case .failure(let error):
                logger.debug("connection \(outbox.id): \(method) refused: \(TerminalText.sanitized(error.message))")
            }
        }
        return result
    }

    private func outcome(of request: JSONRPC.Request, from outbox: ConnectionOutbox, caller: DaemonCaller) async -> Result<JSONValue, RPCError> {
        do {
            return .success(try await perform(request, outbox, caller))
        } catch let error as RPCError {
            return .failure(error)
        } catch let error as HaulError {
            return .failure(.haul(error))
        } catch let error as SessionStoreError {
            return .failure(.haul(error.haulError))
        } catch {
            return .failure(.haul(HaulError(.server, "the daemon failed: \(error)")))
        }
    }

    private func perform(_ request: JSONRPC.Request, _ outbox: ConnectionOutbox, _ caller: DaemonCaller) async throws -> JSONValue {
        let params = request.params
        guard let method = DaemonMethod(rawValue: request.method) else { throw RPCError.methodNotFound(request.method) }
        switch method {
        case .hello:
            let asked = try Hello.parameters(params).protocolVersion
            guard asked == DaemonProtocol.version else { throw RPCError.unsupportedProtocol(asked) }
            return try JSONValueEncoder.encode(Self.identity)
        case .status:
            return try JSONValueEncoder.encode(DaemonStatus.Result(Self.identity, sessions: sessions.keys.sorted()))
        case .startWeb:
            return try JSONValueEncoder.encode(try await startWeb(try StartWeb.parameters(params)))
        case .fleetNodes:
            return try JSONValueEncoder.encode(try await fleetNodes())
        default:
            break
        }
        let name = try params.requiredString("session")
        do { try SessionFolder.validate(identifier: name) } catch { throw RPCError.invalidParams("\"session\": \(error.message)") }
        inUse[name, default: 0] += 1
        defer {
            inUse[name, default: 1] -= 1
            if inUse[name] == 0 { inUse[name] = nil }
            if sessions[name] != nil { lastUsed[name] = .now }
        }
        // What a response may hold: a page when the client pages, else what old clients were sent.
        let paged = params.members["limit"] != nil || params.members["cursor"] != nil || params.members["after"] != nil
        let budget = (paged ? DaemonProtocol.maxPagedResponseBytes : DaemonProtocol.maxResponseBytes)
            - 256 - (request.id?.serialized.utf8.count ?? 0)
        switch method {
        case .openSession:
            let configuration = try OpenSession.parameters(params).configuration.map(Params.init)
            let command = configuration?.members["completionCommand"]
            try Self.refuse(caller, setsCommand: command != nil && command != .null)
            _ = try await session(name, creating: true, configuring: configuration)
            return try JSONValueEncoder.encode(OpenSession.Result(session: name))
        case .setMaxConcurrentDownloads:
            let count = try SetMaxConcurrentDownloads.parameters(params).count
            guard count >= 0 else { throw RPCError.invalidParams("\"count\" must be 0 or more") }
            _ = try await session(name, configuring: Params(["maxConcurrentDownloads": JSONValue(count)]))
            return try JSONValueEncoder.encode(SetMaxConcurrentDownloads.Result())
        case .setRateLimit:
            let limit = try SetRateLimit.parameters(params).bytesPerSecond
            // `null` (no limit) is a value here: only a missing member is refused.
            guard params.members["bytesPerSecond"] != nil else { throw RPCError.invalidParams("\"bytesPerSecond\" is required (null for none)") }
            if let limit, limit < 1 { throw RPCError.invalidParams("\"bytesPerSecond\" must be 1 or more, or null for none") }
            _ = try await session(name, configuring: Params(["rateLimit": limit.map(JSONValue.init) ?? .null]))
            return try JSONValueEncoder.encode(SetRateLimit.Result())
        case .sessionConfiguration:
            return try JSONValueEncoder.encode(try await configuration(of: name))
        case .segments, .addTasks, .listTasks, .pauseTasks, .resumeTasks, .cancelTasks, .removeTasks, .setPriority:
            return try await performTaskMethod(method, params, in: name, caller: caller, answerID: request.id, budget: budget)
        case .subscribe:
            let session = try await session(name)
            let replay = try Subscribe.parameters(params).replay ?? true
            let journal = try await session.store.journal()
            subscribers[name, default: [:]][outbox.id] = (outbox, journal.last?.sequence ?? 0)
            let page = Self.journalPage(replay ? journal : [], limit: Int.max, budget: DaemonProtocol.maxPagedResponseBytes - 256)
            return try JSONValueEncoder.encode(Subscribe.Result(journal: page.events, next: page.next))
        case .unsubscribe:
            let known = sessions[name] != nil ? true : try await hasSavedConfiguration(name)
            guard known else { throw RPCError.noSuchSession(name) }
            subscribers[name]?[outbox.id] = nil
            return try JSONValueEncoder.encode(Unsubscribe.Result())
        case .listJournal:
            let session = try await session(name)
            let parameters = try ListJournal.parameters(params)
            let limit = try Self.limit(parameters.limit) ?? Int.max
            let page = Self.journalPage(try await session.store.journal(after: parameters.after ?? 0), limit: limit, budget: budget)
            return try JSONValueEncoder.encode(ListJournal.Result(events: page.events, next: page.next))
        case .acknowledgeJournal:
            let parameters = try AcknowledgeJournal.parameters(params)
            let acknowledged: Int
            if let ids = parameters.ids {
                acknowledged = try await session(name).store.acknowledgeJournal(taskIDs: ids)
            } else {
                guard let through = parameters.through else { throw RPCError.invalidParams("give \"through\" or \"ids\"") }
                acknowledged = try await session(name).store.acknowledgeJournal(through: through)
            }
            return try JSONValueEncoder.encode(AcknowledgeJournal.Result(acknowledged: acknowledged))
        case .hello, .status, .startWeb, .fleetNodes:
            throw RPCError.methodNotFound(request.method)  // answered above
        }
    }

    /// Refuses, changing nothing, a request that sets a command its caller may not set.
    static func refuse(_ caller: DaemonCaller, setsCommand: Bool) throws {
        if let refusal = caller.commandRefusal(setsCommand: setsCommand) { throw HaulError(.usage, refusal) }
    }

    /// What `daemon.hello` answers: the protocol, this haul's version and the daemon's process id.
    static let identity = Hello.Result(protocolVersion: DaemonProtocol.version, version: HaulVersion.string, pid: Int(getpid()))

    /// The oldest journal entries that fit `limit` and `budget`, and the `after` of the rest (if any).
    private static func journalPage(_ entries: [JournalEntry], limit: Int, budget: Int) -> (events: [JSONValue], next: Int64?) {
        var events: [JSONValue] = [], used = 0, last: Int64 = 0
        for entry in entries {
            guard let event = event(from: entry) else {
                last = entry.sequence
                continue
            }
            let size = event.serialized.utf8.count + 1
            if events.count >= limit || (!events.isEmpty && used + size > budget) { return (events, last) }
            events.append(event)
            used += size
            last = entry.sequence
        }
        return (events, nil)
    }

    /// `limit`, checked (1 to 10,000), or nil when absent.
    static func limit(_ params: Params) throws -> Int? { try limit(params.int("limit")) }

    /// `limit`, checked (1 to 10,000).
    static func limit(_ limit: Int?) throws -> Int? {
        guard let limit else { return nil }
        guard (1...DaemonProtocol.maxPageLimit).contains(limit) else {
            throw RPCError.invalidParams("\"limit\" must be between 1 and \(DaemonProtocol.maxPageLimit)")
        }
        return limit
    }

    /// A journal entry as a wire event.
    private static func event(from entry: JournalEntry) -> JSONValue? {
        guard let task = JSONValue.parse(Array(entry.payload.utf8)) else { return nil }
        return ["type": .string(entry.kind), "task": task, "seq": JSONValue(entry.sequence)]
    }

    /// One line in the daemon's log per task that is added, starts, finishes or fails (with the reason): what a
    /// person reads to learn what happened while no client watched. URLs without their credentials. In a fleet, what
    /// another node did says which (`on node b`).
    private func logTask(_ name: String, _ event: SessionEvent, from node: String?) {
        let elsewhere = node.map { " on node \($0)" } ?? ""
        switch event {
        case .added(let task):
            logger.info("[\(name)] added \(task.id) \(Redaction.url(task.url))\(elsewhere)")
        case .stateChanged(let id, _, let to) where to == .running || to == .paused || to == .cancelled:
            logger.info("[\(name)] \(to == .running ? "started" : to.rawValue) \(id)\(elsewhere)")
        case .finished(let task):
            logger.info("[\(name)] finished \(task.id): \(task.filePath ?? "") (\(task.bytes) bytes)\(elsewhere)")
        case .failed(let task):
            logger.warning("[\(name)] failed \(task.id): \(task.error?.message ?? "unknown reason")\(elsewhere)")
        default:
            break
        }
    }

    func broadcast(_ name: String, _ event: SessionEvent, _ sequence: Int64?, from node: String? = nil) {
        logTask(name, event, from: node)
        eventTap?(name, event, sequence)
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
}
