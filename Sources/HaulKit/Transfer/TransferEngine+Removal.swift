import Foundation

// What removing or cancelling a task does with its files: only what the download itself wrote goes, and only while
// its name still holds that very file (the records keep which file that is: ``TransferRecord/fileID``). A file the
// user gave to `--continue` is given back, never deleted.
extension TransferEngine {
    /// Deletes what a download left behind: its resume record, and its partial file when the name still holds the
    /// file the download wrote (another file put at that name is foreign, and stays). A file given to `--continue`
    /// is given back instead: cut back to the length it had and put back at its own name. Not a finished file.
    /// What was kept or given back is said, for the task `id`; `nil` when there is nothing to say.
    @discardableResult
    public func discardPartialData(_ options: DownloadOptions, id: String = "") -> RemovedFile? {
        guard let path = destinationPath(options) else { return nil }
        let key = TransferRecord.key(destinationPath: path)
        guard let record = try? store.load(key) else {
            // No record: whatever has the partial file's name is nothing Haul knows it wrote.
            guard case .file = options.destination else { return nil }
            let partial = PartialFileName.of(path)
            return keep(partial, .notWrittenByHaul, partial: true, id: id, below: options.confinedTo)
        }
        // Another URL's download of the same destination: not this task's to discard.
        guard record.url == options.url.absoluteString else { return nil }
        defer { store.remove(key) }
        guard record.state != .finished else { return nil }
        // An adopted file not yet shown to be the server's is still at the destination itself.
        let held = record.adopted ? record.destinationPath : record.partialPath
        guard let folder = try? OpenDirectory.open(POSIX.directoryOf(held), create: false, below: options.confinedTo) else { return nil }
        defer { folder.close() }
        let name = POSIX.nameOf(held)
        if let length = record.adoptedLength {
            let outcome = folder.giveBack(named: name, identity: record.fileID, length: length, as: POSIX.nameOf(record.destinationPath))
            guard let outcome else { return nil }
            if let said = outcome.said(path: record.destinationPath, length: length) {
                return RemovedFile(id: id, path: record.destinationPath, outcome: .givenBack,
                                   message: "gave back the file given to --continue: \(said)")
            }
            return RemovedFile(id: id, path: held, outcome: .kept, message: "kept \(held): it is no longer the file given to --continue")
        }
        switch FileRemoval.decide(written: record.fileID, found: Self.found(name, in: folder)) {
        case .nothingThere: return nil
        case .keep(let reason): return Self.kept(held, reason, partial: true, id: id)
        case .delete:
            // A download of another home writing it now (it holds its lock) keeps it.
            try? folder.removeUnlessInUse(name)
            return nil
        }
    }

    /// With `haul rm --delete-file`: deletes the finished file at `path` when it is the very file the download of
    /// `options` published there (its record says which); anything else at that name stays (a file `-nc` or `-N`
    /// kept, a file saved there later, a file reached through a folder swapped for a link). Says what was done.
    public func deleteFinishedFile(at path: String, _ options: DownloadOptions, id: String) -> RemovedFile? {
        let record = try? store.load(TransferRecord.key(destinationPath: path))
        let written = record.flatMap { $0.state == .finished && $0.url == options.url.absoluteString ? $0.fileID : nil }
        let folder: OpenDirectory
        do {
            folder = try OpenDirectory.open(POSIX.directoryOf(path), create: false, below: options.confinedTo)
        } catch {
            guard POSIX.exists(POSIX.directoryOf(path)) else { return nil }
            return RemovedFile(id: id, path: path, outcome: .kept, message: "kept \(path): \(error.message)")
        }
        defer { folder.close() }
        let name = POSIX.nameOf(path)
        switch FileRemoval.decide(written: written, found: Self.found(name, in: folder)) {
        case .nothingThere: return nil
        case .keep(let reason): return Self.kept(path, reason, partial: false, id: id)
        case .delete:
            do {
                try folder.removeUnlessInUse(name)
            } catch {
                return RemovedFile(id: id, path: path, outcome: .kept, message: "kept \(path): \(error.message)")
            }
            folder.sync()
            return RemovedFile(id: id, path: path, outcome: .deleted, message: "deleted \(path)")
        }
    }

    private func keep(_ path: String, _ reason: FileRemoval.Reason, partial: Bool, id: String, below root: String?) -> RemovedFile? {
        guard let folder = try? OpenDirectory.open(POSIX.directoryOf(path), create: false, below: root) else { return nil }
        defer { folder.close() }
        guard folder.status(POSIX.nameOf(path)) != nil else { return nil }
        return Self.kept(path, reason, partial: partial, id: id)
    }

    /// What `name` in `folder` holds now, as ``FileRemoval`` judges it (not following a link).
    private static func found(_ name: String, in folder: OpenDirectory) -> FileRemoval.Found? {
        folder.statusAndIdentity(name).map { FileRemoval.Found(identity: $0.identity, isRegular: $0.status.isRegular) }
    }

    /// The line saying why `path` stays.
    static func kept(_ path: String, _ reason: FileRemoval.Reason, partial: Bool, id: String) -> RemovedFile {
        let why: String
        switch reason {
        case .notWrittenByHaul: why = partial ? "haul has no record of writing it" : "haul did not write it"
        case .replaced: why = partial ? "it is no longer the partial file haul wrote" : "it is no longer the file haul saved"
        case .notAFile: why = "it is not a regular file"
        }
        return RemovedFile(id: id, path: path, outcome: .kept, message: "kept \(path): \(why)")
    }
}
