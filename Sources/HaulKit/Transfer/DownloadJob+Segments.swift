import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

extension DownloadJob {
    /// How many connections the first response allows, or `nil` for one (reporting why when it matters).
    func segmentParts(info: ResourceInfo) -> Int? {
        let decision = SegmentationPolicy.decide(
            requested: options.segments, info: info, rangeSupported: true,
            minSegmentSize: options.minSegmentSize, maxConnectionsPerHost: options.maxConnectionsPerHost)
        switch decision {
        case .segmented(let parts):
            return parts
        case .single(let reason):
            if let reason { events(.singleConnection(reason: reason)) }
            return nil
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
            coordinator: coordinator, retry: options.retry, events: events, logger: logger)
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
        fetched += plan.doneBytes - heldBefore
    }
}

/// Progress events and durable checkpoints for a segmented download, called from a timer while connections run.
final class SegmentMonitor: @unchecked Sendable {
    private let store: TransferRecordStore
    private let record: TransferRecord
    private let file: PartialFile
    private let events: @Sendable (DownloadEvent) -> Void
    private let checkpointInterval: Duration
    private let startTime: ContinuousClock.Instant
    private let lock = NSLock()
    private var meter = ProgressMeter()
    private var lastCheckpoint = ContinuousClock.now

    init(store: TransferRecordStore, record: TransferRecord, file: PartialFile,
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
        try? await NIOThreadPool.singleton.runIfActive {
            try file.sync()
            try store.save(record)
        }
    }
}
