import AsyncHTTPClient
import Foundation

extension DownloadJob {
    /// Verifies the complete file, moves it into place by `publish` and records it finished.
    func finish(_ publish: DownloadMachine.Publish) async throws -> DownloadResult {
        guard var record, let file, let folder else { throw HaulError(.server, "the server never sent the file") }
        try await checkpointer.waitForPending()
        if point.totalLength == nil { point.totalLength = point.offset }
        // Exactly the resource's bytes: whatever lies past them (a stale tail no response wrote) goes before anything
        // is verified or published.
        try file.truncate(to: point.offset)
        if let expected = options.checksum {
            // Of the file as it will be published: the running digest covers exactly bytes 0..<offset, else they are read again.
            try hashHeldBytes()
            let actual = hasher?.hexDigest() ?? ""
            guard actual == expected.hex else {
                throw discardMismatch(record, "checksum mismatch for \(record.destinationPath): expected \(expected), got \(expected.algorithm.rawValue):\(actual)",
                                      reason: .checksumMismatch(path: record.destinationPath, expected: expected.description, actual: "\(expected.algorithm.rawValue):\(actual)", alreadyAtPath: false))
            }
        }
        if let digest = point.validators.digest {
            // The server's own digest of the whole file (RFC 9530): the bytes as published must have it.
            let length = point.offset
            let actual = try await BlockingIO.run { () throws(HaulError) in
                var hasher = Checksummer(digest.algorithm)
                try file.forEachChunk(upTo: length) { chunk in chunk.withUnsafeBytes { hasher.update($0) } }
                return hasher.hexDigest()
            }
            guard actual == digest.hex else {
                throw discardMismatch(record, "\(record.destinationPath) does not have the digest the server announced (\(digest.algorithm.rawValue) \(digest.hex.prefix(16))…, got \(actual.prefix(16))…)",
                                      reason: .checksumMismatch(path: record.destinationPath, expected: digest.description, actual: "\(digest.algorithm.rawValue):\(actual)", alreadyAtPath: false))
            }
        }
        // The file's date, its bytes, its check, its move into place and its folder's sync in one call off the
        // concurrency threads.
        let source = Self.name(publish.adoptedPath ?? record.partialPath), destination = Self.name(record.destinationPath)
        let remoteTime = options.keepsRemoteTime ? point.validators.lastModified : nil
        let replacing = options.overwrite || publish.replacesDestination || source == destination
        // In a fleet, a node that lost the task's lease must not move the file into place.
        let gate = options.leaseGate
        do {
            try await BlockingIO.run {
                let syncer = DirectorySyncer.shared
                syncer.willPublish(into: folder)
                do {
                    if remoteTime != nil { RemoteFileTime.apply(lastModified: remoteTime, to: file) }
                    try file.sync()
                    try gate?.check()
                    try Self.publish(file, from: source, to: destination, in: folder, replacing: replacing)
                } catch {
                    syncer.didNotPublish(into: folder)
                    throw error
                }
                syncer.syncPublished(folder)
            }
        } catch let error as HaulError where options.noClobber {
            guard case .appearedWhileDownloading = error.reason.which else { throw error }
            // wget's -nc: the name was taken while downloading, and what took it is kept; this download's bytes
            // (its own partial file, its record) go, and it ends as one that found the name taken.
            let store = self.store, key = record.key, path = record.destinationPath, fetched = machine.rules.fetched
            let kept = try await BlockingIO.run { () -> DownloadResult in
                if let ours = try? file.status(), folder.status(source)?.isSameFile(as: ours) == true { folder.unlink(source) }
                store.remove(key)
                // Looked up in the folder held, never by its path again.
                let size = folder.status(Self.name(path)).map { $0.isRegular ? $0.size : 0 }
                return DownloadResult.keptExisting(at: path, bytes: size, fetchedBytes: fetched)
            }
            events(.finished(kept))
            return kept
        }
        // A file given to --continue that held every byte already (the server's 416 said so): nothing was fetched,
        // and it is said as such (wget: "The file is already fully retrieved"), not as a file saved at 0 B/s.
        let wholeWhenAdopted = adoptedLength == point.offset
        record.update(from: point)
        record.state = .finished
        record.adopted = false
        record.adoptedLength = nil
        record.segments = nil
        self.record = record
        let store = self.store, finished = record
        if !store.deferFinal(finished) {
            try await BlockingIO.run { try store.save(finished, durable: false) }
        }
        emitProgress()
        var result = DownloadResult(path: record.destinationPath, bytes: point.offset, fetchedBytes: machine.rules.fetched, checksum: options.checksum, alreadyComplete: wholeWhenAdopted)
        result.httpVersion = httpVersion
        events(.finished(result))
        return result
    }

