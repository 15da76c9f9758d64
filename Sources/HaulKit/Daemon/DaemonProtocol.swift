import Foundation

/// The daemon's wire objects (see docs/protocol.md): tasks, events, configurations and additions as JSON.
/// Pure conversions, used by both the daemon and its clients.
package enum DaemonProtocol {
    /// The protocol version this build speaks.
    public static let version = 1
    /// The most tasks one `tasks.add` may carry.
    public static let maxTasksPerAdd = 10_000
    /// The most tasks (or journal entries) one page may hold when a client asks for a `limit`.
    public static let maxPageLimit = 10_000
    /// The largest answer the daemon sends when a client asks for pages (`limit` or `cursor`), newline excluded:
    /// the line limit, so that every client can read it.
    public static let maxPagedResponseBytes = JSONRPC.maxMessageBytes
    /// The largest answer the daemon sends at all (an old client's list without `limit`), newline excluded.
    public static let maxResponseBytes = 3 << 20
    /// The longest URL a task may have, in bytes once normalized.
    public static let maxURLBytes = 65_536
    /// The longest destination path or task id, in bytes.
    public static let maxPathBytes = 4_096
    public static let maxTaskIDBytes = 256
    /// What clients put in one `tasks.add` (well under the 1 MiB line, so that the answer fits one line too).
    public static let addChunkTasks = 1_000
    public static let addChunkBytes = 256 << 10

    /// `values` split into runs of at most `count` values and (when each is small enough) `bytes` bytes of JSON.
    public static func chunks(_ values: [JSONValue], count: Int, bytes: Int) -> [[JSONValue]] {
        chunks(values, count: count, bytes: bytes) { $0 }
    }

    /// `values` split into runs of at most `count` values and (when each is small enough) `bytes` bytes of their
    /// JSON (`json`).
    public static func chunks<Value>(_ values: [Value], count: Int, bytes: Int, _ json: (Value) -> JSONValue) -> [[Value]] {
        var chunks: [[Value]] = []
        var current: [Value] = []
        var size = 0
        for value in values {
            let length = json(value).serialized.utf8.count + 1
            if !current.isEmpty, current.count >= count || size + length > bytes {
                chunks.append(current)
                current = []
                size = 0
            }
            current.append(value)
            size += length
        }
        if !current.isEmpty { chunks.append(current) }
        return chunks
    }

    // MARK: Tasks

    public static func encode(_ task: TaskSnapshot) -> JSONValue {
        var error: JSONValue = .null
        if let failure = task.error {
            var object: [String: JSONValue] = ["kind": .string(failure.kind.rawValue), "message": .string(failure.message)]
            if let reason = FailureReasonJSON.value(failure) { object["failure"] = reason }
            error = .object(object)
        }
        var object: [String: JSONValue] = [
            "id": .string(task.id), "url": .string(task.url), "state": .string(task.state.rawValue),
            "priority": JSONValue(task.priority), "bytes": JSONValue(task.bytes), "total": task.total.map(JSONValue.init) ?? .null,
            "bytesPerSecond": task.bytesPerSecond.map(JSONValue.number) ?? .null, "path": JSONValue(task.filePath),
            "error": error, "note": JSONValue(task.note),
        ]
        if let version = task.httpVersion { object["protocol"] = .string(version) }
        if task.keptExisting { object["keptExisting"] = true }
        // In a fleet only: on one machine a task's JSON is as it was.
        if let node = task.node { object["node"] = .string(node) }
        return .object(object)
    }

    public static func decodeTask(_ value: JSONValue) -> TaskSnapshot? {
        guard let id = value["id"]?.stringValue, let url = value["url"]?.stringValue,
              let state = value["state"]?.stringValue.flatMap(TaskState.init(rawValue:)),
              let bytes = value["bytes"]?.int64Value else { return nil }
        var error: HaulError?
        if let kind = value["error"]?["kind"]?.stringValue.flatMap(HaulError.Kind.init(rawValue:)) {
            error = HaulError(
                kind, value["error"]?["message"]?.stringValue ?? "", reason: FailureReasonJSON.decode(value["error"]?["failure"]) ?? .other)
        }
        var task = TaskSnapshot(
            id: id, url: url, state: state, priority: value["priority"]?.intValue ?? 0, bytes: bytes,
            total: value["total"]?.int64Value, bytesPerSecond: value["bytesPerSecond"]?.doubleValue,
            filePath: value["path"]?.stringValue, error: error, note: value["note"]?.stringValue, node: value["node"]?.stringValue)
        task.httpVersion = value["protocol"]?.stringValue
        task.keptExisting = value["keptExisting"]?.boolValue ?? false
        return task
    }

    public static func decodeTasks(_ value: JSONValue?) -> [TaskSnapshot]? {
        guard let array = value?.arrayValue else { return nil }
        var tasks: [TaskSnapshot] = []
        for element in array {
            guard let task = decodeTask(element) else { return nil }
            tasks.append(task)
        }
        return tasks
    }

    // MARK: Events

    /// An event on the wire; `finished` and `failed` carry their journal sequence number.
    public static func encode(_ event: SessionEvent, sequence: Int64? = nil) -> JSONValue {
        var object: [String: JSONValue]
        switch event {
        case .added(let task): object = ["type": "added", "task": encode(task)]
        case .stateChanged(let id, let from, let to):
            object = ["type": "stateChanged", "id": .string(id), "from": .string(from.rawValue), "to": .string(to.rawValue)]
        case .progress(let id, let progress):
            object = [
                "type": "progress", "id": .string(id), "bytes": JSONValue(progress.bytes),
                "total": progress.total.map(JSONValue.init) ?? .null,
                "bytesPerSecond": progress.bytesPerSecond.map(JSONValue.number) ?? .null,
                "secondsRemaining": progress.secondsRemaining.map(JSONValue.number) ?? .null,
            ]
        case .finished(let task): object = ["type": "finished", "task": encode(task)]
        case .failed(let task): object = ["type": "failed", "task": encode(task)]
        case .allFinished: object = ["type": "allFinished"]
        case .removed(let id): object = ["type": "removed", "id": .string(id)]
        }
        if let sequence { object["seq"] = JSONValue(sequence) }
        return .object(object)
    }

    public static func decodeEvent(_ value: JSONValue) -> (event: SessionEvent, sequence: Int64?)? {
        let sequence = value["seq"]?.int64Value
        switch value["type"]?.stringValue {
        case "added": return decodeTask(value["task"] ?? .null).map { (.added($0), sequence) }
        case "finished": return decodeTask(value["task"] ?? .null).map { (.finished($0), sequence) }
        case "failed": return decodeTask(value["task"] ?? .null).map { (.failed($0), sequence) }
        case "stateChanged":
            guard let id = value["id"]?.stringValue,
                  let from = value["from"]?.stringValue.flatMap(TaskState.init(rawValue:)),
                  let to = value["to"]?.stringValue.flatMap(TaskState.init(rawValue:)) else { return nil }
            return (.stateChanged(id: id, from: from, to: to), sequence)
        case "progress":
            guard let id = value["id"]?.stringValue, let bytes = value["bytes"]?.int64Value else { return nil }
            let progress = DownloadProgress(
                bytes: bytes, total: value["total"]?.int64Value, bytesPerSecond: value["bytesPerSecond"]?.doubleValue,
                secondsRemaining: value["secondsRemaining"]?.doubleValue)
            return (.progress(id: id, progress), sequence)
        case "allFinished": return (.allFinished, sequence)
        case "removed": return value["id"]?.stringValue.map { (.removed(id: $0), sequence) }
        default: return nil
        }
    }

    // MARK: Configuration

    /// The parts of a configuration the daemon can carry out (closures stay in the client).
    public static func encode(_ configuration: SessionConfiguration) -> JSONValue {
        [
            "maxConcurrentDownloads": JSONValue(configuration.maxConcurrentDownloads),
            "maxDownloadsPerHost": JSONValue(configuration.maxDownloadsPerHost),
            "fleetMaxConnectionsPerHost": configuration.fleetMaxConnectionsPerHost.map { JSONValue($0) } ?? .null,
            "rateLimit": configuration.rateLimit.map(JSONValue.init) ?? .null,
            "completionCommand": JSONValue(configuration.completionCommand),
            "defaultDirectory": JSONValue(configuration.defaultDirectory),
            "defaultHeaders": .array(configuration.defaultHeaders.fields.map { ["name": .string($0.name), "value": .string($0.value)] }),
            "resumeRunningTasksOnRelaunch": .bool(configuration.resumeRunningTasksOnRelaunch),
            "stallTimeout": .number(configuration.stallTimeout.seconds),
            "progressInterval": .number(configuration.progressInterval.seconds),
        ]
    }

    /// Applies the members present in `params` to `configuration`.
    public static func apply(_ params: Params, to configuration: inout SessionConfiguration) throws(RPCError) {
        if let count = try params.int("maxConcurrentDownloads") {
            let range = SessionConfiguration.maxConcurrentRange
            guard range.contains(count) else {
                throw .invalidParams("\"maxConcurrentDownloads\" must be between \(range.lowerBound) and \(range.upperBound)")
            }
            configuration.maxConcurrentDownloads = count
        }
        if let count = try params.int("maxDownloadsPerHost") {
            guard count >= 1 else { throw .invalidParams("\"maxDownloadsPerHost\" must be 1 or more") }
            configuration.maxDownloadsPerHost = count
        }
        if params.members["fleetMaxConnectionsPerHost"] != nil {
            let count = try params.int("fleetMaxConnectionsPerHost")
            let range = SessionConfiguration.fleetMaxPerHostRange
            if let count, !range.contains(count) {
                throw .invalidParams("\"fleetMaxConnectionsPerHost\" must be between \(range.lowerBound) and \(range.upperBound), or null for none")
            }
            configuration.fleetMaxConnectionsPerHost = count
        }
        if params.members["rateLimit"] != nil {
            let limit = try params.int64("rateLimit")
            if let limit, limit < 1 { throw .invalidParams("\"rateLimit\" must be 1 or more bytes per second") }
            configuration.rateLimit = limit
        }
        if params.members["completionCommand"] != nil { configuration.completionCommand = try params.string("completionCommand") }
        if params.members["defaultDirectory"] != nil {
            let folder = try params.string("defaultDirectory")
            if let folder, !folder.hasPrefix("/") { throw .invalidParams("\"defaultDirectory\" must be an absolute path") }
            if let folder, folder.utf8.contains(0) { throw .invalidParams("\"defaultDirectory\" has a NUL byte in it") }
            configuration.defaultDirectory = folder
        }
        if let objects = try params.objects("defaultHeaders") {
            let fields = try objects.map { (object: Params) throws(RPCError) in (name: try object.requiredString("name"), value: try object.requiredString("value")) }
            do { configuration.defaultHeaders = try DownloadSpec.headers(fields, "defaultHeaders") } catch { throw .invalidParams(error.message) }
        }
        if let resume = try params.bool("resumeRunningTasksOnRelaunch") { configuration.resumeRunningTasksOnRelaunch = resume }
        if let seconds = try params.double("stallTimeout") {
            guard seconds > 0, seconds < 86_400 else { throw .invalidParams("\"stallTimeout\" must be between 0 and 86400 seconds") }
            configuration.stallTimeout = .milliseconds(Int64(seconds * 1000))
        }
        if let seconds = try params.double("progressInterval") {
            guard seconds >= 0, seconds < 3600 else { throw .invalidParams("\"progressInterval\" must be between 0 and 3600 seconds") }
            configuration.progressInterval = .milliseconds(Int64(seconds * 1000))
        }
    }

    // MARK: Fleet

    /// A node of the fleet on the wire (`fleet.nodes`).
    public static func encode(_ node: FleetNode) -> JSONValue {
        [
            "name": .string(node.name), "host": .string(node.host), "pid": JSONValue(node.pid), "alive": .bool(node.alive),
            "stopped": .bool(node.stopped), "secondsSinceSeen": .number(node.secondsSinceSeen),
            "leases": .array(node.leases.map { lease in
                [
                    "session": .string(lease.session), "id": .string(lease.taskID), "url": .string(Redaction.url(lease.url)),
                    "bytes": JSONValue(lease.bytes), "total": lease.total.map { JSONValue($0) } ?? .null,
                    "secondsLeft": .number(lease.secondsLeft),
                ]
            }),
        ]
    }

    /// A node as `fleet.nodes` sends it; `nil` when it is not one.
    public static func decodeNode(_ value: JSONValue) -> FleetNode? {
        guard let name = value["name"]?.stringValue, let host = value["host"]?.stringValue, let pid = value["pid"]?.intValue,
              let alive = value["alive"]?.boolValue else { return nil }
        let leases = (value["leases"]?.arrayValue ?? []).compactMap { lease -> FleetLease? in
            guard let session = lease["session"]?.stringValue, let id = lease["id"]?.stringValue, let url = lease["url"]?.stringValue,
                  let bytes = lease["bytes"]?.int64Value else { return nil }
            return FleetLease(
                session: session, taskID: id, url: url, bytes: bytes, total: lease["total"]?.int64Value,
                secondsLeft: lease["secondsLeft"]?.doubleValue ?? 0)
        }
        return FleetNode(
            name: name, host: host, pid: pid, alive: alive, stopped: value["stopped"]?.boolValue ?? false,
            secondsSinceSeen: value["secondsSinceSeen"]?.doubleValue ?? 0, leases: leases)
    }

    // MARK: Additions

    /// A `tasks.add` entry: the request's spec (``DownloadSpec`` in its one JSON shape) with `priority` and `id`.
    public static func encode(_ request: DownloadRequest) -> JSONValue {
        var object = request.spec.json.objectValue ?? [:]
        object["priority"] = JSONValue(request.priority)
        if let id = request.id { object["id"] = .string(id) }
        return .object(object)
    }

    /// Reads a `tasks.add` entry. Paths must be absolute: the daemon runs in another folder.
    public static func decodeRequest(_ params: Params) throws(RPCError) -> DownloadRequest {
        let text = try params.requiredString("url")
        guard text.utf8.count <= maxURLBytes else { throw .invalidParams("\"url\" is longer than \(maxURLBytes) bytes") }
        for key in ["path", "directory", "confinedTo"] {
            guard let path = try params.string(key) else { continue }
            guard path.utf8.count <= maxPathBytes else { throw .invalidParams("\"\(key)\" is longer than \(maxPathBytes) bytes") }
            // A C path ends at its first NUL: the file would be another one.
            guard !path.utf8.contains(0) else { throw .invalidParams("\"\(key)\" has a NUL byte in it") }
        }
        if let tls = try params.object("options")?.object("tls") {
            for key in ["caFile", "caDirectory", "clientCertificate", "clientKey"] {
                if try tls.string(key)?.utf8.contains(0) == true { throw .invalidParams("\"tls\": \"\(key)\" has a NUL byte in it") }
            }
        }
        let spec = try JSONValueDecoder.decode(DownloadSpec.self, from: .object(params.members))
        guard spec.url.absoluteString.utf8.count <= maxURLBytes else {
            throw .invalidParams("\"url\" is longer than \(maxURLBytes) bytes once encoded")
        }
        switch spec.destination {
        case .file(let path)?: guard path.hasPrefix("/") else { throw .invalidParams("\"path\" must be an absolute path") }
        case .directory(let folder)?: guard folder.hasPrefix("/") else { throw .invalidParams("\"directory\" must be an absolute path") }
        case .standardOutput?, nil: break
        }
        if let root = spec.confinedTo, !root.hasPrefix("/") { throw .invalidParams("\"confinedTo\" must be an absolute path") }
        // The daemon runs in another folder: a relative path would name another file there.
        if let tls = spec.tls {
            for path in [tls.caFile, tls.caDirectory, tls.clientCertificate, tls.clientKey] {
                if let path, !path.hasPrefix("/") { throw .invalidParams("\"tls\": \(path) is not an absolute path") }
            }
        }
        var request = DownloadRequest(spec)
        request.priority = try params.int("priority") ?? 0
        if let id = try params.string("id") {
            guard !id.isEmpty else { throw .invalidParams("\"id\" cannot be empty") }
            guard id.utf8.count <= maxTaskIDBytes, !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw .invalidParams("\"id\" must be at most \(maxTaskIDBytes) bytes without control characters")
            }
            request.id = id
        }
        return request
    }
}

extension DownloadSpec {
    /// The spec in its one JSON shape (its `Codable`), as the protocol carries it.
    package var json: JSONValue {
        // JSONValueEncoder refuses no value, and nothing in a spec's encoding throws.
        (try? JSONValueEncoder.encode(self)) ?? .object([:])
    }
}
