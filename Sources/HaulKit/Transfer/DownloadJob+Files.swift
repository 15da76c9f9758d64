import Foundation

extension DownloadJob {
    /// Picks the destination (for `--dir`, from the response) and creates the partial file.
    func openDestination(finalURL: URL, headers: HTTPFields) async throws {
        guard let folder else { throw HaulError(.fileSystem, "the destination's folder is not open") }
        if let record {
            // The record's partial file was not there when the record was read: anything at its name now is not
            // the bytes it counts.
            if file == nil { file = try folder.createFresh(Self.name(record.partialPath), savingAs: record.destinationPath) }
            return
        }
        let url = options.url.absoluteString, final = finalURL.absoluteString, point = self.point
        // What the response said of the file (length, validators) is kept from the start: a file that then arrives
        // in one go needs no other record to be recognised complete on a rerun.
        let fresh = { @Sendable (destination: String) -> TransferRecord in
            var fresh = TransferRecord(
                url: url, finalURL: final, destinationPath: destination, partialPath: PartialFileName.of(destination), offset: 0,
                state: .running, adopted: false)
            fresh.update(from: ResumePoint(offset: 0, validators: point.validators, totalLength: point.totalLength))
            return fresh
        }
        // The record first: a partial file never exists without a record that names it. A `--dir` download's name is
        // remembered before that, so that a rerun after kill -9 finds the same name. All of it on the blocking-I/O
        // threads, in one call: a session's store may be busy (a WAL checkpoint's fsync), and creating a file waits
        // for the folder's lock and the file system, none of which may hold a concurrency thread.
        let store = self.store
        switch options.destination {
        case .standardOutput:
            throw HaulError(.usage, "standard output is written by a streaming download, not a resumable one")
        case .file(let path):
            let planned = fresh(path)
            let created = try await BlockingIO.run { () throws(HaulError) -> FreshPartial in
                var saved = planned
                // Another user's file at the partial file's name (a download of theirs into a folder both may write)
                // is theirs: left alone, and this download's bytes go to a name of this user's own.
                if let found = folder.status(Self.name(saved.partialPath)), !found.isOwnedByThisUser {
                    saved.partialPath = PartialFileName.of(path, user: geteuid())
                }
                try Self.refuseUnknownBytes(at: saved.partialPath, in: folder)
                try store.saveFirst(saved, choice: nil)
                // The destination's lock is held and no record names this partial file: whatever is still at its name
                // (a planted link, an empty file: nothing only that name keeps) is foreign. Start from empty.
                let partial = Self.name(saved.partialPath)
                do throws(HaulError) {
                    return FreshPartial(record: saved, file: try folder.createFresh(partial, savingAs: saved.destinationPath), failure: nil)
                } catch where error.kind == .busy {
                    // A download of another home writes that file: this one has no bytes, and keeps no record.
                    store.remove(saved.key)
                    return FreshPartial(record: nil, file: nil, failure: error)
                } catch {
                    return FreshPartial(record: saved, file: nil, failure: error)
                }
            }
            record = created.record
            if let failure = created.failure { throw failure }
            file = created.file
        case .directory(let directory):
            // Named by the server (Content-Disposition), else by the URL given, not the one a redirect led to: as
            // wget, wget2 and curl -O -L name it, and as -nc, -N and -c name the file before any request (so that
            // they find the file a plain run saved).
            let name = FileNaming.suggestedName(contentDisposition: headers["content-disposition"], url: options.url)
            let choice = directoryChoice
            let reserved = engine.configuration.isReservedPath
            for _ in 0..<3 {
                let claim = try await BlockingIO.run { () throws(HaulError) -> NameClaim in
                    let (free, lock) = try Self.reserveName(name, in: folder, directory: directory, store: store, reserved: reserved)
                    return try Self.claim(fresh("\(directory)/\(free)"), lock: lock, in: folder, store: store, choice: choice)
                }
                switch claim {
                case .created(let lock, let saved, let created):
                    locks.append(lock)
                    record = saved
                    file = created
                    return
                case .failed(let error, let lock, let saved):
                    locks.append(lock)
                    record = saved
                    throw error
                case .taken:
                    continue
                }
            }
            throw HaulError(.fileSystem, "another program keeps creating files in \(folder.path) under the names Haul chooses; stop it or choose another folder")
        }
    }

