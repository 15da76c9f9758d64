import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

extension DownloadJob {
    /// One attempt, as the machine says it begins: the check of bytes held, the segments, or one request
    /// (following redirects) whose usable body is written to the partial file.
    func attempt() async throws -> AttemptOutcome {
        switch machine.attemptStarts(point) {
        case .checkHeldRuns(_, let checks):
            try await holdConnection()
            switch machine.heldRunsChecked(matching: try await heldRunsMatch(checks)) {
            case .runSegments(let plan, let owning):
                if owning { try await ownVerifiedBytes() }
                return try await runSegments(plan, first: nil)
            case .foreignBytesDiffer(let url):
                throw foreignMismatch(url, "its bytes differ from this URL's")
            case .discardHeldBytes:
                try await discardHeldBytes()
                return .restart(.overlapMismatch)
            }
        case .runSegments(let plan):
            try await holdConnection()
            return try await runSegments(plan, first: nil)
        case .checkHeldPrefix(let check):
            switch try await continueHeldPrefixWithSegments(check) {
            case .ran(let outcome): return outcome
            case .oneConnection(let request): return try await fetch(request)
            }
        case .request(let request):
            return try await fetch(request)
        }
    }

    /// Sends `request` and does the step the machine gives for its answer.
    func fetch(_ request: DownloadMachine.Request) async throws -> AttemptOutcome {
        if let reason = request.singleConnection { events(.singleConnection(reason: reason)) }
        if !request.http2 { try await holdConnection() }
        let asked = requestURL
        var (response, url) = try await sender.send(request.plan, to: asked, multiplexed: request.http2)
        engine.noteReachable(host)
        if response.isHTTP2 {
            // The host speaks HTTP/2: this download and the others waiting to be streams need no connection of their own.
            engine.connections.markMultiplexed(host, by: connectionID)
            let head = RequestSender.head(response)
            let claimed = ResumePolicy.claimedLength(status: head.status, headers: head.headers)
            if machine.http2Answered(claimedLength: claimed) == .resendOverHTTP1 {
                // A large file: a connection of its own carries it faster than a stream (and it may be split). The
                // stream is dropped (cancelled) and the same request goes over HTTP/1.1.
                logger.debug("\(Redaction.url(url)) is \(claimed ?? 0) bytes: over HTTP/1.1 instead of HTTP/2")
                try await holdConnection()
                (response, url) = try await sender.send(request.plan, to: url)
            }
        }
        httpVersion = response.isHTTP2 ? "HTTP/2" : "HTTP/1.1"
        requestURL = url
        let head = RequestSender.head(response)
        let decision = ResumePolicy.decide(plan: request.plan, point: point, response: head)
        let step = machine.responseHead(decision, to: request, point: point, fileOpen: file != nil)
        logger.debug("\(head.status) from \(Redaction.url(url)) over \(httpVersion ?? "HTTP/1.1"): \(RequestSender.summary(head.headers)) -> \(step)")
        switch step {
        case .redirectNotFollowed(let location):
            throw HaulError(.httpStatus, "\(url) redirected to \(location), which could not be followed")
        case .retry(let status, let retryAfter):
            throw TransientFailure.status(status, response.status.reasonPhrase, from: url, retryAfter: retryAfter)
        case .refused(let status):
            return .refused(status: status, phrase: response.status.reasonPhrase, url: url)
        case .protocolViolation(let why):
            throw TransientFailure(reason: "\(url): \(why)", kind: .server)
        case .impossibleLength(let claimed):
            throw HaulError.impossibleLength(claimed)
        case .complete(let recordEmptyFile):
            if recordEmptyFile {
                try await openDestination(finalURL: url, headers: head.headers)
                point = ResumePoint(offset: 0, validators: Validators(headers: head.headers), totalLength: 0)
                try await saveRecordNow()
            }
            return .complete
        case .adoptedFileDiffers(let why):
            throw mismatch(machine.held.adoptedPath ?? "", why)
        case .adoptedFileLonger(let length, let held):
            // Not the server's fault (exit 7): the file was never this download's, as a file already at the
            // destination is not (exit 2). Nothing is called complete that holds bytes the server does not have.
            let path = machine.held.adoptedPath ?? ""
            throw HaulError(.usage, "\(path) is longer than the file on the server (\(held) bytes vs \(length)), so it is not a partial copy of this download; it was left unchanged",
                            reason: .longerThanServerFile(path: path, length: held, serverLength: length))
        case .adoptedFileUncheckable:
            let path = machine.held.adoptedPath ?? ""
            throw HaulError(.server, "\(path) cannot be checked against the server: it does not support byte ranges (it sent the whole file); it was left unchanged", reason: .cannotVerifyWithoutRanges(path: path))
        case .foreignBytesDiffer(let why):
            throw foreignMismatch(machine.held.foreignURL ?? "", why)
        case .restart(let reason):
            try await discardHeldBytes()
            return .restart(reason)
        case .writeWhole(let info, _, true) where asked != options.url && (info.totalLength != point.totalLength || info.validators != point.validators):
            // A URL Haul was led to (not the one given) sent another file than the one held: bytes held are never
            // replaced on its word. The URL given is asked again, as a new download would be (its redirects may set
            // what that URL needs, or lead elsewhere).
            requestURL = options.url
            throw TransientFailure(reason: "\(Redaction.url(url)) sent another file than the one being downloaded; asking \(Redaction.url(options.url)) again", kind: .server)
        case .writeWhole(let info, let announceSingleConnection, let replacingHeldBytes):
            if announceSingleConnection { reportSingleConnection(info: info, rangeSupported: false) }
            if replacingHeldBytes {
                // Bytes that began as the user's --continue file are given back, never truncated away.
                if record?.adoptedLength != nil { try await discardHeldBytes() }
                events(.restarted(reason: "the server sent the whole file instead of the rest"))
            }
            let recordExisted = record != nil
            point = ResumePoint(offset: 0, validators: info.validators, totalLength: info.totalLength)
            try await openDestination(finalURL: url, headers: head.headers)
            try file?.truncate(to: 0)
            hasher = options.checksum.map { Checksummer($0.algorithm) }
            // A record made just now by openDestination already says all this (offset 0, this answer's validators
            // and length, this URL): saved once, not twice (in a batch of tiny answers, a store write per file).
            if recordExisted {
                record?.finalURL = url.absoluteString
                try await saveRecordNow()
            }
            // Nothing held to compare: the whole body is written.
            _ = try await stream(response.body, overlap: 0)
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
                switch machine.overlapDiffers() {
                case .adoptedFileDiffers(let path): throw mismatch(path, "its last bytes differ from the server's")
                case .foreignBytesDiffer(let other): throw foreignMismatch(other, "its last bytes differ from this URL's")
                case .discardHeldBytes:
                    try await discardHeldBytes()
                    return .restart(.overlapMismatch)
                }
            }
            // `bytes a-b/*`: the file is not over until the server says so (a 416 at the next byte, or a length).
            machine.appended(totalKnown: info.totalLength != nil)
            if info.totalLength == nil { return .incomplete }
        }
        if let total = point.totalLength { return point.offset >= total ? .complete : .incomplete }
        return .complete
    }

    /// Makes sure this download holds a connection of its own to its host (over HTTP/1.1), waiting for one if need
    /// be: it may have started as an HTTP/2 stream, which holds none.
    func holdConnection() async throws {
        guard !engine.connections.holds(connectionID, host: host) else { return }
        let host = self.host, events = self.events
        try await engine.connections.first(connectionID, host: host, allowing: options.maxConnectionsPerHost) {
            events(.waitingForConnection(host: host))
        }
    }

    /// Writes the body at `point.offset`, after checking that its first `overlap` bytes equal the bytes held (and
    /// telling the machine once they do). Returns `false` (writing nothing) when they differ, or when the body
    /// ends before they all came.
    private func stream(_ body: ResponseBody, overlap: Int64) async throws -> Bool {
        guard let opened = file else { throw HaulError(.fileSystem, "no partial file is open") }
        let held = overlap > 0 ? try opened.read(count: Int(overlap), at: point.offset - overlap) : []
        guard held.count == Int(overlap) else { return false }
        var repeated = OverlapPrefix(expected: held)
        if machine.held.adoptedPath == nil { try hashHeldBytes() }
        announceStart()
        do {
            for try await buffer in body {
                // Not the file opened above: adopting a verified file given to --continue reopens it under another name.
                guard let file else { throw HaulError(.fileSystem, "no partial file is open") }
                var mismatch = false
                var written = 0
                var matchedNow = false
                try buffer.withUnsafeReadableBytes { (raw) throws(HaulError) in
                    let owed = !repeated.isComplete
                    guard let taken = repeated.take(raw) else {
                        mismatch = true
                        return
                    }
                    matchedNow = owed && repeated.isComplete
                    let bytes = UnsafeRawBufferPointer(rebasing: raw[taken...])
                    guard !bytes.isEmpty else { return }
                    try options.leaseGate?.check()
                    try file.write(bytes, at: point.offset)
                    hasher?.update(bytes)
                    point.offset += Int64(bytes.count)
                    written = bytes.count
                }
                if mismatch { return false }
                if matchedNow { try await overlapMatched() }
                if written > 0 { try await afterWrite(written) }
            }
        } catch let error as HaulError {
            throw error
        } catch {
            throw try DownloadJob.classify(error, url: requestURL)
        }
        return repeated.isComplete
    }

    /// The body's first bytes equal the last ones held: a file given to `--continue` becomes the partial file,
    /// another URL's bytes become this URL's.
    private func overlapMatched() async throws {
        switch machine.overlapMatched() {
        case .carryOn: break
        case .adopt(let path): try await adoptVerifiedFile(path)
        case .own: try await ownVerifiedBytes()
        }
    }

    /// Rate limiting, progress and checkpoints after `count` bytes were written.
    private func afterWrite(_ count: Int) async throws {
        if let pause = rateLimiter?.consume(count), pause > .zero { try await Task.sleep(for: pause) }
        switch machine.bodyPart(count: Int64(count), held: point.offset, elapsed: clock.now - startTime) {
        case .none:
            break
        case .reportProgress:
            emitProgress()
        case .checkpoint:
            emitProgress()
            guard var record, let file else { return }
            record.update(from: point)
            self.record = record
            try await checkpointer.checkpointUnlessBusy(record, file: file)
        }
    }

    /// Asks for the last bytes of every stretch a restored segmented download holds (`checks`) and compares them.
    /// `false` when any differs, or when the server no longer answers ranges so they cannot be checked.
    private func heldRunsMatch(_ checks: [DownloadMachine.HeldCheck]) async throws -> Bool {
        guard let file else { return false }
        for check in checks {
            let (response, url) = try await sender.send(check.plan, to: requestURL, readAhead: SegmentedDownload.readAhead)
            let head = RequestSender.head(response)
            let held = ResumePoint(offset: check.end, validators: point.validators, totalLength: point.totalLength)
            let decision = ResumePolicy.decide(plan: check.plan, point: held, response: head)
            logger.debug("\(head.status) from \(Redaction.url(url)): \(RequestSender.summary(head.headers)) -> checking held bytes: \(decision)")
            switch RangeAnswer.classify(decision, validators: point.validators) {
            case .range(let info, let overlap):
                guard try await body(response.body, from: url, equals: file, at: check.plan.start, count: overlap) else { return false }
                point.validators = info.validators
            case .changed, .rangesIgnored, .inconsistent:
                return false
            case .retry(let status, let retryAfter):
                throw TransientFailure.status(status, response.status.reasonPhrase, from: url, retryAfter: retryAfter)
            case .refused(let status):
                throw HaulError(.httpStatus, "\(Redaction.url(url)) answered \(status) \(response.status.reasonPhrase)",
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
}