    /// Moves the file Haul wrote, open as `file` and named `source` in `folder`, to `destination`. Only that very
    /// file is published: should `source` now be anything else (moved away, a link or another file put in its
    /// place), nothing is moved and the intruder stays where it is. Without `replacing`, a file that appeared at
    /// `destination` meanwhile is never replaced.
    static func publish(_ file: PartialFile, from source: String, to destination: String, in folder: OpenDirectory, replacing: Bool) throws(HaulError) {
        let written = try file.status()
        guard let found = folder.status(source), found.isRegular, found.isSameFile(as: written) else {
            throw replaced(folder.pathOf(source))
        }
        guard source != destination else { return }
        let renamed: OpenDirectory.Renamed
        do {
            renamed = try folder.rename(source, to: destination, replacing: replacing)
        } catch {
            // Moved away between the check and the rename: not the file Haul wrote any more.
            guard folder.status(source)?.isSameFile(as: written) == true else { throw replaced(folder.pathOf(source)) }
            throw error
        }
        // Moved away between the check and the rename (even if it is back by now): what was checked is not what
        // would have moved.
        guard renamed != .sourceGone else { throw replaced(folder.pathOf(source)) }
        guard renamed == .moved else {
            // Not `destinationExists`: the file was not there when the download began, and it is not to be
            // continued; the next step (move it away, run again) is the front end's to say.
            let path = folder.pathOf(destination), kept = folder.pathOf(source)
            throw HaulError(.usage, "\(path) appeared while downloading and was left as it is; the download is kept in \(kept)",
                            reason: .appearedWhileDownloading(path: path, partialPath: kept))
        }
        // The name was checked, then renamed: should another program have swapped it in between, the file now at
        // the destination is not Haul's. Put it back where it was found and fail.
        guard folder.status(destination)?.isSameFile(as: written) == true else {
            _ = try? folder.rename(destination, to: source, replacing: false)
            throw replaced(folder.pathOf(source))
        }
        // The user's download now, with the mode curl and wget would have given it. Only now: until it is at its final
        // path, no other account could open it (0600), not even in the moment before the rename.
        file.setMode(DownloadFileMode.published)
    }

    private static func replaced(_ path: String) -> HaulError {
        HaulError(.fileSystem, "\(path) was replaced by another program while downloading (it is no longer the file Haul wrote), so nothing was published",
                  reason: .replacedWhileDownloading(path: path))
    }

    /// Discards a complete download whose bytes failed a check (`mismatch` says which): its partial file and record
    /// go; a file given to `--continue` is given back as it was (``giveBackAdoptedBytes(_:)``). The error says why,
    /// and where the user's bytes are.
    private func discardMismatch(_ record: TransferRecord, _ mismatch: String, reason: FailureReason) -> HaulError {
        let message: String
        if record.adoptedLength != nil {
            message = mismatch + "; the downloaded bytes were discarded, and " + (giveBackAdoptedBytes(record) ?? "the file given to --continue was left as it is")
        } else {
            message = mismatch + "; the download was discarded"
            if machine.held.adoptedPath == nil { folder?.unlink(Self.name(record.partialPath)) }
        }
        file?.close()
        file = nil
        store.remove(record.key)
        return HaulError(.checksum, message, reason: reason)
    }

    /// Saves what can be saved and turns any error into the one-line ``HaulError`` a person sees.
    func settle(_ error: any Error) async -> HaulError {
        let interrupted = Task.isCancelled || error is CancellationError || (error as? HTTPClientError) == .cancelled
        var failure: HaulError
        if interrupted {
            let held = point.offset
            let percent = point.totalLength.map { $0 > 0 ? " (\(held * 100 / $0)%)" : "" } ?? ""
            let total = point.totalLength.map { " of \(ByteFormat.string($0))" } ?? ""
            failure = HaulError(.interrupted, "paused at \(ByteFormat.string(held))\(total)\(percent)", reason: .interrupted)
        } else if let error = error as? HaulError {
            failure = error
        } else if let error = error as? TransientFailure {
            failure = HaulError(error.kind, error.reason)
        } else {
            failure = HaulError(.network, DownloadJob.describe(error))
        }
        // A file given to --continue and never shown to be the server's keeps no record: it is left as it was.
        guard failure.kind != .checksum, failure.kind != .busy, machine.held.adoptedPath == nil, var record, record.state != .finished else {
            return failure
        }
        if case .impossibleLength = failure.reason.which, point.offset == 0 {
            // The file system refused the length before a byte was written: no empty partial stays behind.
            file?.close()
            file = nil
            folder?.unlink(Self.name(record.partialPath))
            store.remove(record.key)
            return failure
        }
        record.update(from: point)
        record.state = interrupted ? .paused : .failed
        do {
            try await checkpointer.checkpointNow(record, file: file)
        } catch let unsaved {
            // Durability of the newest bytes could not be confirmed: keep the last good record, and say so (a rerun
            // resumes from it, not from where this run stopped).
            try? await checkpointer.waitForPending()
            if var last = try? store.load(record.key) {
                last.state = record.state
                try? store.save(last)
            }
            failure.message += "; the progress since the last save could not be recorded (\(DownloadJob.describe(unsaved))), so a rerun resumes from there"
        }
        return failure
    }
}
