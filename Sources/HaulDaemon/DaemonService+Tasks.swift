import HaulKit
import Foundation

// The methods on a session's tasks (`tasks.*`): each decodes its typed parameters (DaemonCalls+Tasks.swift) once and
// answers with its typed result.
extension DaemonService {
    /// Carries out the task method `method` on session `name`. `budget` is the most bytes a listing may answer with.
    func performTaskMethod(
        _ method: DaemonMethod, _ params: Params, in name: String, caller: DaemonCaller, answerID: JSONValue?, budget: Int
    ) async throws -> JSONValue {
        switch method {
        case .addTasks:
            let addBudget = DaemonProtocol.maxPagedResponseBytes - 256 - (answerID?.serialized.utf8.count ?? 0)
            return try JSONValueEncoder.encode(try await add(try AddTasks.parameters(params), to: name, budget: addBudget, caller: caller))
        case .listTasks:
            let session = try await session(name)
            return try JSONValueEncoder.encode(try await list(try ListTasks.parameters(params), in: session, budget: budget))
        case .pauseTasks, .resumeTasks, .cancelTasks:
            let command: TaskCommand = method == .pauseTasks ? .pause : method == .resumeTasks ? .resume : .cancel
            let session = try await session(name)
            // The three share their parameters (``SelectedTasks``).
            let selection = try PauseTasks.parameters(params)
            try await session.apply(command, to: try await ids(selection, in: session, name))
            return try JSONValueEncoder.encode(NoResult())
        case .removeTasks:
            let session = try await session(name)
            let parameters = try RemoveTasks.parameters(params)
            let files = try await session.remove(try await ids(parameters.selection, in: session, name), deleteFile: parameters.deleteFile ?? false)
            return try JSONValueEncoder.encode(RemoveTasks.Result(files: files))
        case .setPriority:
            let parameters = try SetPriority.parameters(params)
            let session = try await session(name)
            guard let ids = try await ids(parameters.selection, in: session, name) else {
                throw RPCError.invalidParams("\"ids\" is required")
            }
            try await session.setPriority(parameters.priority, for: ids)
            return try JSONValueEncoder.encode(SetPriority.Result())
        case .segments:
            let parameters = try TaskSegments.parameters(params)
            let session = try await session(name)
            guard let map = try await session.segmentMap(parameters.id) else {
                throw HaulError(.usage, "no task \(parameters.id) in session \(name); `haul ls` lists them")
            }
            return try JSONValueEncoder.encode(TaskSegments.Result(map, id: parameters.id))
        default:
            throw RPCError.methodNotFound(method.rawValue)
        }
    }

    /// `tasks.add`: the ids always; the tasks too unless `reply` is `"ids"` or they would not fit `budget`.
    private func add(_ parameters: AddTasks.Parameters, to name: String, budget: Int, caller: DaemonCaller) async throws -> AddTasks.Result {
        guard parameters.tasks.count <= DaemonProtocol.maxTasksPerAdd else {
            throw RPCError.invalidParams("\"tasks\" holds more than \(DaemonProtocol.maxTasksPerAdd) tasks")
        }
        let reply = parameters.reply ?? "tasks"
        guard reply == "tasks" || reply == "ids" else { throw RPCError.invalidParams("\"reply\" must be \"tasks\" or \"ids\"") }
        var requests: [DownloadRequest] = []
        for addition in parameters.tasks { requests.append(try addition.request()) }
        try Self.refuse(caller, setsCommand: requests.contains { $0.spec.completionCommand != nil })
        try await check(requests, in: name)
        // Checked before the session is created, so that a refused addition leaves nothing behind.
        // Adding a download that ended queues it again (`id=$(haul add URL) && haul wait $id` after the file was
        // deleted downloads it again, instead of reporting the old finish).
        let added = try await session(name, creating: true).add(requests, requeuesEnded: true)
        var result = AddTasks.Result(ids: added.map(\.id))
        if reply == "tasks" {
            let tasks = added.map(WireTask.init)
            let size = tasks.reduce(JSONValue.array(result.ids.map(JSONValue.string)).serialized.utf8.count) {
                $0 + $1.json.serialized.utf8.count + 1
            }
            if size <= budget { result.tasks = tasks }
        }
        return result
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
    private func list(_ parameters: ListTasks.Parameters, in session: LocalSession, budget: Int) async throws -> ListTasks.Result {
        let limit = try Self.limit(parameters.limit) ?? Int.max
        var after: Int64 = 0
        if let cursor = parameters.cursor {
            guard let value = Int64(cursor), value >= 0 else { throw RPCError.invalidParams("\"cursor\" is not one this daemon gave") }
            after = value
        }
        var page: [WireTask] = [], used = 0, last = after, more = false
        var rows: [(sequence: Int64, task: TaskSnapshot)] = []
        if let ids = parameters.ids { rows = try await session.tasks(ids: ids).filter { $0.sequence > after } }
        var index = 0, exhausted = parameters.ids != nil
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
            let task = WireTask(row.task)
            let size = task.json.serialized.utf8.count + 1
            if page.count >= limit || (!page.isEmpty && used + size > budget) {
                more = true
                break
            }
            page.append(task)
            used += size
            last = row.sequence
            index += 1
        }
        return ListTasks.Result(tasks: page, next: more ? String(last) : nil)
    }

    /// The ids `selection` names (all must exist), or `nil` for `"all": true`.
    private func ids(_ selection: SelectedTasks, in session: LocalSession, _ name: String) async throws -> [String]? {
        if selection.all == true { return nil }
        guard let ids = selection.ids, !ids.isEmpty else {
            throw RPCError.invalidParams("give \"ids\" (a non-empty array of task ids) or \"all\": true")
        }
        let known = Set(try await session.tasks(ids: ids).map(\.task.id))
        if let missing = ids.first(where: { !known.contains($0) }) {
            throw HaulError(.usage, "no task \(missing) in session \(name); `haul ls` lists them")
        }
        return ids
    }
}
