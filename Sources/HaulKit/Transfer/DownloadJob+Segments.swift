import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

extension DownloadJob {
    /// How the check of a held stretch ended.
    enum HeldPrefixResult {
        /// Its rest went over several connections, with this outcome.
        case ran(AttemptOutcome)
        /// The rest goes over one connection (whose own overlap check then decides), by this request.
        case oneConnection(DownloadMachine.Request)
    }

    /// Bytes `0..<offset` held from one connection (or a file given to `--continue`), whose rest is worth
    /// splitting: their last 64 KiB are asked for again with a closed range (`check`) and compared; when they match,
    /// the rest continues over several connections.
    func continueHeldPrefixWithSegments(_ check: DownloadMachine.HeldCheck) async throws -> HeldPrefixResult {
        guard let file else { throw HaulError(.fileSystem, "no partial file is open") }
        try await holdConnection()
        let (response, url) = try await sender.send(check.plan, to: requestURL, readAhead: SegmentedDownload.readAhead)
        let head = RequestSender.head(response)
        let held = ResumePoint(offset: check.end, validators: point.validators, totalLength: point.totalLength)
        let decision = ResumePolicy.decide(plan: check.plan, point: held, response: head)
        logger.debug("\(head.status) from \(Redaction.url(url)): \(RequestSender.summary(head.headers)) -> checking held bytes: \(decision)")
        // Tried once an answer came: a check that failed on the way (a stall, a reset) is made again by the next
        // attempt, rather than leaving the rest of the file to one connection.
        let split: DownloadMachine.HeldPrefixSplit
        switch machine.heldPrefixAnswered(decision, point: point) {
        case .request(let request): return .oneConnection(request)
        case .compare(let answer): split = answer
        }
        let same = try await body(response.body, from: url, equals: file, at: check.plan.start, count: split.overlap)
        switch machine.heldPrefixCompared(matching: same, split, point: point) {
        case .request(let request):
            return .oneConnection(request)
        case .split(let plan, let adopting, let owning):
            if let adopting { try await adoptVerifiedFile(adopting) }
            if owning { try await ownVerifiedBytes() }
            guard let opened = self.file else { throw HaulError(.fileSystem, "no partial file is open") }
            point.validators = split.info.validators
            point.totalLength = split.total
            record?.finalURL = url.absoluteString
            try opened.preallocate(split.total)
            record?.segments = plan.segments
            try await saveRecordNow()
            return .ran(try await runSegments(plan, first: nil))
        }
    }

    /// A 200 to the range probe: tell the user when several connections were asked for or would have been used.
    func reportSingleConnection(info: ResourceInfo, rangeSupported: Bool) {
        let large = (info.totalLength ?? 0) >= 8 * options.minSegmentSize
        guard options.segments.map({ $0 > 1 }) ?? large else { return }
        let decision = SegmentationPolicy.decide(
            requested: options.segments, info: info, rangeSupported: rangeSupported,
            minSegmentSize: options.minSegmentSize, maxConnectionsPerHost: options.maxConnectionsPerHost)
        if case .single(let reason?) = decision { events(.singleConnection(reason: reason)) }
    }

    /// The probe's 206 showed the file can be split: preallocate, plan the segments, and let the probe's
    /// response carry on as the first connection.
    func startSegments(parts: Int, probeBody: ResponseBody) async throws -> AttemptOutcome {
        guard let file, let total = point.totalLength else { throw HaulError(.server, "the server did not say how long the file is") }
        try file.preallocate(total)
        var plan = SegmentPlan(total: total, parts: parts, minSegmentSize: options.minSegmentSize)
        guard let first = plan.claim() else { return .complete }
        machine.segmentsPlanned(plan)
        record?.segments = plan.segments
        try await saveRecordNow()
        announceStart()
        probeBody.limitReadAhead(to: SegmentedDownload.readAhead)
        return try await runSegments(plan, first: (first, probeBody))
    }

