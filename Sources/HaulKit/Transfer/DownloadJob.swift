import AsyncHTTPClient
import Foundation
import Logging
import NIOCore

/// One run of one download: the imperative shell around ``DownloadMachine``, which decides; this class does what
/// it says (requests, files, records, events). Owned by a single task.
///
/// What it keeps is what it works with: the durable record, the bytes held (`point`), the files and locks it holds
/// open. Where those bytes came from, whether they were checked, how they are laid out over connections and every
/// budget of the run are the machine's state.
final class DownloadJob {
    enum AttemptOutcome {
        case complete
        case incomplete
        case restart(RestartReason)
        /// The answers to the segments described different versions of the file (`reason`); the bytes held were
        /// discarded, and the download starts over on one connection.
        case segmentsDisagreed(RestartReason)
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

    /// The download's decisions: where the bytes held came from, what each event leads to.
    var machine: DownloadMachine
    /// The durable state; `nil` until the destination is known. Its key is the destination's path.
    var record: TransferRecord? { didSet { stampFileID() } }
    /// What is held: bytes `0..<point.offset` of `file` (or a segmented download's segments) belong to the version
    /// `point.validators` describe.
    var point = ResumePoint()
    var file: PartialFile? { didSet { stampFileID() } }
    /// The destination's folder, held open for the whole run (with the engine's other downloads into it): every file
    /// of the download is created, checked, renamed and synced relative to it (``OpenDirectory``).
    var folder: OpenDirectory?
    /// The path `folder` was opened as, in the engine's ``HeldFolders``.
    var folderPath = ""
    var hasher: Checksummer?
    /// A segmented download's windows asked for before a range whose bytes were not written yet when its connections
    /// stopped: the next attempt compares them once they are (``BoundaryChecks``). Emptied with the bytes held.
    var boundaryChecks = BoundaryChecks()
    /// Who this download is in the engine's sharing of `host`'s connections.
    let connectionID: Int
    let host: String
    /// The protocol of the last response: `HTTP/1.1` or `HTTP/2`.
    var httpVersion: String?
    var requestURL: URL
    var announcedStart = false
    var meter = ProgressMeter()
    /// The session's shared limit, else this download's own (as a segmented download's coordinator does).
    let rateLimiter: RateLimiter?
    /// The destination's lock, held for the whole run.
    var locks: [FileLock] = []
    /// For `--dir`: this URL's name choice in that folder, which remembers the name chosen (held for the whole run).
    var directoryChoice: (any DirectoryChoice)?
    /// The length of the file given to `--continue` when it was taken over: the same length at the end means it was
    /// complete already.
    var adoptedLength: Int64?

    init(engine: TransferEngine, options: DownloadOptions, events: @escaping @Sendable (DownloadEvent) -> Void) {
        self.engine = engine
        self.options = options
        self.events = events
        self.store = options.records ?? engine.store
        self.checkpointer = Checkpointer(store: options.records ?? engine.store)
        self.connectionID = engine.connections.makeID()
        self.host = Origin.authority(of: options.url)
        self.machine = DownloadMachine(DownloadMachine.Configuration(
            rules: RetryRules.Configuration(retry: options.retry, failFastBeforeData: options.failFastBeforeData),
            bookkeeping: Bookkeeping.Configuration(
                progressInterval: options.progressInterval, checkpointBytes: options.checkpointBytes,
                checkpointInterval: options.checkpointInterval),
            segments: options.segments, minSegmentSize: options.minSegmentSize, maxConnectionsPerHost: options.maxConnectionsPerHost,
            // As an HTTP/2 stream when the engine offers HTTP/2, the URL is https and no segments were asked for: then
            // it takes no connection of its own once the host is known to speak HTTP/2.
            multiplexable: engine.mayMultiplex(options.url) && (options.segments ?? 1) <= 1,
            largeFileThreshold: TransferEngine.largeFileThreshold), seed: UInt64.random(in: 0...UInt64.max))
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
            if let folder { engine.folders.release(folder, as: folderPath, below: options.confinedTo) }
            locks.forEach { $0.release() }
            directoryChoice?.release()
            connections.releaseAll(connectionID, host: host)
        }
        do {
            switch try prepare() {
            case .complete(let result):
                return result
            case .holding(let held, let replacesDestination):
                machine.prepared(held, heldBytes: point.offset, replacesDestination: replacesDestination)
            }
            try await connections.first(connectionID, host: host, allowing: options.maxConnectionsPerHost,
                                        multiplexable: machine.configuration.multiplexable) {
                events(.waitingForConnection(host: host))
            }
            if let unchanged = try await checkTimestamp() { return unchanged }
            return try await transferLoop()
        } catch {
            throw await settle(error)
        }
    }

