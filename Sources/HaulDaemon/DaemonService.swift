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
            let asked = try params.requiredInt("protocol")
            guard asked == DaemonProtocol.version else { throw RPCError.unsupportedProtocol(asked) }
            return .object(Self.identity)
        case .status:
            var status = Self.identity
            status["sessions"] = .array(sessions.keys.sorted().map(JSONValue.string))
            return .object(status)
        case .startWeb:
            return try await startWeb(params)
        case .fleetNodes:
            return try await fleetNodes()
        default:
            break
        }
        let name = try params.requiredString("session")
        do { try LocalSession.validate(identifier: name) } catch { throw RPCError.invalidParams("\"session\": \(error.message)") }
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
            let configuration = try params.object("configuration")
            let command = configuration?.members["completionCommand"]
            try Self.refuse(caller, setsCommand: command != nil && command != .null)
            _ = try await session(name, creating: true, configuring: configuration)
            return ["session": .string(name)]
        case .setMaxConcurrentDownloads:
            let count = try params.requiredInt("count")
            guard count >= 0 else { throw RPCError.invalidParams("\"count\" must be 0 or more") }
            _ = try await session(name, configuring: Params(["maxConcurrentDownloads": JSONValue(count)]))
            return [:]
        case .setRateLimit:
            let limit = try params.int64("bytesPerSecond")
            guard params.members["bytesPerSecond"] != nil else { throw RPCError.invalidParams("\"bytesPerSecond\" is required (null for none)") }
            if let limit, limit < 1 { throw RPCError.invalidParams("\"bytesPerSecond\" must be 1 or more, or null for none") }
            _ = try await session(name, configuring: Params(["rateLimit": limit.map(JSONValue.init) ?? .null]))
            return [:]
        case .sessionConfiguration:
            return try await configuration(of: name)
        case .segments:
            return try await segments(params, in: name)
        case .addTasks:
            let addBudget = DaemonProtocol.maxPagedResponseBytes - 256 - (request.id?.serialized.utf8.count ?? 0)
            return try await add(params, to: name, budget: addBudget, caller: caller)
        case .listTasks:
            return try await list(params, in: try await session(name), budget: budget)
        case .pauseTasks, .resumeTasks, .cancelTasks:
            let command: TaskCommand = method == .pauseTasks ? .pause : method == .resumeTasks ? .resume : .cancel
            let session = try await session(name)
            try await session.apply(command, to: try await selection(params, in: session, name))
            return [:]
        case .removeTasks:
            let session = try await session(name)
            try await session.remove(try await selection(params, in: session, name), deleteFile: try params.bool("deleteFile") ?? false)
            return [:]
        case .setPriority:
            let priority = try params.requiredInt("priority")
            let session = try await session(name)
            guard let ids = try await selection(params, in: session, name) else {
                throw RPCError.invalidParams("\"ids\" is required")
            }
            try await session.setPriority(priority, for: ids)
            return [:]
        case .subscribe:
            let session = try await session(name)
            let replay = try params.bool("replay") ?? true
            let journal = try await session.store.journal()
            subscribers[name, default: [:]][outbox.id] = (outbox, journal.last?.sequence ?? 0)
            let page = Self.journalPage(replay ? journal : [], limit: Int.max, budget: DaemonProtocol.maxPagedResponseBytes - 256)
            return ["journal": .array(page.events), "next": page.next.map(JSONValue.init) ?? .null]
        case .unsubscribe:
            let known = sessions[name] != nil ? true : try await hasSavedConfiguration(name)
            guard known else { throw RPCError.noSuchSession(name) }
            subscribers[name]?[outbox.id] = nil
            return [:]
        case .listJournal:
            let session = try await session(name)
            let after = try params.int64("after") ?? 0
            let limit = try Self.limit(params) ?? Int.max
            let page = Self.journalPage(try await session.store.journal(after: after), limit: limit, budget: budget)
            return ["events": .array(page.events), "next": page.next.map(JSONValue.init) ?? .null]
        case .acknowledgeJournal:
            if let ids = try params.strings("ids") {
                return ["acknowledged": JSONValue(try await session(name).store.acknowledgeJournal(taskIDs: ids))]
            }
            guard let through = try params.int64("through") else { throw RPCError.invalidParams("give \"through\" or \"ids\"") }
            return ["acknowledged": JSONValue(try await session(name).store.acknowledgeJournal(through: through))]
        case .hello, .status, .startWeb, .fleetNodes:
            throw RPCError.methodNotFound(request.method)  // answered above
        }
    }

    /// Refuses, changing nothing, a request that sets a command its caller may not set.
    private static func refuse(_ caller: DaemonCaller, setsCommand: Bool) throws {
        if let refusal = caller.commandRefusal(setsCommand: setsCommand) { throw HaulError(.usage, refusal) }
    }

    /// What `daemon.hello` answers: the protocol, this haul's version and the daemon's process id.
    static let identity: [String: JSONValue] = [
        "protocol": JSONValue(DaemonProtocol.version), "version": .string(HaulVersion.string), "pid": JSONValue(Int(getpid())),
    ]

    // MARK: Adding and listing

    /// `tasks.add`: the ids always; the tasks too unless `reply` is `"ids"` or they would not fit one line.
    private func add(_ params: Params, to name: String, budget: Int, caller: DaemonCaller) async throws -> JSONValue {
        guard let objects = try params.objects("tasks"), !objects.isEmpty else {
            throw RPCError.invalidParams("\"tasks\" must be a non-empty array of objects")
        }
        guard objects.count <= DaemonProtocol.maxTasksPerAdd else {
            throw RPCError.invalidParams("\"tasks\" holds more than \(DaemonProtocol.maxTasksPerAdd) tasks")
        }
        let reply = try params.string("reply") ?? "tasks"
        guard reply == "tasks" || reply == "ids" else { throw RPCError.invalidParams("\"reply\" must be \"tasks\" or \"ids\"") }
        var requests: [DownloadRequest] = []
        for object in objects { requests.append(try DaemonProtocol.decodeRequest(object)) }
        try Self.refuse(caller, setsCommand: requests.contains { $0.spec.completionCommand != nil })
        try await check(requests, in: name)
        // Checked before the session is created, so that a refused addition leaves nothing behind.
        let added = try await session(name, creating: true).add(requests)
        var result: [String: JSONValue] = ["ids": .array(added.map { .string($0.id) })]
        if reply == "tasks" {
            let tasks = added.map(DaemonProtocol.encode)
            let size = tasks.reduce(result["ids"]?.serialized.utf8.count ?? 0) { $0 + $1.serialized.utf8.count + 1 }
            if size <= budget { result["tasks"] = .array(tasks) }
        }
        return .object(result)
    }

    /// Refuses at once what would only fail later, out of sight: an `id` that names another URL's task, and a
    /// destination the download would refuse (unless the same task is being added again).
    private func check(_ requests: [DownloadRequest], in name: String) async throws {
        let known = sessions[name] != nil ? true : try await hasSavedConfiguration(name)
        let existing = known ? try await session(name) : nil
        for request in requests {
            if let id = request.id, let task = try await existing?.store.task(id: id), task.url != request.url.absoluteString {
                throw HaulError(.usage, "the task id \(id) is taken by another URL (\(Redaction.url(task.url))); choose another --id")
            }
            guard let destination = request.destination else { continue }
            do {
                try TransferEngine.checkDestination(DownloadOptions(request.spec), records: existing?.engine.store ?? TransferRecordStore(home: home))
            } catch {
                // Adding the same task again returns it: its own file is no conflict.
                if case .file(let path) = destination, try await existing?.store.tasks()
                    .contains(where: { $0.url == request.url.absoluteString && $0.destination == .file(path) }) == true { continue }
                throw error
            }
        }
    }

    /// `tasks.list`: a page of tasks in the order added, after `cursor`, at most `limit` of them and at most
    /// `budget` bytes of JSON; `next` is the cursor of the following page, or null after the last one.
    private func list(_ params: Params, in session: LocalSession, budget: Int) async throws -> JSONValue {
        let ids = try params.strings("ids")
        let limit = try Self.limit(params) ?? Int.max
        var after: Int64 = 0
        if let cursor = try params.string("cursor") {
            guard let value = Int64(cursor), value >= 0 else { throw RPCError.invalidParams("\"cursor\" is not one this daemon gave") }
            after = value
        }
        var page: [JSONValue] = [], used = 0, last = after, more = false
        var rows: [(sequence: Int64, task: TaskSnapshot)] = []
        if let ids { rows = try await session.tasks(ids: ids).filter { $0.sequence > after } }
        var index = 0, exhausted = ids != nil
        // Bounded: every turn takes a row or ends; rows come at most 1,000 at a time from a finite store.
        for _ in 0..<(DaemonProtocol.maxPageLimit * 1_000) {
            if index == rows.count {
                guard !exhausted else { break }
                rows = try await session.tasks(after: last, limit: 1_000)
                index = 0
                exhausted = rows.count < 1_000
                if rows.isEmpty { break }
            }
            let row = rows[index]
            let json = DaemonProtocol.encode(row.task)
            let size = json.serialized.utf8.count + 1
            if page.count >= limit || (!page.isEmpty && used + size > budget) {
                more = true
                break
            }
            page.append(json)
            used += size
            last = row.sequence
            index += 1
        }
        return ["tasks": .array(page), "next": more ? .string(String(last)) : .null]
    }

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
    private static func limit(_ params: Params) throws -> Int? {
        guard let limit = try params.int("limit") else { return nil }
        guard (1...DaemonProtocol.maxPageLimit).contains(limit) else {
            throw RPCError.invalidParams("\"limit\" must be between 1 and \(DaemonProtocol.maxPageLimit)")
        }
        return limit
    }

    /// The ids named by `ids` (all must exist) or `nil` for `"all": true`.
    private func selection(_ params: Params, in session: LocalSession, _ name: String) async throws -> [String]? {
        if try params.bool("all") == true { return nil }
        guard let ids = try params.strings("ids"), !ids.isEmpty else {
            throw RPCError.invalidParams("give \"ids\" (a non-empty array of task ids) or \"all\": true")
        }
        let known = Set(try await session.tasks(ids: ids).map(\.task.id))
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
