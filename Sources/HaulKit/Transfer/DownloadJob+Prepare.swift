import Foundation

extension DownloadJob {
    /// What the run found before its first request.
    enum Prepared {
        /// The file is complete already.
        case complete(DownloadResult)
        /// What is held for the destination (`point` says how much); `replacesDestination`: the file found there is
        /// to be replaced by the finished download.
        case holding(DownloadMachine.Held, replacesDestination: Bool)
    }

    /// Finds the destination and what is held for it, or that the file is already complete.
    func prepare() throws -> Prepared {
        let destination: String
        switch options.destination {
        case .standardOutput:
            throw HaulError(.usage, "standard output is written by a streaming download, not a resumable one")
        case .file(let path):
            // Never a download's destination: the next download to that name would take it for its own bytes.
            if PartialFileName.isPartial(Self.name(path)) { throw HaulError(.usage, PartialFileName.refusal(destination: path)) }
            folderPath = POSIX.directoryOf(path)
            let folder = try engine.folders.acquire(folderPath, create: true, below: options.confinedTo)
            self.folder = folder
            if folder.status(Self.name(path))?.isDirectory == true {
                throw HaulError(.usage, "\(path) is a directory", reason: .destinationIsDirectory(path: path))
            }
            destination = path
        case .directory(let directory):
            folderPath = directory
            folder = try engine.folders.acquire(directory, create: true, below: options.confinedTo)
            let choice = try store.choice(url: options.url, directory: directory)
            directoryChoice = choice
            // The name is chosen from the first response, unless an earlier run chose it already (in this folder).
            guard let chosen = choice.chosen, POSIX.directoryOf(chosen) == directory else {
                return .holding(.none, replacesDestination: false)
            }
            destination = chosen
        }
        locks.append(try store.lock(TransferRecord.key(destinationPath: destination), what: destination))
        if var saved = try loadRecord(for: destination) {
            var foreignURL: String?
            if saved.url != options.url.absoluteString {
                if case .directory = options.destination {
                    // A stale note: that name belongs to another URL's download now. Choose a name afresh.
                    forgetChosenName()
                    return .holding(.none, replacesDestination: false)
                }
                guard case .continued(let other) = try takeOver(&saved) else { return try checkDestination(destination) }
                foreignURL = other
            }
            return try restore(saved, foreignURL: foreignURL)
        }
        if case .directory = options.destination {
            // A note without a record (its download was discarded: a checksum mismatch): choose a name afresh.
            forgetChosenName()
            return .holding(.none, replacesDestination: false)
        }
        return try checkDestination(destination)
    }

    /// Forgets the name a `--dir` download chose earlier, and lets go of that name's lock: the name chosen afresh
    /// from the first response takes its own lock, which would otherwise meet this one (the same name chosen
    /// again is locked by this very run, and was refused as "another haul process is already downloading").
    private func forgetChosenName() {
        directoryChoice?.forget()
        locks.popLast()?.release()
    }

    /// The record of `destination`, carrying over one saved under the key of an earlier version.
    private func loadRecord(for destination: String) throws -> TransferRecord? {
        if let saved = try store.claim(TransferRecord.key(destinationPath: destination)) { return saved }
        guard let legacy = TransferRecord.legacyKey(url: options.url, destination: options.destination),
              let old = try? store.load(legacy), old.destinationPath == destination else { return nil }
        try store.save(old)
        store.remove(legacy)
        return old
    }

    /// What becomes of another URL's record of the destination.
    private enum TakeOver {
        /// Set aside: the destination is treated as any existing file.
        case setAside
        /// Continued; `foreignURL` when it holds that URL's bytes, continued only once a response shows they are
        /// this URL's representation (a re-signed URL).
        case continued(foreignURL: String?)
    }

