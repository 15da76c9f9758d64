import struct Foundation.URL

/// Where the resume records of an engine's downloads are kept: record files under `HAUL_HOME/transfers/`
/// (``TransferRecordStore``: `haul get`, and any engine without a session), or the session's own SQLite store
/// (``SessionRecords``), so that a session task's progress lives in one store.
///
/// Either way a record is keyed by its destination's path (``TransferRecord/key(destinationPath:)``), and each
/// destination has a lock (its byte of `transfers/locks`), which must hold across processes whatever store its record
/// is in.
package protocol ResumeRecords: Sendable {
    /// The record under `key`, `nil` when there is none; throws when it is unreadable. Reads only.
    func load(_ key: String) throws(HaulError) -> TransferRecord?
    /// The record under `key` for the download that holds the destination's lock: like ``load(_:)``, and a store
    /// that found it somewhere else (a session finding a `haul get` record file) makes it its own.
    func claim(_ key: String) throws(HaulError) -> TransferRecord?
    /// Saves the first record of a new partial file (offset 0, so not durably), after remembering a `--dir`
    /// download's chosen name in `choice`: a rerun after kill -9 finds the same name and its record.
    func saveFirst(_ record: TransferRecord, choice: (any DirectoryChoice)?) throws(HaulError)
    /// Replaces the record under its key atomically. `durable: false` is for a record whose loss costs nothing:
    /// one naming a new partial file (offset 0), or the final one (a complete destination is recognised anyway).
    func save(_ record: TransferRecord, durable: Bool) throws(HaulError)
    /// Keeps the final record of a finished download to be written later with something else (a session writes it
    /// with the task's conclusion, in one transaction); `false` when the caller is to save it now. Only a record
    /// whose loss a rerun repairs is kept: see ``SessionRecords/deferFinal(_:)``.
    func deferFinal(_ record: TransferRecord) -> Bool
    func remove(_ key: String)
    /// Takes the destination's lock (see ``TransferRecordStore/lock(_:what:)``); `what` names it in the error.
    func lock(_ key: String, what: String) throws(HaulError) -> FileLock
    /// Starts choosing the file name of a `--dir` download of `url` into `directory`: the name an earlier run
    /// chose, and where to remember the one this run chooses. Held until released.
    func choice(url: URL, directory: String) throws(HaulError) -> any DirectoryChoice
    /// The path a `--dir` download of `url` into `directory` chose earlier, if any.
    func chosenDestination(url: URL, directory: String) -> String?
}

extension ResumeRecords {
    func save(_ record: TransferRecord) throws(HaulError) { try save(record, durable: true) }

    package func claim(_ key: String) throws(HaulError) -> TransferRecord? { try load(key) }

    package func deferFinal(_ record: TransferRecord) -> Bool { false }

    package func saveFirst(_ record: TransferRecord, choice: (any DirectoryChoice)?) throws(HaulError) {
        choice?.remember(record.destinationPath)
        try save(record, durable: false)
    }
}

/// The name a `--dir` download chose, remembered so that a rerun after any interruption finds the same file.
package protocol DirectoryChoice: AnyObject, Sendable {
    /// The path chosen by an earlier run, if any.
    var chosen: String? { get }
    /// Remembers `path`, before the partial file exists.
    func remember(_ path: String)
    /// Forgets the earlier choice (its name belongs to another URL's download now).
    func forget()
    /// Lets go of the choice's lock, if it has one.
    func release()
}

/// A choice remembered in the note of its lock file (``TransferRecord/directoryKey(url:directory:)``), which also
/// keeps a second process from choosing a name for the same URL in the same folder meanwhile.
final class LockNoteChoice: DirectoryChoice {
    private let lock: FileLock
    let chosen: String?

    init(lock: FileLock, chosen: String?) {
        self.lock = lock
        self.chosen = chosen
    }

    func remember(_ path: String) { lock.setNote(path) }
    func forget() { lock.setNote("") }
    func release() { lock.release() }
}

extension TransferRecordStore: ResumeRecords {
    package func choice(url: URL, directory: String) throws(HaulError) -> any DirectoryChoice {
        let key = TransferRecord.directoryKey(url: url, directory: directory)
        let lock = try noteLock(key, what: "\(Redaction.url(url)) in \(directory)")
        return LockNoteChoice(lock: lock, chosen: chosenDestination(key))
    }

    package func chosenDestination(url: URL, directory: String) -> String? {
        chosenDestination(TransferRecord.directoryKey(url: url, directory: directory))
    }
}
