import Foundation

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

    public init(home: HaulHome) {
        directory = home.transfersPath
        self.home = home.path
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

    /// Replaces the record. `durable: false` skips the fsyncs, for records whose loss costs nothing: one that
    /// only names a new partial file (offset 0), or the final one (a complete destination is recognised anyway).
    public func save(_ record: TransferRecord, durable: Bool = true) throws(HaulError) {
        try save(record, key: record.key, durable: durable)
    }

    func save(_ record: TransferRecord, key: String, durable: Bool = true) throws(HaulError) {
        try POSIX.makePrivateDirectories(directory, root: home)
        let path = recordPath(key)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes: [UInt8]
        do { bytes = Array(try encoder.encode(record)) } catch { throw HaulError(.fileSystem, "could not encode the resume state: \(error)") }
        try replacePrivateFile(path, with: bytes, durable: durable)
    }

    /// Writes `bytes` to `path + ".tmp"` (0600), then renames it over `path`; with `durable`, fsyncs both.
    private func replacePrivateFile(_ path: String, with bytes: [UInt8], durable: Bool) throws(HaulError) {
        let temporary = path + ".tmp"
        let file = try PartialFile(path: temporary, create: true, private: true)
        defer { file.close() }
        try file.truncate(to: 0)
        do {
            try bytes.withUnsafeBytes { raw in try file.write(raw, at: 0) }
        } catch let error as HaulError {
            throw error
        } catch {
            throw HaulError(.fileSystem, "could not write \(temporary): \(error)")
        }
        if durable { try file.sync() }
        try POSIX.rename(temporary, path)
        if durable { POSIX.syncDirectory(directory) }
    }

    public func remove(_ key: String) {
        POSIX.unlink(recordPath(key))
    }

    /// Takes the per-destination lock so that two processes never write the same partial file; released on exit
    /// or crash. `what` names the destination in the error.
    func lock(_ key: String, what: String) throws(HaulError) -> FileLock {
        try POSIX.makePrivateDirectories(directory, root: home)
        return try FileLock(
            path: "\(directory)/\(key).lock",
            busy: HaulError(.busy, "another haul process is already downloading to \(what); wait for it or stop it first", reason: .busy))
    }

    /// The destination a `--dir` download chose earlier: the note in its lock (``TransferRecord/directoryKey(url:directory:)``).
    func chosenDestination(_ key: String) -> String? {
        guard let path = FileLock.note(at: "\(directory)/\(key).lock"), path.hasPrefix("/") else { return nil }
        return path
    }

}