    /// Another URL's download owns `saved`. Its unfinished bytes may be continued when this URL serves the same
    /// representation (checked before anything is written).
    private func takeOver(_ saved: inout TransferRecord) throws -> TakeOver {
        guard saved.state != .finished, !saved.adopted, !isMovedIntoPlace(saved) else {
            // A finished file of another URL is not "already complete" for this one: the destination just exists.
            if options.overwrite { store.remove(saved.key) }
            return .setAside
        }
        if options.overwrite {
            // Unless a download of another home writes it now: that one's work is not discarded under it.
            try folder?.removeUnlessInUse(Self.name(saved.partialPath))
            store.remove(saved.key)
            return .setAside
        }
        saved.finalURL = nil
        if saved.offset > 0, heldPartialSize(saved) != nil { return .continued(foreignURL: saved.url) }
        saved.url = options.url.absoluteString
        return .continued(foreignURL: nil)
    }

    /// A record not marked finished whose partial file is gone and whose destination is a regular file of the
    /// record's whole length: the partial file was moved into place.
    func isMovedIntoPlace(_ saved: TransferRecord) -> Bool {
        guard saved.state != .finished, !saved.adopted, let total = saved.totalLength, status(saved.partialPath) == nil,
              let destination = theFile(at: saved.destinationPath, of: saved) else { return false }
        return destination.size == total
    }

    /// What is at `path` when it can be the file `saved` describes: a regular file of this user's, and the very file
    /// the record names when it names one (a rename keeps it; a file put in its place by anyone, or by another user's
    /// hand, is not it, whatever its size); `nil` otherwise. In a fleet, whose nodes may run as other users of other
    /// machines on shared storage, the record's file alone decides.
    func theFile(at path: String, of saved: TransferRecord) -> FileStatus? {
        guard let (found, identity) = folder?.statusAndIdentity(Self.name(path)), found.isRegular,
              found.isOwnedByThisUser || options.leaseGate != nil, saved.fileID.map({ $0 == identity }) ?? true else { return nil }
        return found
    }

    /// The size of the partial file `saved` holds bytes in, when the file at its name is that file and nobody else
    /// can change it; `nil` when there is none, or anything else (a link, a file another user put there or owns,
    /// another file in its place, a file with other names or that others may write, as an older Haul's partial made
    /// under a umask of 000): its bytes are then never continued, and the download starts that file afresh.
    func heldPartialSize(_ saved: TransferRecord) -> Int64? {
        guard let found = theFile(at: saved.partialPath, of: saved) else { return nil }
        // In a fleet the file is the node's that made it, whichever user that node runs as; this one continues it
        // only when it may write it (a partial file is its owner's alone: else the task starts again here).
        let fleetPeer = options.leaseGate != nil && !found.isOwnedByThisUser
        guard FileExposure.of(found.facts, user: fleetPeer ? found.owner : UInt32(geteuid()), group: UInt32(getegid())) == nil,
              !fleetPeer || folder?.mayWrite(Self.name(saved.partialPath)) == true else { return nil }
        return found.size
    }

    /// The last component of `path`: a file's name in its folder.
    static func name(_ path: String) -> String {
        POSIX.nameOf(path)
    }

    /// What is at `path` (a record's destination or partial file, always in the destination's folder), not
    /// following a link; `nil` when nothing is.
    func status(_ path: String) -> FileStatus? {
        folder?.status(Self.name(path))
    }

    /// Opens the file at `path` in the destination's folder (a regular file, never through a link).
    func openInFolder(_ path: String, writable: Bool = true) throws(HaulError) -> PartialFile {
        guard let folder else { throw HaulError(.fileSystem, "the folder of \(path) is not open") }
        return try folder.openFile(Self.name(path), writable: writable)
    }

    /// Opens this download's partial file at `path` to continue it, made private (``DownloadFileMode/partial``) should
    /// an older Haul have made it with the umask's mode.
    private func openPartial(_ path: String) throws(HaulError) -> PartialFile {
        let file = try openInFolder(path)
        file.setMode(DownloadFileMode.partial)
        return file
    }

