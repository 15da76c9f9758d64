import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

extension DownloadJob {
    /// One request (following redirects) and, when the response is usable, its body written to the partial file.
    func attempt() async throws -> AttemptOutcome {
        if let segmentPlan {
            if heldBytesUnverified {
                guard try await heldBytesMatch(segmentPlan) else {
                    if let foreignURL { throw foreignMismatch(foreignURL, "its bytes differ from this URL's") }
                    try await discardHeldBytes()
                    return .restart(.overlapMismatch)
                }
                heldBytesUnverified = false
                try await ownVerifiedBytes()
            }
            return try await runSegments(segmentPlan, first: nil)
        }
        if point.offset > 0, let outcome = try await continueHeldPrefixWithSegments() { return outcome }
        if point.offset > 0, segmentPlan == nil, (options.segments ?? 1) > 1, !reportedSingleConnection {
            reportedSingleConnection = true
            events(.singleConnection(reason: "the rest after the bytes held is too small to split, or the server's answer does not allow it"))
        }
        let probe = lifecycle.mayProbeRanges && options.segments != 1 && point.offset == 0 && adoptedPath == nil
        if !lifecycle.mayProbeRanges, point.offset == 0, options.segments != 1, !reportedSingleConnection {
            reportedSingleConnection = true
            events(.singleConnection(reason: "the server's answers to range requests were inconsistent"))
        }
        let plan = ResumePolicy.plan(for: point, probeRanges: probe, verifyOverlap: foreignURL != nil, heldFromThisAnswer: heldFromUnknownTotal)
        let (response, url) = try await sender.send(plan, to: requestURL)
        requestURL = url
        let head = RequestSender.head(response)
        let decision = ResumePolicy.decide(plan: plan, point: point, response: head)
        var context = ResponseHeadStep.Context()
        context.adopted = adoptedPath != nil
        context.foreign = foreignURL != nil
        context.probing = probe
        context.fileOpen = file != nil
        context.held = point.offset
        context.heldValidators = point.validators
        context.rangesTrusted = lifecycle.mayProbeRanges
        context.segments = options.segments
        context.minSegmentSize = options.minSegmentSize
        context.maxConnectionsPerHost = options.maxConnectionsPerHost
        let step = ResponseHeadStep.decide(decision, context)
        logger.debug("\(head.status) from \(Redaction.url(url)): \(RequestSender.summary(head.headers)) -> \(step)")
        switch step {
        case .redirectNotFollowed(let location):
            throw HaulError(.httpStatus, "\(url) redirected to \(location), which could not be followed")
        case .retry(let status, let retryAfter):
            throw TransientFailure.status(status, response.status.reasonPhrase, from: url, retryAfter: retryAfter)
        case .refused(let status):
            return .refused(status: status, phrase: response.status.reasonPhrase, url: url)
        case .protocolViolation(let why):
            throw TransientFailure(reason: "\(url): \(why)", kind: .server)
        case .complete(let recordEmptyFile):
            if recordEmptyFile {
                try await openDestination(finalURL: url, headers: head.headers)
                point = ResumePoint(offset: 0, validators: Validators(headers: head.headers), totalLength: 0)
                try await saveRecordNow()
            }
            return .complete
        case .adoptedFileDiffers(let why):
            throw mismatch(adoptedPath ?? "", why)
        case .adoptedFileUncheckable:
            let path = adoptedPath ?? ""
            throw HaulError(.server, "\(path) cannot be checked against the server: it does not support byte ranges (it sent the whole file); it was left unchanged", reason: .cannotVerifyWithoutRanges(path: path))
        case .foreignBytesDiffer(let why):
            throw foreignMismatch(foreignURL ?? "", why)
        case .restart(let reason):
            try await discardHeldBytes()
            return .restart(reason)
        case .writeWhole(let info, let announceSingleConnection, let replacingHeldBytes):
            if announceSingleConnection { reportSingleConnection(info: info, rangeSupported: false) }
            if replacingHeldBytes {
                events(.restarted(reason: "the server sent the whole file instead of the rest"))
            }
            heldFromUnknownTotal = false
            try await openDestination(finalURL: url, headers: head.headers)
            point = ResumePoint(offset: 0, validators: info.validators, totalLength: info.totalLength)
            try file?.truncate(to: 0)
            hasher = options.checksum.map { Checksummer($0.algorithm) }
            record?.finalURL = url.absoluteString
            try await saveRecordNow()
            guard try await stream(response.body, overlap: 0) else { return .restart(.overlapMismatch) }
        case .append(let info, let overlap, let connections):
            point.validators = info.validators
            point.totalLength = info.totalLength
            record?.finalURL = url.absoluteString
            if file == nil { try await openDestination(finalURL: url, headers: head.headers) }
            switch connections {
            case .segmented(let parts)?:
                return try await startSegments(parts: parts, probeBody: response.body)
            case .single(let reason?)?:
                events(.singleConnection(reason: reason))
            case .single(nil)?, nil:
                break
            }
            guard try await stream(response.body, overlap: overlap) else {
                if let adoptedPath { throw mismatch(adoptedPath, "its last bytes differ from the server's") }
                if let foreignURL { throw foreignMismatch(foreignURL, "its last bytes differ from this URL's") }
                try await discardHeldBytes()
                return .restart(.overlapMismatch)
            }
            // `bytes a-b/*`: the file is not over until the server says so (a 416 at the next byte, or a length).
            heldFromUnknownTotal = info.totalLength == nil
            if info.totalLength == nil { return .incomplete }
        }
        if let total = point.totalLength { return point.offset >= total ? .complete : .incomplete }
        return .complete
    }