    // MARK: The attempt loop

    /// What the loop does after an attempt.
    private enum Next {
        case finish(DownloadMachine.Publish)
        case requestAgain
        case wait(RetryRules.Retry)
        case giveUp(RetryRules.GiveUp, refusal: (status: Int, phrase: String, url: URL)?)
    }

    /// Attempts until the machine says the file is complete or gives up: the one retry loop of a download, whether
    /// its attempts use one connection or several.
    private func transferLoop() async throws -> DownloadResult {
        while true {
            try Task.checkCancellation()
            let next: Next
            do {
                next = afterAttempt(try await attempt())
            } catch let failure as TransientFailure {
                if Task.isCancelled { throw CancellationError() }
                if failure.requiresHTTP1 { engine.noteWantsHTTP1(options.url) }
                // Its session starts the host's other downloads after other hosts' until one gets a response: they
                // would only hold their slots through the same backoff.
                if failure.beforeConnecting { engine.noteUnreachable(host) }
                switch machine.failed(failure.ruleFailure, held: point.offset) {
                case .requestAgain: next = .requestAgain
                case .retry(let retry): next = .wait(retry)
                case .giveUp(let why): next = .giveUp(why, refusal: nil)
                }
            }
            switch next {
            case .finish(let publish):
                return try await finish(publish)
            case .requestAgain:
                continue
            case .wait(let retry):
                events(.retrying(retry: retry.retry, maxRetries: retry.of, delay: retry.after, reason: retry.reason))
                try await Task.sleep(for: retry.after)
            case .giveUp(let why, let refusal):
                throw Self.error(for: why, refusal: refusal, via: refusal.flatMap { sender.proxy(for: $0.url) },
                                      forwarded: refusal.map { sender.forwards($0.url) } ?? false,
                                      withheldFor: refusal.flatMap { sender.withheldCredentials(at: $0.url) })
            }
        }
    }

    /// Tells the machine how the attempt ended; returns what it says to do.
    private func afterAttempt(_ outcome: AttemptOutcome) -> Next {
        switch outcome {
        case .complete:
            return .finish(machine.completed())
        case .incomplete:
            switch machine.endedEarly(held: point.offset) {
            case .requestAgain: return .requestAgain
            case .retry(let retry): return .wait(retry)
            case .giveUp(let why): return .giveUp(why, refusal: nil)
            }
        case .restart(let reason):
            switch machine.restartNeeded(reason) {
            case .restart(let reason):
                events(.restarted(reason: reason.description))
                // Starting over is asked of the URL given, not of a URL Haul was led to (which may need what its
                // redirects set, or be spent): what it answers is what a new download would get.
                requestURL = options.url
                return .requestAgain
            case .giveUp(let why):
                return .giveUp(why, refusal: nil)
            }
        case .segmentsDisagreed(let reason):
            switch machine.segmentsDisagreed(reason) {
            case .restart(let reason):
                var words = reason.description
                if case .resourceChanged(let detail) = reason { words = "the segments' answers name different versions of the file (\(detail))" }
                events(.restarted(reason: words))
                requestURL = options.url
                return .requestAgain
            case .giveUp(let why):
                return .giveUp(why, refusal: nil)
            }
        case .refused(let status, let phrase, let url):
            switch machine.refused(status: status, atRedirectTarget: url != options.url) {
            case .requestOriginalURL:
                // The final URL of an earlier run may have expired (signed URLs): resolve the original again.
                requestURL = options.url
                return .requestAgain
            case .giveUp(let why):
                return .giveUp(why, refusal: (status, phrase, url))
            }
        }
    }

    /// Keeps the record naming the file the bytes are written to (``TransferRecord/fileID``), whichever of the two was
    /// set last.
    private func stampFileID() {
        guard let identity = file?.identity, record != nil, record?.fileID != identity else { return }
        record?.fileID = identity
    }
}