    /// Continues a record of this destination (another URL's when `foreignURL`): segments, a single stretch of
    /// bytes, or a finished file.
    private func restore(_ found: TransferRecord, foreignURL foreignURLFound: String?) throws -> Prepared {
        var saved = found
        var foreignURL = foreignURLFound
        let held: DownloadMachine.Held
        if foreignURL == nil, isMovedIntoPlace(saved), let total = saved.totalLength {
            // Killed between moving the finished file into place and recording that: it is complete.
            saved.state = .finished
            saved.offset = total
            saved.segments = nil
            try store.save(saved)
        }
        if saved.state != .finished, !saved.adopted, !options.overwrite, !options.timestamping,
           saved.partialPath != saved.destinationPath, status(saved.destinationPath) != nil {
            // Something is at the destination, and the unfinished download is not to replace it: an earlier run with
            // --overwrite that was stopped, or a file that came since. Refused now, as a new download would be,
            // rather than after fetching the rest only to leave it beside the file. Its bytes and record stay.
            let path = saved.destinationPath, partial = saved.partialPath
            throw HaulError(.usage, "\(path) already exists, and this URL's unfinished download of it is kept in \(partial)",
                            reason: .unfinishedBesideExisting(path: path, partialPath: partial))
        }
        if saved.state == .finished {
            // With -N a finished file is compared with the server's (checkTimestamp), not taken as it is.
            let found = theFile(at: saved.destinationPath, of: saved)
            let isTheFinishedFile = found != nil
            if !options.overwrite, !options.timestamping, let found, saved.totalLength == nil || found.size == saved.totalLength {
                return .complete(try alreadyFinished(saved))
            }
            store.remove(saved.key)
            if case .directory = options.destination, !isTheFinishedFile {
                // The file this URL finished under the name was deleted, moved away or replaced by another: chosen
                // afresh like any other name (the same one, as curl, wget and aria2c would write, when it is free).
                forgetChosenName()
                return .holding(.none, replacesDestination: false)
            }
            return try checkDestination(saved.destinationPath)
        } else if let segments = saved.segments, let total = saved.totalLength,
                  let plan = SegmentPlan(restoring: segments, total: total, minSegmentSize: options.minSegmentSize),
                  heldPartialSize(saved) == total {
            file = try openPartial(saved.partialPath)
            point = ResumePoint(offset: plan.doneBytes, validators: saved.validators, totalLength: total)
            // Whatever the validators say (an ETag made of size and time survives an in-place rewrite): the bytes held
            // are compared with the server's before any segment continues.
            if plan.doneBytes > 0 {
                held = .segmented(plan, .unverified(foreignURL: foreignURL))
            } else {
                foreignURL = nil
                held = .segmented(plan, .verified)
            }
        } else {
            if let segments = saved.segments {
                // Segments that cannot be continued: keep only the bytes held without a gap from byte 0.
                saved.offset = SegmentPlan.contiguousPrefix(of: segments)
                saved.segments = nil
            }
            if let size = heldPartialSize(saved) {
                let file = try openPartial(saved.partialPath)
                self.file = file
                saved.offset = min(saved.offset, size)
                try file.truncate(to: saved.offset)
            } else {
                saved.offset = 0
            }
            point = saved.offset > 0 ? saved.resumePoint : ResumePoint()
            if saved.offset == 0 { foreignURL = nil }
            held = saved.offset == 0 ? .none : foreignURL.map { .foreign(url: $0) } ?? .own(unknownTotal: false)
        }
        if foreignURL == nil { saved.url = options.url.absoluteString }
        // From the URL given, not the final URL an earlier run reached: its redirects may set the cookies the file needs
        // (a download gate's, which are not kept between runs), and a redirect target may be good for one request or
        // expire. curl -C - -L, wget -c and aria2c -c do the same. The answer's validators decide what the bytes held are.
        requestURL = options.url
        record = saved
        return .holding(held, replacesDestination: false)
    }