    /// Runs the connections of a segmented download until the file is complete.
    func runSegments(_ plan: SegmentPlan, first: (Segment, ResponseBody)?) async throws -> AttemptOutcome {
        guard let file, let total = point.totalLength, let base = record else {
            throw HaulError(.server, "a segmented download needs a known length")
        }
        announceStart()
        let heldBefore = plan.doneBytes
        let coordinator = SegmentCoordinator(
            plan: plan, checks: boundaryChecks, file: file, rateLimit: options.rateLimit, shared: options.sharedRateLimiter)
        let download = SegmentedDownload(
            sender: sender, url: requestURL, file: file, validators: point.validators, total: total,
            coordinator: coordinator, retry: options.retry, events: events, logger: logger,
            connections: engine.connections, connectionID: connectionID, host: host, leaseGate: options.leaseGate)
        let monitor = SegmentMonitor(
            checkpointer: checkpointer, record: base, file: file, events: events,
            checkpointInterval: options.checkpointInterval, startTime: startTime)
        let connections = max(1, min(options.segments ?? 8, options.maxConnectionsPerHost))
        do {
            try await download.run(connections: connections, first: first, interval: options.progressInterval) { snapshot in
                try await monitor.tick(snapshot)
            }
        } catch let changed as SegmentedDownload.ResourceChanged {
            // Two answers saw two versions (other validators, or a boundary's bytes differ): nothing held can be
            // trusted to be one file. When a segment's answer named another version than the download's, the server's
            // copies disagree (a load balancer's backends, or a file replaced meanwhile): one connection never mixes them.
            try await discardHeldBytes()
            return changed.segmentsDisagree ? .segmentsDisagreed(changed.reason) : .restart(changed.reason)
        } catch {
            boundaryChecks = await coordinator.pendingChecks
            remember(await coordinator.snapshot, heldBefore: heldBefore)
            throw error
        }
        boundaryChecks = await coordinator.pendingChecks
        let done = await coordinator.snapshot
        remember(done, heldBefore: heldBefore)
        guard done.isComplete else { return .incomplete }
        machine.segmentsCompleted()
        point.offset = total
        return .complete
    }

    /// Keeps the plan's progress, so that a failure checkpoints it and the next attempt continues it.
    private func remember(_ plan: SegmentPlan, heldBefore: Int64) {
        let restored = SegmentPlan(restoring: plan.segments, total: plan.total, minSegmentSize: plan.minSegmentSize) ?? plan
        machine.segmentsStopped(restored, wrote: plan.doneBytes - heldBefore)
        record?.segments = plan.segments
        point.offset = plan.doneBytes
    }
}

/// Progress events and durable checkpoints for a segmented download, called from a timer while connections run.
/// Its checkpoints go through the download's one ``Checkpointer``: a failed one ends the download.
final class SegmentMonitor: Sendable {
    private struct Clock {
        var meter = ProgressMeter()
        var lastCheckpoint = ContinuousClock.now
    }

    private let checkpointer: Checkpointer
    private let record: TransferRecord
    private let file: PartialFile
    private let events: @Sendable (DownloadEvent) -> Void
    private let checkpointInterval: Duration
    private let startTime: ContinuousClock.Instant
    private let clock = NIOLockedValueBox(Clock())

    init(checkpointer: Checkpointer, record: TransferRecord, file: PartialFile,
         events: @escaping @Sendable (DownloadEvent) -> Void, checkpointInterval: Duration, startTime: ContinuousClock.Instant) {
        self.checkpointer = checkpointer
        self.record = record
        self.file = file
        self.events = events
        self.checkpointInterval = checkpointInterval
        self.startTime = startTime
    }

    /// Reports progress, and checkpoints `plan` when one is due; throws the failure of a checkpoint.
    func tick(_ plan: SegmentPlan) async throws {
        let now = ContinuousClock.now
        let startTime = self.startTime, interval = checkpointInterval
        let (progress, due): (DownloadProgress, Bool) = clock.withLockedValue { clock in
            clock.meter.record(bytes: plan.doneBytes, at: now - startTime)
            let due = now - clock.lastCheckpoint >= interval
            if due { clock.lastCheckpoint = now }
            return (DownloadProgress(
                bytes: plan.doneBytes, total: plan.total, bytesPerSecond: clock.meter.bytesPerSecond,
                secondsRemaining: clock.meter.secondsRemaining(total: plan.total), segments: plan.segments,
                fetching: plan.active), due)
        }
        events(.progress(progress))
        guard due else { return }
        var updated = record
        updated.segments = plan.segments
        updated.offset = plan.doneBytes
        updated.state = .running
        try await checkpointer.checkpointUnlessBusy(updated, file: file)
    }
}
