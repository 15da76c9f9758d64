import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Resume records as small JSON files under `HAUL_HOME/transfers/`, each replaced atomically
/// (write, fsync, rename, fsync the folder), so a crash leaves either the old or the new record.
package struct TransferRecordStore: Sendable {
    public let directory: String
    let home: String
    /// Whether `directory` was made (private) by this store already: a batch of thousands of files need not
    /// check its folders again for each record and lock.
    private let directoryMade = NIOLockedValueBox(false)

    public init(home: HaulHome) {
        directory = home.transfersPath
        self.home = home.path
    }

    /// Runs `body`, which creates a file in `directory`, after making the folder the first time; should the folder
    /// have gone away since (a person removed `HAUL_HOME` meanwhile), it is made again and `body` runs once more.
    private func inDirectory<T>(_ body: () throws(HaulError) -> T) throws(HaulError) -> T {
        if !directoryMade.withLockedValue({ $0 }) {
            try POSIX.makePrivateDirectories(directory, root: home)
            directoryMade.withLockedValue { $0 = true }
        }
        do {
            return try body()
        } catch {
            guard !POSIX.isDirectory(directory) else { throw error }
            try POSIX.makePrivateDirectories(directory, root: home)
            return try body()
        }
    }

    func recordPath(_ key: String) -> String { "\(directory)/\(key).json" }

    public func load(_ key: String) throws(HaulError) -> TransferRecord? {
        let path = recordPath(key)
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(TransferRecord.self, from: data)
        } catch {
            throw HaulError(.fileSystem, "the resume state \(path) is damaged; delete it to start this download again")
        }
    }

    /// Replaces the record atomically and durably; `durable: false` writes it in place without fsyncs, for records
    /// whose loss costs nothing: one that only names a new partial file (offset 0), or the final one (a complete
    /// destination is recognised anyway).
    public func save(_ record: TransferRecord, durable: Bool) throws(HaulError) {
        try save(record, key: record.key, durable: durable)
    }

    func save(_ record: TransferRecord, key: String, durable: Bool = true) throws(HaulError) {
        let path = recordPath(key)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes: [UInt8]
        do { bytes = Array(try encoder.encode(record)) } catch { throw HaulError(.fileSystem, "could not encode the resume state: \(error)") }
        try inDirectory { () throws(HaulError) in
            if durable {
                try replacePrivateFile(path, with: bytes)
            } else {
                try overwritePrivateFile(path, with: bytes)
            }
        }
    }

    /// For a record whose loss costs nothing: written over the old one in place, with no new file and no rename
    /// (in a batch of small files, creating, renaming and freeing two files per download costs more than the
    /// download). Padded with spaces, which JSON ignores, to the old length: the file is never a shorter record
    /// followed by the old one's tail. A crash may leave it unreadable, as an unsynced replacement could be empty.
    private func overwritePrivateFile(_ path: String, with bytes: [UInt8]) throws(HaulError) {
        let file = try PartialFile(path: path, create: true, private: true)
        defer { file.close() }
        var padded = bytes
        let old = try file.size()
        if old > Int64(padded.count) { padded += repeatElement(UInt8(ascii: " "), count: Int(old) - padded.count) }
        try file.write(padded, at: 0)
    }

    /// Writes `bytes` to `path + ".tmp"` (0600), fsyncs it, renames it over `path` and fsyncs the folder.
    private func replacePrivateFile(_ path: String, with bytes: [UInt8]) throws(HaulError) {
        let temporary = path + ".tmp"
        let file = try PartialFile(path: temporary, create: true, private: true)
        defer { file.close() }
        try file.truncate(to: 0)
        try file.write(bytes, at: 0)
        try file.sync()
        try POSIX.rename(temporary, path)
        POSIX.syncDirectory(directory)
    }

    public func remove(_ key: String) {
        POSIX.unlink(recordPath(key))
    }

    /// Takes the per-destination lock so that two downloads never write the same partial file; released on exit
    /// or crash. `what` names the destination in the error. It is `key`'s byte in the one file `transfers/locks`
    /// (``FileLock/init(key:among:busy:)``): no file per download.
    package func lock(_ key: String, what: String) throws(HaulError) -> FileLock {
        let locksPath = self.locksPath
        // Read before trying: while trying, this process holds the name itself.
        let here = FileLock.isHeldHere(key: key, among: locksPath)
        return try inDirectory { () throws(HaulError) in
            try FileLock(key: key, among: locksPath, busy: Self.busy(
                here ? "another download of this process" : "another haul process", "is already downloading to \(what)"))
        }
    }

    /// `who` (this process's other download, or another process) holds a lock: one line for the person.
    static func busy(_ who: String, _ what: String) -> HaulError {
        HaulError(.busy, "\(who) \(what); wait for it or stop it first", reason: .busy)
    }

    /// The file holding the destinations' locks.
    package var locksPath: String { directory + "/locks" }

    /// Takes the lock file `transfers/KEY.lock`, whose note remembers the name a `--dir` download chose.
    func noteLock(_ key: String, what: String) throws(HaulError) -> FileLock {
        let path = "\(directory)/\(key).lock"
        let here = FileLock.isHeldHere(among: path)
        return try inDirectory { () throws(HaulError) in
            try FileLock(path: path, busy: Self.busy(
                here ? "another download of this process" : "another haul process", "is already downloading \(what)"))
        }
    }

    /// The destination a `--dir` download chose earlier: the note in its lock (``TransferRecord/directoryKey(url:directory:)``).
    func chosenDestination(_ key: String) -> String? {
        guard let path = FileLock.note(at: "\(directory)/\(key).lock"), path.hasPrefix("/") else { return nil }
        return path
    }

}