    /// No download of this URL holds bytes for `path`: an existing file is refused, replaced (`--overwrite`) or
    /// adopted (`--continue`). A partial file a download of another home writes beside it is refused (`busy`).
    private func checkDestination(_ path: String) throws -> Prepared {
        if let folder, case .file = options.destination {
            for partial in [PartialFileName.of(path), PartialFileName.of(path, user: geteuid())] where folder.isInUse(Self.name(partial)) {
                throw HaulError(.busy, "another haul process is already downloading to \(path) (it writes \(partial)); wait for it or stop it first",
                                reason: .busy)
            }
            // The partial file this download would write (a name of this user's own beside another account's file).
            let othersFile = folder.status(Self.name(PartialFileName.of(path))).map { !$0.isOwnedByThisUser } ?? false
            try Self.refuseUnknownBytes(at: othersFile ? PartialFileName.of(path, user: geteuid()) : PartialFileName.of(path), in: folder)
        }
        guard let found = status(path) else { return .holding(.none, replacesDestination: false) }
        if options.continuePartial, found.size > 0 {
            let adopted = try openInFolder(path)
            file = adopted
            // The file another program wrote becomes the download: only when nobody but this user can change its
            // bytes from now on (what the descriptor opened says, not the name).
            let held = try adopted.status()
            if let exposure = held.exposure {
                adopted.close()
                file = nil
                throw HaulError(.usage, exposure.refusal(path))
            }
            let size = held.size
            point = ResumePoint(offset: size)
            adoptedLength = size
            record = TransferRecord(
                url: options.url.absoluteString, destinationPath: path, partialPath: PartialFileName.of(path),
                offset: size, state: .running, adopted: true)
            record?.adoptedLength = size
            // Not shown to be the server's bytes until the overlap of the first answer matches them.
            return .holding(.adopted(path: path), replacesDestination: false)
        } else if options.timestamping, !options.overwrite, !found.isRegular {
            // A link (or anything but a file) has no date of its own to compare: replacing it would drop the user's
            // link without being asked, and writing through it is what Haul never does. wget -N compares the file
            // it leads to and writes through it; Haul refuses, as without -N.
            throw HaulError(.usage, "\(path) already exists and is not a regular file (a link, or another kind), so its date is not compared with the server's",
                            reason: .destinationNotAFile(path: path))
        } else if !options.overwrite, !found.isRegular {
            throw Self.notAFile(path)
        } else if !options.overwrite, !options.timestamping, !(options.continuePartial && found.isRegular && found.size == 0) {
            throw HaulError(.usage, "\(path) already exists", reason: .destinationExists(path: path))
        }
        // Replaced once the download is complete: asked for (`--overwrite`), or an empty file given to
        // `--continue`, which holds nothing to check, so the download simply starts fresh.
        return .holding(.none, replacesDestination: true)
    }

    /// A link, or anything but a regular file, at `path`, which the download neither writes through nor continues.
    static func notAFile(_ path: String) -> HaulError {
        HaulError(.usage, "\(path) already exists and is not a regular file (a link, or another kind)", reason: .destinationNotAFile(path: path))
    }

    private func alreadyFinished(_ saved: TransferRecord) throws -> DownloadResult {
        let size = status(saved.destinationPath)?.size ?? 0
        if let expected = options.checksum {
            let file = try openInFolder(saved.destinationPath, writable: false)
            defer { file.close() }
            let actual = try Checksummer.hashing(file, upTo: size, expected.algorithm).hexDigest()
            guard actual == expected.hex else {
                throw HaulError(.checksum, "\(saved.destinationPath) exists but its \(expected.algorithm.rawValue) is \(actual), expected \(expected.hex)",
                                reason: .checksumMismatch(path: saved.destinationPath, expected: expected.description, actual: "\(expected.algorithm.rawValue):\(actual)", alreadyAtPath: true))
            }
        }
        let result = DownloadResult(path: saved.destinationPath, bytes: size, fetchedBytes: 0, checksum: options.checksum, alreadyComplete: true)
        events(.finished(result))
        return result
    }

}