    /// Writes the body at `point.offset`, after checking that its first `overlap` bytes equal the bytes held.
    /// Returns `false` (writing nothing) when they differ.
    private func stream(_ body: ResponseBody, overlap: Int64) async throws -> Bool {
        guard let opened = file else { throw HaulError(.fileSystem, "no partial file is open") }
        let held = overlap > 0 ? try opened.read(count: Int(overlap), at: point.offset - overlap) : []
        guard held.count == Int(overlap) else { return false }
        var overlapLeft = held.count
        if adoptedPath == nil { try hashHeldBytes() }
        announceStart()
        do {
            for try await buffer in body {
                // Not the file opened above: adopting a verified foreign partial reopens it under another name.
                guard let file else { throw HaulError(.fileSystem, "no partial file is open") }
                var mismatch = false
                var written = 0
                try buffer.withUnsafeReadableBytes { (raw) throws(HaulError) in
                    var bytes = raw
                    if overlapLeft > 0 {
                        let count = min(overlapLeft, raw.count)
                        let start = held.count - overlapLeft
                        mismatch = !held[start..<(start + count)].elementsEqual(raw.prefix(count))
                        overlapLeft -= count
                        bytes = UnsafeRawBufferPointer(rebasing: raw[count...])
                    }
                    guard !mismatch, !bytes.isEmpty else { return }
                    try options.leaseGate?.check()
                    try file.write(bytes, at: point.offset)
                    hasher?.update(bytes)
                    point.offset += Int64(bytes.count)
                    written = bytes.count
                }
                if mismatch { return false }
                if overlapLeft == 0, let adoptedPath { try await adoptVerifiedFile(adoptedPath) }
                if overlapLeft == 0, foreignURL != nil { try await ownVerifiedBytes() }
                if written > 0 { try await afterWrite(written) }
            }
        } catch let error as HaulError {
            throw error
        } catch {
            throw try DownloadJob.classify(error, url: requestURL)
        }
        return overlapLeft == 0
    }

    /// Rate limiting, progress and checkpoints after `count` bytes were written.
    private func afterWrite(_ count: Int) async throws {
        if let pause = rateLimiter?.consume(count), pause > .zero { try await Task.sleep(for: pause) }
        switch lifecycle.handle(.bodyPart(count: Int64(count), held: point.offset, elapsed: clock.now - startTime)) {
        case .reportProgress:
            emitProgress()
        case .checkpoint:
            emitProgress()
            guard var record, let file else { return }
            record.update(from: point)
            self.record = record
            try await checkpointer.checkpointUnlessBusy(record, file: file)
        default:
            break
        }
    }

    /// Picks the destination (for `--dir`, from the response) and creates the partial file.
    private func openDestination(finalURL: URL, headers: HTTPFields) async throws {
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
                // The name was free under its lock; only a program that takes no lock can have made it since.
                file = try folder.openFile(Self.name(partial), exclusive: true)
                return
            } catch {
                guard folder.status(Self.name(partial)) != nil else { throw error }
                store.remove(fresh.key)
                record = nil
                locks.removeLast().release()
            }
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
            let isUsed = { folder.status(candidate) != nil || folder.status(candidate + ".haul-part") != nil }
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

