import AsyncHTTPClient
import Foundation
import Logging
import NIOCore

/// A transient failure: the next attempt may succeed.
struct TransientFailure: Error {
    /// Shown in `retrying` events: any URL's userinfo is masked.
    var reason: String
    var kind: HaulError.Kind = .network
    var retryAfter: Duration?
    /// No connection was made at all (refused, unknown host): most likely a typo, worth saying at once.
    var beforeConnecting = false

    init(reason: String, kind: HaulError.Kind = .network, retryAfter: Duration? = nil) {
        self.reason = Redaction.text(reason)
        self.kind = kind
        self.retryAfter = retryAfter
    }

    /// The failure as the lifecycle sees it.
    var lifecycleFailure: DownloadLifecycle.Failure {
        DownloadLifecycle.Failure(reason: reason, kind: kind, retryAfter: retryAfter, beforeConnecting: beforeConnecting)
    }

    /// A 408, 429 or 5xx answer, honouring its `Retry-After`.
    static func status(_ status: Int, _ phrase: String, from url: URL, retryAfter: String?) -> TransientFailure {
        let wait = retryAfter.flatMap { RetryPolicy.parseRetryAfter($0, now: Int64(Date().timeIntervalSince1970)) }
        return TransientFailure(reason: "\(url) answered \(status) \(phrase)", kind: .httpStatus, retryAfter: wait)
    }
}

/// One run of one download: the imperative shell around ``ResumePolicy``. Owned by a single task.
final class DownloadJob {
    enum AttemptOutcome {
        case complete
        case incomplete
        case restart(RestartReason)
        /// The server refused the request with `status` at `url`.
        case refused(status: Int, phrase: String, url: URL)
    }

    let engine: TransferEngine
    let options: DownloadOptions
    let events: @Sendable (DownloadEvent) -> Void
    let store: any ResumeRecords
    let checkpointer: Checkpointer
    let clock = ContinuousClock()
    let startTime: ContinuousClock.Instant
    let logger: Logger
    let sender: RequestSender

    /// The durable state; `nil` until the destination is known. Its key is the destination's path.
    var record: TransferRecord?
    /// What is held: bytes `0..<point.offset` of `file` belong to the version `point.validators` describe.
    var point = ResumePoint()
    var file: PartialFile?
    /// The destination's folder, held open for the whole run: every file of the download is created, checked,
    /// renamed and synced relative to it (``OpenDirectory``).
    var folder: OpenDirectory?
    /// A file Haul did not write, adopted with `--continue`, not yet shown to match the server's bytes.
    var adoptedPath: String?
    /// The URL whose download left the bytes held at this destination, when it is not `options.url`. They are
    /// continued only once a response shows they are the same representation (a re-signed URL), else refused.
    var foreignURL: String?
    /// Bytes of a restored segmented download not yet compared with the server's in this run: checked before any
    /// segment continues.
    var heldBytesUnverified = false
    var hasher: Checksummer?
    /// Set while the download is segmented: which ranges are written.
    var segmentPlan: SegmentPlan?
    /// Retries, restarts and bookkeeping across the attempts of this run.
    var lifecycle: DownloadLifecycle
    /// Who this download is in the engine's sharing of `host`'s connections.
    let connectionID: Int
    let host: String
    var reportedSingleConnection = false
    /// Continuing a held stretch over several connections is tried once per run.
    var triedHeldPrefixSegments = false
    /// The bytes held were received in this run from an answer whose complete length was `*`.
    var heldFromUnknownTotal = false
    var requestURL: URL
    var announcedStart = false
    var meter = ProgressMeter()
    /// The session's shared limit, else this download's own (as a segmented download's coordinator does).
    let rateLimiter: RateLimiter?
    /// The destination's lock, held for the whole run.
    var locks: [FileLock] = []
    /// The file found at the destination is to be replaced by the finished download (only what was there when
    /// the run began: a file that appears meanwhile is never replaced).
    var replacesDestination = false
    /// For `--dir`: this URL's name choice in that folder, which remembers the name chosen (held for the whole run).
    var directoryChoice: (any DirectoryChoice)?

