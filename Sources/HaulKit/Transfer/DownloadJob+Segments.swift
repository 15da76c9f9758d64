import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

extension DownloadJob {
    /// Bytes `0..<offset` held from one connection (or a file given to `--continue`): when the rest is worth
    /// splitting, the held bytes' last 64 KiB are checked with a closed range, and the rest continues over
    /// several connections. `nil`: continue over one connection (whose own overlap check then decides).
    func continueHeldPrefixWithSegments() async throws -> AttemptOutcome? {
        guard segmentPlan == nil, point.offset > 0, options.segments != 1, lifecycle.mayProbeRanges, !triedHeldPrefixSegments,
              let file else { return nil }
        if adoptedPath != nil {
            // A file given to --continue: its length is unknown until the server answers, so the extra check is
            // made only when several connections were asked for.
            guard (options.segments ?? 1) > 1 else { return nil }
        } else {
            // Haul's own partial: only when its record already shows that the rest would be split.
            guard let total = point.totalLength, total > point.offset, remainderParts(total: total, validators: point.validators) != nil else { return nil }
        }
        guard let (check, end) = ResumePolicy.verificationPlans(for: [0..<point.offset], validators: point.validators).first else { return nil }
        let (response, url) = try await sender.send(check, to: requestURL, readAhead: SegmentedDownload.readAhead)
        let head = RequestSender.head(response)
        let held = ResumePoint(offset: end, validators: point.validators, totalLength: point.totalLength)
        let decision = ResumePolicy.decide(plan: check, point: held, response: head)
        logger.debug("\(head.status) from \(Redaction.url(url)): \(RequestSender.summary(head.headers)) -> checking held bytes: \(decision)")
        // Tried once an answer came: a check that failed on the way (a stall, a reset) is made again by the next
        // attempt, rather than leaving the rest of the file to one connection.
        guard case .append(let info, _, let overlap) = decision, let total = info.totalLength, total > point.offset,
              let parts = remainderParts(total: total, validators: info.validators) else {
            triedHeldPrefixSegments = true
            return nil
        }
        let same = try await body(response.body, from: url, equals: file, at: check.start, count: overlap)
        triedHeldPrefixSegments = true
        guard same else { return nil }
        if let adoptedPath { try await adoptVerifiedFile(adoptedPath) }
        try await ownVerifiedBytes()
        guard let opened = self.file else { return nil }
        point.validators = info.validators
        point.totalLength = total
        record?.finalURL = url.absoluteString
        try opened.preallocate(total)
        let plan = SegmentPlan(total: total, parts: parts, minSegmentSize: options.minSegmentSize, heldPrefix: point.offset)
        segmentPlan = plan
        record?.segments = plan.segments
        try await saveRecordNow()
        return try await runSegments(plan, first: nil)
    }

    /// How many connections the bytes after the held ones would get, or `nil` for one.
    private func remainderParts(total: Int64, validators: Validators) -> Int? {
        let rest = ResourceInfo(validators: validators, totalLength: total - point.offset, acceptsRanges: true)
        let decision = SegmentationPolicy.decide(
            requested: options.segments, info: rest, rangeSupported: true,
            minSegmentSize: options.minSegmentSize, maxConnectionsPerHost: options.maxConnectionsPerHost)
        if case .segmented(let parts) = decision { return parts }
        return nil
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
        let coordinator = SegmentCoordinator(plan: plan, rateLimit: options.rateLimit, shared: options.sharedRateLimiter)
        let download = SegmentedDownload(
            sender: sender, url: requestURL, file: file, validators: point.validators, total: total,
            coordinator: coordinator, retry: options.retry, events: events, logger: logger,
            connections: engine.connections, connectionID: connectionID, host: host, leaseGate: options.leaseGate)
        let monitor = SegmentMonitor(
            store: store, record: base, file: file, events: events,
            checkpointInterval: options.checkpointInterval, startTime: startTime)
        let connections = max(1, min(options.segments ?? 8, options.maxConnectionsPerHost))
        do {
            try await download.run(connections: connections, first: first, interval: options.progressInterval) { snapshot in
                await monitor.tick(snapshot)
            }
        } catch let changed as SegmentedDownload.ResourceChanged {
            try await discardHeldBytes()
            return .restart(changed.reason)
        } catch {
            remember(await coordinator.snapshot, heldBefore: heldBefore)
            throw error
        }
        let done = await coordinator.snapshot
        remember(done, heldBefore: heldBefore)
        guard done.isComplete else { return .incomplete }
        segmentPlan = nil
        point.offset = total
        return .complete
    }

    /// Keeps the plan's progress in the job, so that a failure checkpoints it and the next attempt continues it.
    private func remember(_ plan: SegmentPlan, heldBefore: Int64) {
        segmentPlan = SegmentPlan(restoring: plan.segments, total: plan.total, minSegmentSize: plan.minSegmentSize)
        record?.segments = plan.segments
        point.offset = plan.doneBytes
        _ = lifecycle.handle(.segmentsWrote(count: plan.doneBytes - heldBefore))
    }
}

/// Progress events and durable checkpoints for a segmented download, called from a timer while connections run.
final class SegmentMonitor: @unchecked Sendable {
    private let store: any ResumeRecords
    private let record: TransferRecord
    private let file: PartialFile
    private let events: @Sendable (DownloadEvent) -> Void
    private let checkpointInterval: Duration
    private let startTime: ContinuousClock.Instant
    private let lock = NSLock()
    private var meter = ProgressMeter()
    private var lastCheckpoint = ContinuousClock.now

    init(store: any ResumeRecords, record: TransferRecord, file: PartialFile,
         events: @escaping @Sendable (DownloadEvent) -> Void, checkpointInterval: Duration, startTime: ContinuousClock.Instant) {
        self.store = store
        self.record = record
        self.file = file
        self.events = events
        self.checkpointInterval = checkpointInterval
        self.startTime = startTime
    }

    func tick(_ plan: SegmentPlan) async {
        let now = ContinuousClock.now
        let (progress, due): (DownloadProgress, Bool) = lock.withLock {
            meter.record(bytes: plan.doneBytes, at: now - startTime)
            let due = now - lastCheckpoint >= checkpointInterval
            if due { lastCheckpoint = now }
            return (DownloadProgress(
                bytes: plan.doneBytes, total: plan.total, bytesPerSecond: meter.bytesPerSecond,
                secondsRemaining: meter.secondsRemaining(total: plan.total), segments: plan.segments), due)
        }
        events(.progress(progress))
        guard due else { return }
        // Durable bytes first, then the record that counts them.
        var updated = self.record
        updated.segments = plan.segments
        updated.offset = plan.doneBytes
        updated.state = .running
        let record = updated
        let store = self.store, file = self.file
        try? await BlockingIO.pool.runIfActive {
            try file.sync()
            try store.save(record)
        }
    }
}