    /// The adopted file's bytes match the server's: move it to the partial path and own it from now on. The open
    /// descriptor goes on: it is the file checked, whatever happens to the names (the publish checks them again).
    func adoptVerifiedFile(_ path: String) async throws {
        guard var record, let folder else { return }
        _ = try folder.rename(Self.name(path), to: Self.name(record.partialPath), replacing: true)
        adoptedPath = nil
        record.adopted = false
        self.record = record
        try hashHeldBytes()
        try await saveRecordNow()
    }

    /// The bytes another URL left are shown to be this URL's representation: the download is this URL's now.
    func ownVerifiedBytes() async throws {
        guard foreignURL != nil, var record else { return }
        foreignURL = nil
        record.url = options.url.absoluteString
        record.finalURL = requestURL.absoluteString
        self.record = record
        try await saveRecordNow()
    }

    /// Checks the last bytes of every stretch a restored segmented download holds against the server.
    /// `false` when any differs, or when the server no longer answers ranges so they cannot be checked.
    private func heldBytesMatch(_ plan: SegmentPlan) async throws -> Bool {
        guard let file else { return false }
        for (check, end) in ResumePolicy.verificationPlans(for: plan.heldRuns, validators: point.validators) {
            let (response, url) = try await sender.send(check, to: requestURL, readAhead: SegmentedDownload.readAhead)
            let head = RequestSender.head(response)
            let held = ResumePoint(offset: end, validators: point.validators, totalLength: point.totalLength)
            let decision = ResumePolicy.decide(plan: check, point: held, response: head)
            logger.debug("\(head.status) from \(Redaction.url(url)): \(RequestSender.summary(head.headers)) -> checking held bytes: \(decision)")
            switch RangeAnswer.classify(decision, validators: point.validators) {
            case .range(let info, let overlap):
                guard try await body(response.body, from: url, equals: file, at: check.start, count: overlap) else { return false }
                point.validators = info.validators
            case .changed, .rangesIgnored, .inconsistent:
                return false
            case .retry(let status, let retryAfter):
                throw TransientFailure.status(status, response.status.reasonPhrase, from: url, retryAfter: retryAfter)
            case .refused(let status):
                throw HaulError(.httpStatus, "\(Redaction.url(url)) answered \(status) \(response.status.reasonPhrase); check the URL and any headers it needs",
                                reason: .httpStatus(status, url: Redaction.url(url)))
            case .unusable(let why):
                throw TransientFailure(reason: "\(Redaction.url(url)): unexpected answer while checking the bytes held (\(why))", kind: .server)
            }
        }
        return true
    }

    /// Whether the first `count` bytes of `body` equal the bytes held at `offset` of `file`.
    func body(_ body: ResponseBody, from url: URL, equals file: PartialFile, at offset: Int64, count: Int64) async throws -> Bool {
        let expected = try file.read(count: Int(count), at: offset)
        guard expected.count == Int(count) else { return false }
        var received: [UInt8] = []
        do {
            for try await chunk in body {
                received += chunk.readableBytesView
                if received.count >= expected.count { break }
            }
        } catch {
            throw try DownloadJob.classify(error, url: url)
        }
        return received.count >= expected.count && received.prefix(expected.count).elementsEqual(expected)
    }

    /// Forgets the bytes held: they belong to another version of the resource.
    func discardHeldBytes() async throws {
        if segmentPlan != nil {
            segmentPlan = nil
            record?.segments = nil
        }
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
    private func foreignMismatch(_ other: String, _ why: String) -> HaulError {
        let partial = record?.partialPath ?? "the partial file"
        return HaulError(.usage, "\(partial) holds a partial download of another URL, \(Redaction.url(other)), which this URL does not continue (\(why)); it was left unchanged",
                         reason: .partialOfAnotherURL(partialPath: partial, url: Redaction.url(other)))
    }

    private func mismatch(_ path: String, _ why: String) -> HaulError {
        HaulError(.server, "\(path) does not match the file on the server (\(why)); it was left unchanged", reason: .differsFromServer(path: path))
    }

}
