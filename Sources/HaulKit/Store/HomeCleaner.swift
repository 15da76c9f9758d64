import Foundation

/// The shell of `haul clean`: lists what is under `HAUL_HOME` for ``HomeCleanup`` to decide on, and removes
/// what it chose, each thing under its lock and only if it is still as it was found.
package struct HomeCleaner: Sendable {
    package let home: HaulHome
    private let records: TransferRecordStore

    package init(home: HaulHome) {
        self.home = home
        records = TransferRecordStore(home: home)
    }

    // MARK: Looking

    /// What is under `HAUL_HOME/transfers` and `HAUL_HOME/sessions` (batch sessions only; the daemon's are not
    /// touched). Each lock is tried and let go at once.
    package func inventory() -> HomeCleanup.Inventory {
        var inventory = HomeCleanup.Inventory()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: records.directory)) ?? []
        var lockKeys: [String] = []
        for name in names {
            if let key = name.removingSuffix(".json.tmp") {
                inventory.temporaries.append(key)
            } else if let key = name.removingSuffix(".json") {
                inventory.records.append(record(key))
            } else if let key = name.removingSuffix(".lock") {
                lockKeys.append(key)
            }
        }
        for key in lockKeys {
            let held: Bool
            switch FileLock.takeExisting(lockPath(key)) {
            case .missing: continue
            case .held: held = true
            case .taken(let lock):
                held = false
                lock.release()
            }
            let chosen = FileLock.note(at: lockPath(key)).flatMap { $0.hasPrefix("/") ? TransferRecord.key(destinationPath: $0) : nil }
            inventory.locks.append(HomeCleanup.Lock(key: key, held: held, chosenRecordKey: chosen))
        }
        // A download's destination lock is a byte of `transfers/locks`: a record or temporary file whose lock is
        // held there belongs to a running download.
        let lockFiles = Set(lockKeys)
        for key in Set(inventory.records.map(\.key) + inventory.temporaries) where !lockFiles.contains(key) {
            switch FileLock.takeExisting(key: key, among: records.locksPath) {
            case .held: inventory.locks.append(HomeCleanup.Lock(key: key, held: true))
            case .taken(let lock): lock.release()
            case .missing: break
            }
        }
        for name in batchSessionNames() {
            let lock = FileLock.takeExisting(sessionFolder(name) + "/session.lock")
            if case .held = lock {
                inventory.sessions.append(HomeCleanup.BatchSession(name: name, inUse: true, states: nil))
                continue
            }
            inventory.sessions.append(HomeCleanup.BatchSession(name: name, inUse: false, states: taskStates(name)))
            if case .taken(let lock) = lock { lock.release() }
        }
        return inventory
    }

    /// A record as ``HomeCleanup`` sees it: finished, or unfinished with or without the bytes it would resume from.
    private func record(_ key: String) -> HomeCleanup.Record {
        guard let record = try? records.load(key) else { return HomeCleanup.Record(key: key, status: .unreadable) }
        guard record.state != .finished else { return HomeCleanup.Record(key: key, status: .finished, destination: record.destinationPath) }
        // An adopted file (`--continue`) holds its bytes at the destination itself.
        let held = POSIX.exists(record.adopted ? record.destinationPath : record.partialPath)
        return HomeCleanup.Record(key: key, status: .unfinished(heldBytes: held), destination: record.destinationPath)
    }

    /// `get-*` folders under `sessions/` without a daemon configuration.
    private func batchSessionNames() -> [String] {
        let folder = home.path + "/sessions"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { name in
            name.hasPrefix("get-") && POSIX.isDirectory(sessionFolder(name)) && !POSIX.exists(sessionFolder(name) + "/daemon.json")
        }.sorted()
    }

    /// The states of a batch session's tasks (none when it has no store), or `nil` when its store cannot be read.
    private func taskStates(_ name: String) -> [TaskState]? {
        let path = sessionFolder(name) + "/tasks.sqlite"
        guard POSIX.exists(path) else { return [] }
        guard let store = try? TaskStore(path: path), let tasks = try? store.tasks() else { return nil }
        return tasks.map(\.state)
    }

    // MARK: Removing

    /// Removes one thing `HomeCleanup` chose, under its lock, if it is still as found; false when it was left
    /// (a download started using it meanwhile, or it could not be deleted).
    package func remove(_ removal: HomeCleanup.Removal) -> Bool {
        switch removal {
        case .finishedRecord(let key, _), .staleRecord(let key, _):
            return underLock(key) {
                let now = record(key).status
                guard now == .finished || now == .unfinished(heldBytes: false) else { return false }
                return delete(records.recordPath(key))
            }
        case .temporary(let key):
            return underLock(key) { delete(records.recordPath(key) + ".tmp") }
        case .lock(let key):
            guard case .taken(let lock) = FileLock.takeExisting(lockPath(key)) else { return false }
            defer { lock.release() }
            // A download that began meanwhile has written a record beside it.
            guard !POSIX.exists(records.recordPath(key)) else { return false }
            return delete(lockPath(key))
        case .session(let name):
            let folder = sessionFolder(name)
            let lock = FileLock.takeExisting(folder + "/session.lock")
            if case .held = lock { return false }
            defer { if case .taken(let lock) = lock { lock.release() } }
            guard let states = taskStates(name), states.allSatisfy({ $0 == .finished || $0 == .cancelled }) else { return false }
            return (try? FileManager.default.removeItem(atPath: folder)) != nil
        }
    }

    /// Runs `body` holding the lock of `key` (its byte of `transfers/locks`, and its lock file if an earlier haul
    /// left one); false when another process holds it.
    private func underLock(_ key: String, _ body: () -> Bool) -> Bool {
        let range = FileLock.takeExisting(key: key, among: records.locksPath)
        if case .held = range { return false }
        defer { if case .taken(let lock) = range { lock.release() } }
        switch FileLock.takeExisting(lockPath(key)) {
        case .held: return false
        case .missing: return body()
        case .taken(let lock):
            defer { lock.release() }
            return body()
        }
    }

    /// Deletes the file at `path`; true when it is gone.
    private func delete(_ path: String) -> Bool { unlink(path) == 0 || errno == ENOENT }

    // MARK: Naming

    /// Where the thing removed lives, relative to `HAUL_HOME`.
    package func relativePath(_ removal: HomeCleanup.Removal) -> String {
        switch removal {
        case .finishedRecord(let key, _), .staleRecord(let key, _): return "transfers/\(key).json"
        case .temporary(let key): return "transfers/\(key).json.tmp"
        case .lock(let key): return "transfers/\(key).lock"
        case .session(let name): return "sessions/\(name)"
        }
    }

    private func lockPath(_ key: String) -> String { records.directory + "/" + key + ".lock" }
    private func sessionFolder(_ name: String) -> String { SessionFolder.path(name, home: home) }
}

private extension String {
    func removingSuffix(_ suffix: String) -> String? {
        guard hasSuffix(suffix), count > suffix.count else { return nil }
        return String(dropLast(suffix.count))
    }
}
