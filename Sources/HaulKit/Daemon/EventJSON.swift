import Foundation

/// Haul's one JSON vocabulary for events: the daemon's protocol, `haul get --json` (one URL or many),
/// `haul watch --json` and `haul ls --json` all write these shapes (docs/protocol.md, "Events").
///
/// Every event is an object whose `type` says which it is; members are camelCase; a task appears as the
/// protocol's Task object. A type means the same members wherever it is written: a script that reads a
/// `finished` event's `task.path` works for one download, for a batch and for a daemon session.
package enum EventJSON {
    /// A session's event, as the protocol sends it (`finished` and `failed` with their journal `seq`).
    /// With `redacting`, URLs show any `user:password@` as `***@` (for output a person or a log may see).
    package static func session(_ event: SessionEvent, sequence: Int64? = nil, redacting: Bool = false) -> JSONValue {
        guard redacting else { return DaemonProtocol.encode(event, sequence: sequence) }
        switch event {
        case .added(let task): return DaemonProtocol.encode(.added(redacted(task)), sequence: sequence)
        case .finished(let task): return DaemonProtocol.encode(.finished(redacted(task)), sequence: sequence)
        case .failed(let task): return DaemonProtocol.encode(.failed(redacted(task)), sequence: sequence)
        case .stateChanged, .progress, .allFinished, .removed: return DaemonProtocol.encode(event, sequence: sequence)
        }
    }

    /// A task object with its URL's credentials hidden.
    package static func task(_ task: TaskSnapshot, redacting: Bool = true) -> JSONValue {
        DaemonProtocol.encode(redacting ? redacted(task) : task)
    }

    /// One download's event (`haul get` with one URL), for the download named `id` whose URL is `url`.
    ///
    /// `progress` is the session's `progress` plus `segments` for a segmented download; `finished` carries the
    /// task as a session's `finished` does, plus what only a single download knows (`fetchedBytes`,
    /// `alreadyComplete`, `notModified` when `-N` left the file as it was, `checksum`).
    package static func download(_ event: DownloadEvent, id: String, url: String) -> JSONValue {
        switch event {
        case .started(_, let path, let resumedFrom, let total):
            return [
                "type": "started", "id": .string(id), "url": .string(Redaction.url(url)), "path": .string(path),
                "resumedFrom": JSONValue(resumedFrom), "total": total.map(JSONValue.init) ?? .null,
            ]
        case .progress(let progress):
            var object = DaemonProtocol.encode(.progress(id: id, progress)).objectValue ?? [:]
            if let segments = progress.segments {
                object["segments"] = .array(segments.map {
                    ["start": JSONValue($0.start), "end": JSONValue($0.end), "done": JSONValue($0.done)]
                })
            }
            return .object(object)
        case .retrying(let retry, let maxRetries, let delay, let reason):
            return [
                "type": "retrying", "id": .string(id), "retry": JSONValue(retry), "maxRetries": JSONValue(maxRetries),
                "delaySeconds": .number(delay.seconds), "reason": .string(reason),
            ]
        case .restarted(let reason):
            return ["type": "restarted", "id": .string(id), "reason": .string(reason)]
        case .singleConnection(let reason):
            return ["type": "singleConnection", "id": .string(id), "reason": .string(reason)]
        case .waitingForConnection(let host):
            return ["type": "waitingForConnection", "id": .string(id), "host": .string(host)]
        case .finished(let result):
            let task = TaskSnapshot(
                id: id, url: url, state: .finished, priority: 0, bytes: result.bytes, total: result.bytes,
                bytesPerSecond: nil, filePath: result.path, error: nil)
            var object = DaemonProtocol.encode(.finished(redacted(task))).objectValue ?? [:]
            object["fetchedBytes"] = JSONValue(result.fetchedBytes)
            if let version = result.httpVersion { object["protocol"] = .string(version) }
            object["alreadyComplete"] = .bool(result.alreadyComplete)
            if result.notModified { object["notModified"] = true }
            if result.keptExisting { object["keptExisting"] = true }
            object["checksum"] = result.checksum.map { .string($0.description) } ?? .null
            return .object(object)
        }
    }

    /// A single download's failure: the session's `failed` event for it, plus the `exitCode` `haul` exits with.
    package static func downloadFailed(
        _ error: HaulError, id: String, url: String, path: String?, bytes: Int64, exitCode: Int32
    ) -> JSONValue {
        let task = TaskSnapshot(
            id: id, url: url, state: .failed, priority: 0, bytes: bytes, total: nil, bytesPerSecond: nil,
            filePath: path, error: error)
        var object = DaemonProtocol.encode(.failed(redacted(task))).objectValue ?? [:]
        object["exitCode"] = JSONValue(Int(exitCode))
        return .object(object)
    }

    private static func redacted(_ task: TaskSnapshot) -> TaskSnapshot {
        var shown = task
        shown.url = Redaction.url(task.url)
        return shown
    }
}