    /// No record of this download names its partial file `partialPath`, yet a file of this user's with bytes is at
    /// that name: another download's unfinished file (of another HAUL_HOME, the daemon's, an older Haul whose record
    /// is gone) or a file someone named so. Neither is removed without a word: refused, unless a download writes it
    /// now (``OpenDirectory/createFresh(_:)`` then says so). An empty file, a link, a name of a file with others, or
    /// another kind of file holds no bytes that only this name keeps, and is replaced as before. Checked before the
    /// first request, and again when the file is made.
    static func refuseUnknownBytes(at partialPath: String, in folder: OpenDirectory) throws(HaulError) {
        let name = Self.name(partialPath)
        guard let found = folder.status(name), found.isRegular, found.isOwnedByThisUser, found.size > 0, found.linkCount == 1,
              !folder.isInUse(name) else { return }
        throw HaulError(.usage, PartialFileName.unknownFile(partialPath), reason: .unknownPartialFile(partialPath: partialPath))
    }

    /// A `-o` download's record, saved, and its partial file created (or why not).
    private struct FreshPartial: Sendable {
        var record: TransferRecord?
        var file: PartialFile?
        var failure: HaulError?
    }

    /// What one try at a `--dir` download's free name came to.
    private enum NameClaim: Sendable {
        /// Its record saved and its partial file created, under the name's lock.
        case created(FileLock, TransferRecord, PartialFile)
        /// Creating the partial file failed for another reason than the name: the record saved, the lock held.
        case failed(HaulError, FileLock, TransferRecord)
        /// The name was taken after all (the record removed, the lock released): choose again.
        case taken
    }

    /// Saves `fresh`, the record of a free name whose `lock` is held, and creates its partial file. Throws (the lock
    /// released) when the record could not be saved.
    private static func claim(
        _ fresh: TransferRecord, lock: FileLock, in folder: OpenDirectory, store: any ResumeRecords, choice: (any DirectoryChoice)?
    ) throws(HaulError) -> NameClaim {
        do throws(HaulError) {
            try store.saveFirst(fresh, choice: choice)
        } catch {
            lock.release()
            throw error
        }
        let partial = name(fresh.partialPath), destination = name(fresh.destinationPath)
        do {
            // The name was free under its lock; only a program that takes no lock of this home's can have made it
            // since.
            let created = try folder.openFile(partial, exclusive: true, savingAs: fresh.destinationPath)
            // Such as a download of another HAUL_HOME (another user's, the daemon of another account) that published
            // this very name between the checks and the create: its partial file is gone then, so the create
            // succeeds. With the partial file held, no such download can publish the name any more.
            guard folder.status(destination) != nil else { return .created(lock, fresh, created) }
            if let ours = try? created.status(), folder.status(partial)?.isSameFile(as: ours) == true {
                folder.unlink(partial)
            }
            created.close()
        } catch {
            // Something was at the partial file's name: still there, or already published under the name.
            guard folder.status(partial) != nil || folder.status(destination) != nil else { return .failed(error, lock, fresh) }
        }
        // The name is taken after all: give it up, and choose again.
        store.remove(fresh.key)
        lock.release()
        return .taken
    }