    init(engine: TransferEngine, options: DownloadOptions, events: @escaping @Sendable (DownloadEvent) -> Void) {
        self.engine = engine
        self.options = options
        self.events = events
        self.store = options.records ?? engine.store
        self.checkpointer = Checkpointer(store: options.records ?? engine.store)
        self.connectionID = engine.connections.makeID()
        self.host = options.url.host?.lowercased() ?? ""
        // Its configuration; the run's machine, which starts from the bytes held, is made when the transfer begins.
        self.lifecycle = DownloadLifecycle(DownloadLifecycle.Configuration(
            retry: options.retry, failFastBeforeData: options.failFastBeforeData,
            progressInterval: options.progressInterval, checkpointBytes: options.checkpointBytes,
            checkpointInterval: options.checkpointInterval))
        self.requestURL = options.url
        self.startTime = clock.now
        self.logger = engine.configuration.logger
        self.sender = RequestSender(engine: engine, options: options)
        self.rateLimiter = options.sharedRateLimiter ?? options.rateLimit.map { RateLimiter(bytesPerSecond: $0) }
        self.hasher = options.checksum.map { Checksummer($0.algorithm) }
    }

    func run() async throws -> DownloadResult {
        let connections = engine.connections, connectionID = self.connectionID, host = self.host
        defer {
            file?.close()
            folder?.close()
            locks.forEach { $0.release() }
            directoryChoice?.release()
            connections.releaseAll(connectionID, host: host)
        }
        do {
            if let done = try prepare() { return done }
            try await connections.first(connectionID, host: host) { events(.waitingForConnection(host: host)) }
            return try await transferLoop()
        } catch {
            throw await settle(error)
        }
    }

    // MARK: Before the first request

