import Foundation
import GRDB
import NIOConcurrencyHelpers

/// The resume records of a session's downloads, kept in the session's task store (tables `transfer` and `choice`)
/// beside the tasks themselves: one store holds a session task's progress, and a download of a batch creates no
/// record file and no name-choice lock file under `HAUL_HOME/transfers/` (the largest per-file cost of thousands of
/// tiny files was creating those inodes).
///
/// Each save is one transaction of the store (WAL, `synchronous = NORMAL`): durable against a crash of the process;
/// after a power loss the store may hold an earlier record, which never claims bytes that were not fsync'd before
/// it was saved (``Checkpointer``), so a resume from it is only longer, never wrong.
///
/// Destination locks stay in `transfers/locks` (``TransferRecordStore/lock(_:what:)``), as they must hold across
/// processes. A record file left by `haul get` (or by a session of an earlier haul) for the same destination is taken
/// into the store when the store has none, so its bytes are continued.
package struct SessionRecords: ResumeRecords {
    let store: any SessionStore
    let files: TransferRecordStore
    /// The task whose download uses these records and its lease, in a shared store: every write is fenced by it.
    let fence: RecordFence?
    /// Final records waiting for their task's conclusion, by key (shared by copies of this value).
    private let finals: NIOLockedValueBox<[String: String]>
    /// A fleet's records that could not be saved while the store was out of reach, the latest of each key, with the
    /// fence of each: saved when the store is back (shared by copies of this value).
    private let unsaved: NIOLockedValueBox<[String: (record: StoredRecord, choice: StoredRecord?, fence: RecordFence)]>

    package init(store: any SessionStore, files: TransferRecordStore) {
        self.init(store: store, files: files, fence: nil, finals: NIOLockedValueBox([:]), unsaved: NIOLockedValueBox([:]))
    }

    private init(
        store: any SessionStore, files: TransferRecordStore, fence: RecordFence?, finals: NIOLockedValueBox<[String: String]>,
        unsaved: NIOLockedValueBox<[String: (record: StoredRecord, choice: StoredRecord?, fence: RecordFence)]>
    ) {
        self.store = store
        self.files = files
        self.fence = fence
        self.finals = finals
        self.unsaved = unsaved
    }

    /// The same records, each write fenced by `fence` (one task's download in a fleet).
    package func fenced(by fence: RecordFence) -> SessionRecords {
        SessionRecords(store: store, files: files, fence: fence, finals: finals, unsaved: unsaved)
    }

    /// Keeps a finished download's final record for ``takeFinal(destinationPath:)``, which the session writes in the
    /// transaction that concludes the task: one write less per download. Should the process die before that, the
    /// first record stays, naming a partial file that is gone and a destination of its whole length, which a rerun
    /// recognises as complete (``DownloadJob/isMovedIntoPlace(_:)``); so only a record of a known length waits.
    package func deferFinal(_ record: TransferRecord) -> Bool {
        guard record.state == .finished, record.totalLength != nil, !record.adopted else { return false }
        let text = record.jsonText
        finals.withLockedValue { $0[record.key] = text }
        return true
    }

    /// The final record kept for `destinationPath`, if any, for the task's conclusion to write.
    package func takeFinal(destinationPath: String) -> StoredRecord? {
        let key = TransferRecord.key(destinationPath: destinationPath)
        unsaved.withLockedValue { _ = $0.removeValue(forKey: key) }
        return finals.withLockedValue { $0.removeValue(forKey: key) }.map { StoredRecord(key: key, value: $0) }
    }

    /// The store's record, else a record file left for the destination (read, not taken: see ``claim(_:)``).
    package func load(_ key: String) throws(HaulError) -> TransferRecord? {
        if let record = try stored(key) { return record }
        return try files.load(key)
    }

    /// Takes a record file left for the destination (a `haul get` the task continues) into the store. Only the
    /// download holding the destination's lock calls it, so no `haul get` is writing that file meanwhile.
    package func claim(_ key: String) throws(HaulError) -> TransferRecord? {
        if let record = try stored(key) { return record }
        guard let carried = try files.load(key) else { return nil }
        try save(carried, durable: true)
        files.remove(key)
        return carried
    }

    private func stored(_ key: String) throws(HaulError) -> TransferRecord? {
        let text: String?
        do {
            text = try store.record(key: key)
        } catch {
            throw Self.storeError(error)
        }
        guard let text else { return nil }
        do {
            return try JSONDecoder().decode(TransferRecord.self, from: Data(text.utf8))
        } catch {
            throw HaulError(.fileSystem, "the resume state of a download in \(store.location) is damaged; remove the task and add it again")
        }
    }

    package func save(_ record: TransferRecord, durable: Bool) throws(HaulError) {
        try write(StoredRecord(key: record.key, value: record.jsonText), choice: nil)
    }

    /// The record and a `--dir` download's chosen name in one transaction of the store.
    package func saveFirst(_ record: TransferRecord, choice: (any DirectoryChoice)?) throws(HaulError) {
        guard let stored = choice as? StoredChoice, stored.records.store === store else {
            choice?.remember(record.destinationPath)
            return try save(record, durable: false)
        }
        try write(
            StoredRecord(key: record.key, value: record.jsonText), choice: StoredRecord(key: stored.key, value: record.destinationPath))
    }

    /// Saves a record. In a fleet, one that cannot be saved because the store is out of reach is kept and saved when
    /// it is back (``saveUnsaved()``), and the download goes on: the store's record then lags the durable bytes, so a
    /// resume from it is only longer, never wrong; the lease (by its deadline) bounds how long.
    private func write(_ record: StoredRecord, choice: StoredRecord?) throws(HaulError) {
        do {
            try store.save(record, choice: choice, fence: fence)
            unsaved.withLockedValue { _ = $0.removeValue(forKey: record.key) }
        } catch SessionStoreError.unavailable(let message) {
            guard let fence else { throw SessionStoreError.unavailable(message).haulError }
            unsaved.withLockedValue { $0[record.key] = (record, choice, fence) }
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Saves the records kept while the store was out of reach (each still fenced by its lease); those of a lease
    /// lost meanwhile are dropped. Stops at the first that cannot be saved yet.
    package func saveUnsaved() {
        let waiting = unsaved.withLockedValue { $0 }
        for (key, entry) in waiting {
            do {
                try store.save(entry.record, choice: entry.choice, fence: entry.fence)
            } catch SessionStoreError.unavailable {
                return
            } catch {
                // Fenced off (another node has the task) or refused: this record is no one's to save now.
            }
            unsaved.withLockedValue { unsaved in
                if unsaved[key]?.record == entry.record { unsaved[key] = nil }
            }
        }
    }

    /// Whether records wait to be saved (a fleet whose store was out of reach).
    package var hasUnsaved: Bool { unsaved.withLockedValue { !$0.isEmpty } }

    /// Reads the records of another process's session store, over one connection kept open (for tests that look
    /// again and again while a download runs): nothing is migrated or written.
    package final class Reader: @unchecked Sendable {
        private let queue: DatabaseQueue
        private let path: String
        private let inode: UInt64

        /// `nil` when there is no store at `path`.
        package init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
            self.queue = queue
            self.path = path
            self.inode = UInt64(info.st_ino)
        }

        /// Whether the file at the path is still the one this reader has open.
        package var isCurrent: Bool {
            var info = stat()
            return stat(path, &info) == 0 && UInt64(info.st_ino) == inode
        }

        /// Every record, as JSON text; none when the store has no records table yet.
        package func recordTexts() throws -> [String] {
            try queue.read { db in
                // Opened maybe before the store made its tables: GRDB would otherwise keep saying there are none.
                db.clearSchemaCache()
                guard try db.tableExists("transfer") else { return [] }
                return try String.fetchAll(db, sql: "SELECT record FROM transfer ORDER BY key")
            }
        }
    }

    package func remove(_ key: String) {
        finals.withLockedValue { _ = $0.removeValue(forKey: key) }
        unsaved.withLockedValue { _ = $0.removeValue(forKey: key) }
        try? store.removeRecord(key: key)
        files.remove(key)
    }

    package func lock(_ key: String, what: String) throws(HaulError) -> FileLock {
        try files.lock(key, what: what)
    }

    package func choice(url: URL, directory: String) throws(HaulError) -> any DirectoryChoice {
        let key = TransferRecord.directoryKey(url: url, directory: directory)
        return StoredChoice(records: self, key: key, chosen: chosen(key) ?? files.chosenDestination(key))
    }

    package func chosenDestination(url: URL, directory: String) -> String? {
        let key = TransferRecord.directoryKey(url: url, directory: directory)
        return chosen(key) ?? files.chosenDestination(key)
    }

    private func chosen(_ key: String) -> String? {
        (try? store.choice(key: key)).flatMap { $0 }
    }

    fileprivate func setChoice(_ key: String, _ path: String?) {
        try? store.setChoice(key: key, path: path)
    }

    private static func storeError(_ error: any Error) -> HaulError {
        if let error = error as? HaulError { return error }
        if let error = error as? SessionStoreError { return error.haulError }
        return HaulError(.fileSystem, "the session store could not be used: \(error)")
    }
}

/// A `--dir` download's choice kept in the session's store. It takes no lock of its own: the session runs a task once
/// at a time, and another process downloading the same URL into the same folder either meets the destination's lock
/// (busy) or, once this one's partial file exists, chooses another free name: never the same partial file.
private final class StoredChoice: DirectoryChoice {
    let records: SessionRecords
    let key: String
    let chosen: String?

    init(records: SessionRecords, key: String, chosen: String?) {
        self.records = records
        self.key = key
        self.chosen = chosen
    }

    func remember(_ path: String) { records.setChoice(key, path) }
    func forget() { records.setChoice(key, nil) }
    func release() {}
}
