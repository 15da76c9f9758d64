import Foundation

// Adding tasks to a session: new ones, the same ones again, and ended ones again (queued again, or added anew with
// another description).
extension LocalSession {
    /// Adds downloads in one transaction; existing tasks (same id, or same URL and destination) are returned as they
    /// are, or with `requeuesEnded`, queued again when they ended (finished, failed or cancelled), as running the same
    /// `haul get` again takes a download up again: the download then finds a finished file still complete without a
    /// request, and fetches one deleted or replaced since.
    package func add(_ requests: [DownloadRequest]) async throws -> [TaskSnapshot] {
        try await add(requests, requeuesEnded: false)
    }

    /// ``add(_:)``; with `requeuesEnded`, ended tasks added again are queued again (see the type's `add`).
    package func add(_ requests: [DownloadRequest], requeuesEnded: Bool) async throws -> [TaskSnapshot] {
        let anchoredRequests = requests.map(anchored)
        var results = try await store.add(anchoredRequests)
        let ended: Set<TaskState> = [.finished, .failed, .cancelled]
        if requeuesEnded {
            // The same download added again with other options (`--overwrite`, `-N`, another checksum) after it
            // ended: the options given now are the user's, so it is added anew with them (a new task in place of
            // the old one), instead of queued again with the options of its first time.
            let replaced = zip(results.indices, anchoredRequests).filter { index, request in
                let (task, created) = results[index]
                return !created && ended.contains(task.state) && task.spec.url == request.spec.url
                    && task.spec.destination == request.spec.destination && task.spec != request.spec
            }
            if !replaced.isEmpty {
                let old = replaced.map { results[$0.0].task.id }
                try await store.remove(ids: old)
                for id in old { emit(.removed(id: id)) }
                let added = try await store.add(replaced.map(\.1))
                for ((index, _), result) in zip(replaced, added) { results[index] = result }
            }
        }
        for (task, created) in results where created {
            noteStored(task)
            emit(.added(snapshot(of: task)))
        }
        let again = requeuesEnded ? results.filter { !$0.created && ended.contains($0.task.state) }.map(\.task) : []
        if !again.isEmpty {
            let queued = try await store.updateAll(ids: again.map(\.id)) { task in
                guard ended.contains(task.state) else { return }
                task.state = .waiting
                task.record(nil)
            }
            var byID: [String: StoredTask] = [:]
            for task in queued { byID[task.id] = task }
            for old in again {
                guard let task = byID[old.id], task.state == .waiting else { continue }
                noteStored(task)
                emit(.stateChanged(id: task.id, from: old.state, to: .waiting))
            }
            results = results.map { (byID[$0.task.id] ?? $0.task, $0.created) }
        }
        if results.contains(where: \.created) || !again.isEmpty { Task { await self.schedule() } }
        return results.map { snapshot(of: $0.task) }
    }

    /// The request as the store keeps it: paths absolute, and the session's default folder when it names none.
    private func anchored(_ request: DownloadRequest) -> DownloadRequest {
        var anchored = request
        anchored.spec = request.spec.anchored(defaultDirectory: configuration.defaultDirectory ?? ".", absolutePath)
        return anchored
    }
}