    /// Finds the destination and what is held for it; returns a result when the file is already complete.
    private func prepare() throws -> DownloadResult? {
        let destination: String
        switch options.destination {
        case .standardOutput:
            throw HaulError(.usage, "standard output is written by a streaming download, not a resumable one")
        case .file(let path):
            let folder = try OpenDirectory.open(POSIX.directoryOf(path), create: true)
            self.folder = folder
            if folder.status(Self.name(path))?.isDirectory == true {
                throw HaulError(.usage, "\(path) is a directory", reason: .destinationIsDirectory(path: path))
            }
            destination = path
        case .directory(let directory):
            folder = try OpenDirectory.open(directory, create: true)
            let choice = try store.choice(url: options.url, directory: directory)
            directoryChoice = choice
            // The name is chosen from the first response, unless an earlier run chose it already (in this folder).
            guard let chosen = choice.chosen, POSIX.directoryOf(chosen) == directory else { return nil }
            destination = chosen
        }
        locks.append(try store.lock(TransferRecord.key(destinationPath: destination), what: destination))
        if var saved = try loadRecord(for: destination) {
            if saved.url != options.url.absoluteString {
                if case .directory = options.destination {
                    // A stale note: that name belongs to another URL's download now. Choose a name afresh.
                    directoryChoice?.forget()
                    return nil
                }
                guard try takeOver(&saved) else { return try checkDestination(destination) }
            }
            return try restore(saved)
        }
        if case .directory = options.destination {
            directoryChoice?.forget()
            return nil
        }
        return try checkDestination(destination)
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

    /// Another URL's download owns `saved`. Its unfinished bytes may be continued when this URL serves the same
    /// representation (checked before anything is written); returns `false` when the record is set aside and the
    /// destination is to be treated as any existing file.
    private func takeOver(_ saved: inout TransferRecord) throws -> Bool {
        guard saved.state != .finished, !saved.adopted, !isMovedIntoPlace(saved) else {
            // A finished file of another URL is not "already complete" for this one: the destination just exists.
            if options.overwrite { store.remove(saved.key) }
            return false
        }
        if options.overwrite {
            folder?.unlink(Self.name(saved.partialPath))
            store.remove(saved.key)
            return false
        }
        saved.finalURL = nil
        if saved.offset > 0, partialSize(saved.partialPath) != nil {
            foreignURL = saved.url
        } else {
            saved.url = options.url.absoluteString
        }
        return true
    }

    /// A record not marked finished whose partial file is gone and whose destination is a regular file of the
    /// record's whole length: the partial file was moved into place.
    func isMovedIntoPlace(_ saved: TransferRecord) -> Bool {
        guard saved.state != .finished, !saved.adopted, let total = saved.totalLength, status(saved.partialPath) == nil,
              let destination = status(saved.destinationPath), destination.isRegular else { return false }
        return destination.size == total
    }

    /// The last component of `path`: a file's name in its folder.
    static func name(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// What is at `path` (a record's destination or partial file, always in the destination's folder), not
    /// following a link; `nil` when nothing is.
    func status(_ path: String) -> FileStatus? {
        folder?.status(Self.name(path))
    }

    /// The size of the regular file at `path`; `nil` when there is none (or something else, such as a link planted
    /// there, which is never continued: ``openDestination`` replaces it).
    func partialSize(_ path: String) -> Int64? {
        status(path).flatMap { $0.isRegular ? $0.size : nil }
    }

    /// Opens the file at `path` in the destination's folder (a regular file, never through a link).
    func openInFolder(_ path: String, writable: Bool = true) throws(HaulError) -> PartialFile {
        guard let folder else { throw HaulError(.fileSystem, "the folder of \(path) is not open") }
        return try folder.openFile(Self.name(path), writable: writable)
    }

    /// Continues a record of this destination: segments, a single stretch of bytes, or a finished file.
    private func restore(_ found: TransferRecord) throws -> DownloadResult? {
        var saved = found
        if foreignURL == nil, isMovedIntoPlace(saved), let total = saved.totalLength {
            // Killed between moving the finished file into place and recording that: it is complete.
            saved.state = .finished
            saved.offset = total
            saved.segments = nil
            try store.save(saved)
        }
        let resumeURL = foreignURL == nil ? saved.finalURL.flatMap { URL(string: $0) } ?? options.url : options.url
        if saved.state == .finished {
            if !options.overwrite, let found = status(saved.destinationPath), found.isRegular,
               saved.totalLength == nil || found.size == saved.totalLength {
                return try alreadyFinished(saved)
            }
            store.remove(saved.key)
            return try checkDestination(saved.destinationPath)
        } else if let segments = saved.segments, let total = saved.totalLength,
                  let plan = SegmentPlan(restoring: segments, total: total, minSegmentSize: options.minSegmentSize),
                  partialSize(saved.partialPath) == total {
            file = try openInFolder(saved.partialPath)
            segmentPlan = plan
            point = ResumePoint(offset: plan.doneBytes, validators: saved.validators, totalLength: total)
            // Whatever the validators say (an ETag made of size and time survives an in-place rewrite): the bytes held
            // are compared with the server's before any segment continues.
            heldBytesUnverified = plan.doneBytes > 0
        } else {
            if let segments = saved.segments {
                // Segments that cannot be continued: keep only the bytes held without a gap from byte 0.
                saved.offset = SegmentPlan.contiguousPrefix(of: segments)
                saved.segments = nil
            }
            if let size = partialSize(saved.partialPath) {
                let file = try openInFolder(saved.partialPath)
                self.file = file
                saved.offset = min(saved.offset, size)
                try file.truncate(to: saved.offset)
            } else {
                saved.offset = 0
            }
            point = saved.offset > 0 ? saved.resumePoint : ResumePoint()
            if saved.offset == 0 { foreignURL = nil }
        }
        if foreignURL == nil { saved.url = options.url.absoluteString }
        requestURL = resumeURL
        record = saved
        return nil
    }

    /// No download of this URL holds bytes for `path`: an existing file is refused, replaced (`--overwrite`) or
    /// adopted (`--continue`).
    private func checkDestination(_ path: String) throws -> DownloadResult? {
        guard let found = status(path) else { return nil }
        if options.continuePartial, found.size > 0 {
            file = try openInFolder(path)
            let size = try file?.status().size ?? found.size
            adoptedPath = path
            point = ResumePoint(offset: size)
            record = TransferRecord(
                url: options.url.absoluteString, destinationPath: path, partialPath: path + ".haul-part",
                offset: size, state: .running, adopted: true)
        } else if !options.overwrite, !(options.continuePartial && found.isRegular && found.size == 0) {
            throw HaulError(.usage, "\(path) already exists", reason: .destinationExists(path: path))
        } else {
            // Replaced once the download is complete: asked for (`--overwrite`), or an empty file given to
            // `--continue`, which holds nothing to check, so the download simply starts fresh.
            replacesDestination = true
        }
        return nil
    }

    private func alreadyFinished(_ saved: TransferRecord) throws -> DownloadResult {
        let size = status(saved.destinationPath)?.size ?? 0
        if let expected = options.checksum {
            let file = try openInFolder(saved.destinationPath, writable: false)
            defer { file.close() }
            var hasher = Checksummer(expected.algorithm)
            try file.forEachChunk(upTo: size) { chunk in chunk.withUnsafeBytes { hasher.update($0) } }
            let actual = hasher.hexDigest()
            guard actual == expected.hex else {
                throw HaulError(.checksum, "\(saved.destinationPath) exists but its \(expected.algorithm.rawValue) is \(actual), expected \(expected.hex)",
                                reason: .checksumMismatch(path: saved.destinationPath, expected: expected.description, actual: "\(expected.algorithm.rawValue):\(actual)", alreadyAtPath: true))
            }
        }
        let result = DownloadResult(path: saved.destinationPath, bytes: size, fetchedBytes: 0, checksum: options.checksum, alreadyComplete: true)
        events(.finished(result))
        return result
    }

    // MARK: The attempt loop

    /// Attempts until the lifecycle says the file is complete or gives up: the one retry loop of a download,
    /// whether its attempts use one connection or several.
    private func transferLoop() async throws -> DownloadResult {
        lifecycle = DownloadLifecycle(lifecycle.configuration, held: point.offset, seed: UInt64.random(in: 0...UInt64.max))
        while true {
            try Task.checkCancellation()
            _ = lifecycle.handle(.requestSent(held: point.offset))
            var refusal: (status: Int, phrase: String, url: URL)?
            let action: DownloadLifecycle.Action
            do {
                switch try await attempt() {
                case .complete:
                    action = lifecycle.handle(.bodyEnd(complete: true, held: point.offset))
                case .incomplete:
                    action = lifecycle.handle(.bodyEnd(complete: false, held: point.offset))
                case .restart(let reason):
                    action = lifecycle.handle(.restartNeeded(reason))
                case .refused(let status, let phrase, let url):
                    refusal = (status, phrase, url)
                    action = lifecycle.handle(.refused(status: status, atRedirectTarget: url != options.url))
                }
            } catch let failure as TransientFailure {
                if Task.isCancelled { throw CancellationError() }
                action = lifecycle.handle(.failed(failure.lifecycleFailure, held: point.offset))
            }
            switch action {
            case .finish:
                return try await finish()
            case .none, .reportProgress, .checkpoint, .requestAgain:
                continue
            case .requestOriginalURL:
                // The final URL of an earlier run may have expired (signed URLs): resolve the original again.
                requestURL = options.url
            case .restart(let reason):
                events(.restarted(reason: reason.description))
            case .retry(let delay, let retry, let allowed, let reason):
                events(.retrying(retry: retry, maxRetries: allowed, delay: delay, reason: reason))
                try await Task.sleep(for: delay)
            case .giveUp(let why):
                throw Self.error(for: why, refusal: refusal)
            }
        }
    }

    /// The words for a download the lifecycle gave up on.
    static func error(for giveUp: DownloadLifecycle.GiveUp, refusal: (status: Int, phrase: String, url: URL)? = nil, connection: Int? = nil) -> HaulError {
        switch giveUp {
        case .retriesExhausted(let failure, let retries, let heldBytes):
            let tries = retries == 1 ? "1 retry" : "\(retries) retries"
            let who = connection.map { "connection \($0) gave up" } ?? "gave up"
            let next = heldBytes || connection != nil ? "run the same command again to resume" : "check the URL and network, then run the same command again"
            return HaulError(failure.kind, "\(failure.reason) (\(who) after \(tries)); \(next)", reason: .retriesExhausted(retries: retries))
        case .endsAtSamePlace(let retries):
            return HaulError(.server, "the server keeps ending the response at the same place (gave up after \(retries) retries); run the same command again to resume")
        case .tooManyRestarts(let count, let reason):
            return HaulError(.server, "giving up after \(count) restarts: \(reason)")
        case .refused(let status):
            let url = refusal.map { "\($0.url) answered \(status) \($0.phrase)" } ?? "the server answered \(status)"
            return HaulError(.httpStatus, "\(url); check the URL and any headers it needs",
                             reason: .httpStatus(status, url: refusal.map { Redaction.url($0.url) } ?? ""))
        }
    }

    // MARK: The end

    private func finish() async throws -> DownloadResult {
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
                throw discardMismatch(record, "checksum mismatch for \(record.destinationPath): expected \(expected), got \(expected.algorithm.rawValue):\(actual); the download was discarded",
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
                throw discardMismatch(record, "\(record.destinationPath) does not have the digest the server announced (Repr-Digest \(digest.algorithm.rawValue):\(digest.hex.prefix(16))…, got …\(actual.prefix(16))); the download was discarded",
                                      reason: .checksumMismatch(path: record.destinationPath, expected: digest.description, actual: "\(digest.algorithm.rawValue):\(actual)", alreadyAtPath: false))
            }
        }
        // The file's date, its bytes, its check and its move into place in one call off the concurrency threads;
        // then its folder.
        let source = Self.name(adoptedPath ?? record.partialPath), destination = Self.name(record.destinationPath)
        let remoteTime = options.keepsRemoteTime ? point.validators.lastModified : nil
        let replacing = options.overwrite || replacesDestination || source == destination
        let gate = options.leaseGate
        try await BlockingIO.run {
            if remoteTime != nil { RemoteFileTime.apply(lastModified: remoteTime, to: file) }
            try file.sync()
            try gate?.check()
            try Self.publish(file, from: source, to: destination, in: folder, replacing: replacing)
        }
        await DirectorySyncer.shared.sync(folder)
        record.update(from: point)
        record.state = .finished
        record.adopted = false
        record.segments = nil
        self.record = record
        let store = self.store, finished = record
        if !store.deferFinal(finished) {
            try await BlockingIO.run { try store.save(finished, durable: false) }
        }
        emitProgress()
        let result = DownloadResult(path: record.destinationPath, bytes: point.offset, fetchedBytes: lifecycle.fetched, checksum: options.checksum, alreadyComplete: false)
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
        let moved: Bool
        do {
            moved = try folder.rename(source, to: destination, replacing: replacing)
        } catch {
            // Moved away between the check and the rename: not the file Haul wrote any more.
            guard folder.status(source)?.isSameFile(as: written) == true else { throw replaced(folder.pathOf(source)) }
            throw error
        }
        guard moved else {
            throw HaulError(.usage, "\(folder.pathOf(destination)) appeared while downloading and was left as it is; the download is kept in \(folder.pathOf(source)): move the other file away and run the same command again",
                            reason: .destinationExists(path: folder.pathOf(destination)))
        }
        // The name was checked, then renamed: should another program have swapped it in between, the file now at
        // the destination is not Haul's. Put it back where it was found and fail.
        guard folder.status(destination)?.isSameFile(as: written) == true else {
            _ = try? folder.rename(destination, to: source, replacing: false)
            throw replaced(folder.pathOf(source))
        }
    }

    private static func replaced(_ path: String) -> HaulError {
        HaulError(.fileSystem, "\(path) was replaced by another program while downloading (it is no longer the file Haul wrote), so nothing was published; run the same command again to download afresh",
                  reason: .replacedWhileDownloading(path: path))
    }

    /// Discards a complete download whose bytes failed a check: its partial file and record go (a file given to
    /// `--continue` stays); the error says why.
    private func discardMismatch(_ record: TransferRecord, _ message: String, reason: FailureReason) -> HaulError {
        file?.close()
        file = nil
        if adoptedPath == nil { folder?.unlink(Self.name(record.partialPath)) }
        store.remove(record.key)
        return HaulError(.checksum, message, reason: reason)
    }

    /// Saves what can be saved and turns any error into the one-line ``HaulError`` a person sees.
    private func settle(_ error: any Error) async -> HaulError {
        let interrupted = Task.isCancelled || error is CancellationError || (error as? HTTPClientError) == .cancelled
        var failure: HaulError
        if interrupted {
            let held = point.offset
            let percent = point.totalLength.map { $0 > 0 ? " (\(held * 100 / $0)%)" : "" } ?? ""
            let total = point.totalLength.map { " of \(ByteFormat.string($0))" } ?? ""
            failure = HaulError(.interrupted, "paused at \(ByteFormat.string(held))\(total)\(percent); run the same command again to resume", reason: .interrupted)
        } else if let error = error as? HaulError {
            failure = error
        } else if let error = error as? TransientFailure {
            failure = HaulError(error.kind, error.reason)
        } else {
            failure = HaulError(.network, DownloadJob.describe(error))
        }
        guard failure.kind != .checksum, failure.kind != .busy, adoptedPath == nil, var record, record.state != .finished else {
            return failure
        }
        record.update(from: point)
        record.state = interrupted ? .paused : .failed
        do {
            try await checkpointer.checkpointNow(record, file: file)
        } catch {
            // Durability of the newest bytes could not be confirmed: keep the last good record.
            try? await checkpointer.waitForPending()
            if var last = try? store.load(record.key) {
                last.state = record.state
                try? store.save(last)
            }
        }
        return failure
    }
}
