import Foundation

extension DownloadJob {
    /// Picks the destination (for `--dir`, from the response) and creates the partial file.
    func openDestination(finalURL: URL, headers: HTTPFields) async throws {
        guard let folder else { throw HaulError(.fileSystem, "the destination's folder is not open") }
        if let record {
            // The record's partial file was not there when the record was read: anything at its name now is not
            // the bytes it counts.
            if file == nil { file = try folder.createFresh(Self.name(record.partialPath)) }
            return
        }
        for _ in 0..<3 {
            let destination: String
            switch options.destination {
            case .file(let path):
                destination = path
            case .standardOutput:
                throw HaulError(.usage, "standard output is written by a streaming download, not a resumable one")
            case .directory(let directory):
                let name = FileNaming.suggestedName(contentDisposition: headers["content-disposition"], finalURL: finalURL)
                let (free, lock) = try reserveName(name, in: folder, directory: directory)
                destination = "\(directory)/\(free)"
                locks.append(lock)
            }
            let partial = destination + ".haul-part"
            var fresh = TransferRecord(
                url: options.url.absoluteString, finalURL: finalURL.absoluteString, destinationPath: destination,
                partialPath: partial, offset: 0, state: .running, adopted: false)
            // What the response said of the file (length, validators) is kept from the start: a file that then
            // arrives in one go needs no other record to be recognised complete on a rerun.
            fresh.update(from: ResumePoint(offset: 0, validators: point.validators, totalLength: point.totalLength))
            // The record first: a partial file never exists without a record that names it. A `--dir` download's
            // name is remembered before that, so that a rerun after kill -9 finds the same name. Both on the
            // blocking-I/O threads: a session's store may be busy (a WAL checkpoint's fsync) and must not hold a
            // concurrency thread.
            let store = self.store, choice = directoryChoice, saved = fresh
            try await BlockingIO.run { try store.saveFirst(saved, choice: choice) }
            record = fresh
            guard case .directory = options.destination else {
                // The destination's lock is held and no record names this partial file: whatever is at its name
                // (a stale partial of another program or run, a planted link) is foreign. Start from empty.
                file = try folder.createFresh(Self.name(partial))
                return
            }
            do {
                // The name was free under its lock; only a program that takes no lock of this home's can have made
                // it since.
                let created = try folder.openFile(Self.name(partial), exclusive: true)
                // Such as a download of another HAUL_HOME (another user's, the daemon of another account) that
                // published this very name between the checks and the create: its partial file is gone then, so
                // the create succeeds. With the partial file held, no such download can publish the name any more.
                guard folder.status(Self.name(destination)) != nil else {
                    file = created
                    return
                }
                if let ours = try? created.status(), folder.status(Self.name(partial))?.isSameFile(as: ours) == true {
                    folder.unlink(Self.name(partial))
                }
                created.close()
            } catch {
                // Something was at the partial file's name: still there, or already published under the name.
                guard folder.status(Self.name(partial)) != nil || folder.status(Self.name(destination)) != nil else { throw error }
            }
            // The name is taken after all: give it up, and choose again.
            store.remove(fresh.key)
            record = nil
            locks.removeLast().release()
        }
        throw HaulError(.fileSystem, "another program keeps creating files in \(folder.path) under the names Haul chooses; stop it or choose another folder")
    }

    /// Reserves a free name for `name` in `folder` (`name`, else `name (1)`, …): neither the file nor its partial
    /// file exists, and this process holds the name's destination lock, so no other download (of this process or
    /// another) takes it until the lock is released.
    private func reserveName(_ name: String, in folder: OpenDirectory, directory: String) throws(HaulError) -> (String, FileLock) {
        var reserved: FileLock?
        var failure: HaulError?
        let store = self.store
        let free = FileNaming.freeName(for: name) { candidate in
            guard failure == nil else { return false }
            // The partial file first: a download that publishes between the two looks moves its partial file to
            // the name, and is then seen there. The other order misses a partial file renamed in between.
            let isUsed = { folder.status(candidate + ".haul-part") != nil || folder.status(candidate) != nil }
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
        try hashHeldBytes()
        try await saveRecordNow()
    }

    /// The bytes another URL left are shown to be this URL's representation: the download is this URL's now.
    func ownVerifiedBytes() async throws {
        guard var record else { return }
        record.url = options.url.absoluteString
        record.finalURL = requestURL.absoluteString
        self.record = record
        try await saveRecordNow()
    }

    /// Forgets the bytes held: they belong to another version of the resource.
    func discardHeldBytes() async throws {
        machine.heldBytesDiscarded()
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
        var fresh = Checksummer(algorithm)
        try file.forEachChunk(upTo: point.offset) { chunk in chunk.withUnsafeBytes { fresh.update($0) } }
        hasher = fresh
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