    /// Reserves a free name for `name` in `folder` (`name`, else `name (1)`, …): neither the file nor its partial
    /// file exists, no other download of the session names it as its file (`reserved`), and this process holds the
    /// name's destination lock, so no other download (of this process or another) takes it until the lock is
    /// released.
    private static func reserveName(
        _ name: String, in folder: OpenDirectory, directory: String, store: any ResumeRecords,
        reserved isReservedPath: (@Sendable (String) -> Bool)?
    ) throws(HaulError) -> (String, FileLock) {
        var reserved: FileLock?
        var failure: HaulError?
        let free = FileNaming.freeName(for: name) { candidate in
            guard failure == nil else { return false }
            if isReservedPath?("\(directory)/\(candidate)") == true { return true }
            // The partial file first: a download that publishes between the two looks moves its partial file to
            // the name, and is then seen there. The other order misses a partial file renamed in between.
            let isUsed = { folder.status(PartialFileName.of(candidate)) != nil || folder.status(candidate) != nil }
            if isUsed() { return true }
            let key = TransferRecord.key(destinationPath: "\(directory)/\(candidate)")
            do throws(HaulError) {
                let lock = try store.lock(key, what: "\(directory)/\(candidate)")
                // Under the lock: another download may have created either just before it let go.
                if isUsed() {
                    lock.release()
                    return true
                }
                reserved = lock
                return false
            } catch where error.kind == .busy {
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        guard let free, let reserved else { throw HaulError(.fileSystem, "no free file name for \(name) in \(directory)") }
        return (free, reserved)
    }

    /// The bytes of the file given to `--continue` at `path` match the server's: move it to the partial path and own
    /// it from now on. The open descriptor goes on: it is the file checked, whatever happens to the names (the
    /// publish checks them again).
    func adoptVerifiedFile(_ path: String) async throws {
        guard var record, let folder else { return }
        guard try folder.rename(Self.name(path), to: Self.name(record.partialPath), replacing: true) == .moved else {
            throw POSIX.error("moving the download to", record.partialPath, errno: ENOENT)
        }
        record.adopted = false
        self.record = record
        // Haul's own partial file from now on: private until it is published, as one it created.
        file?.setMode(DownloadFileMode.partial)
        try hashHeldBytes()
        try await saveRecordNow()
    }

    /// Gives the file the user gave to `--continue` back as it was: cut back to the length it had when adopted, at its
    /// own name again (left at the partial file's name when something took its name meanwhile). The clause saying
    /// where the user's bytes are; `nil` when the file is not the one adopted any more (nothing was done).
    func giveBackAdoptedBytes(_ record: TransferRecord) -> String? {
        guard let length = record.adoptedLength, let file, let folder else { return nil }
        let held = machine.held.adoptedPath ?? (record.adopted ? record.destinationPath : record.partialPath)
        let outcome = folder.giveBack(file, named: Self.name(held), length: length, as: Self.name(record.destinationPath))
        return outcome.said(path: record.destinationPath, length: length)
    }

    /// The bytes another URL left are shown to be this URL's representation: the download is this URL's now.
    func ownVerifiedBytes() async throws {
        guard var record else { return }
        record.url = options.url.absoluteString
        record.finalURL = requestURL.absoluteString
        self.record = record
        try await saveRecordNow()
    }

    /// Forgets the bytes held: they belong to another version of the resource. When they began as a file given to
    /// `--continue`, that file is the user's: it is given back as it was (``giveBackAdoptedBytes(_:)``), and the
    /// download stops, saying so, rather than truncating the user's bytes away.
    func discardHeldBytes() async throws {
        if let record, record.adoptedLength != nil {
            let said = giveBackAdoptedBytes(record)
            file?.close()
            file = nil
            store.remove(record.key)
            self.record = nil
            let path = record.destinationPath
            throw HaulError(.server, "the server no longer continues \(path) (another version of the file, or an answer without byte ranges), so the bytes given to --continue are not part of this download; "
                + (said ?? "the file given to --continue was left as it is"),
                reason: .differsFromServer(path: path))
        }
        machine.heldBytesDiscarded()
        boundaryChecks = BoundaryChecks()
        record?.segments = nil
        point = ResumePoint()
        try file?.truncate(to: 0)
        hasher = options.checksum.map { Checksummer($0.algorithm) }
        if record != nil { try await saveRecordNow() }
    }

    func saveRecordNow() async throws {
        guard var record else { return }
        record.update(from: point)
        record.state = .running
        self.record = record
        // A record that claims no bytes needs no fsync: losing it loses nothing.
        try await checkpointer.checkpointNow(record, file: file, durable: record.offset > 0)
    }

    /// Brings the running checksum up to `point.offset` by hashing the bytes held once.
    func hashHeldBytes() throws {
        guard let algorithm = hasher?.algorithm, hasher?.hashedLength != point.offset, let file else { return }
        hasher = try Checksummer.hashing(file, upTo: point.offset, algorithm)
    }

    func announceStart() {
        guard !announcedStart, let record else { return }
        announcedStart = true
        events(.started(url: Redaction.url(options.url), path: record.destinationPath, resumedFrom: point.offset, total: point.totalLength))
    }

    func emitProgress() {
        let now = clock.now
        meter.record(bytes: point.offset, at: now - startTime)
        events(.progress(DownloadProgress(
            bytes: point.offset, total: point.totalLength,
            bytesPerSecond: meter.bytesPerSecond, secondsRemaining: meter.secondsRemaining(total: point.totalLength))))
    }

    /// The bytes held at the destination were written for `other` and this URL does not serve them.
    func foreignMismatch(_ other: String, _ why: String) -> HaulError {
        let partial = record?.partialPath ?? "the partial file"
        return HaulError(.usage, "\(partial) holds a partial download of another URL, \(Redaction.url(other)), which this URL does not continue (\(why)); it was left unchanged",
                         reason: .partialOfAnotherURL(partialPath: partial, url: Redaction.url(other)))
    }

    func mismatch(_ path: String, _ why: String) -> HaulError {
        HaulError(.server, "\(path) does not match the file on the server (\(why)); it was left unchanged", reason: .differsFromServer(path: path))
    }
}
