/// Shares a ``SegmentPlan``, the boundary checks and one rate limit between the connections of a segmented download.
///
/// Bytes a connection asked for before its range (``BoundaryChecks``) are compared with the file as soon as the plan
/// shows them written: when they are registered, and after every write that is recorded. Both happen here, so a
/// snapshot of the plan (what a checkpoint records) never counts bytes whose boundary was found to differ.
actor SegmentCoordinator {
    private var plan: SegmentPlan
    private var checks: BoundaryChecks
    private let file: PartialFile
    private let limiter: RateLimiter?
    private var cap = RangeCap()

    init(plan: SegmentPlan, checks: BoundaryChecks = BoundaryChecks(), file: PartialFile, rateLimit: Int64?, shared: RateLimiter? = nil) {
        self.plan = plan
        self.checks = checks
        self.file = file
        self.limiter = shared ?? rateLimit.map { RateLimiter(bytesPerSecond: $0) }
    }

    func claim() -> Segment? { plan.claim() }

    /// Whether a connection that joined now would find work (a segment to start, or one worth splitting).
    var hasWorkToClaim: Bool {
        var copy = plan
        return copy.claim() != nil
    }

    func release(_ id: Int) { plan.release(id) }

    func remaining(_ id: Int) -> Int64 { plan.remaining(id) }

    /// Records bytes written; returns what the segment may still write and how long to pause for the rate limit.
    /// Throws ``SegmentedDownload/ResourceChanged`` when bytes now written differ from a server's answer for them.
    func advance(_ id: Int, by count: Int64) throws -> (remaining: Int64, pause: Duration) {
        let remaining = plan.advance(id, by: count)
        try compareWritten()
        let pause = limiter?.consume(Int(count)) ?? .zero
        return (remaining, pause)
    }

    /// Keeps the server's bytes for a window before a request's start, comparing them at once if they are written.
    func expect(_ check: BoundaryChecks.Check) throws {
        guard checks.add(check) else { throw SegmentedDownload.ResourceChanged(reason: .overlapMismatch) }
        try compareWritten()
    }

    /// Compares every pending window the plan shows written with the file.
    func compareWritten() throws {
        for check in checks.takeWritten(in: plan) {
            let held = try file.read(count: check.bytes.count, at: check.window.lowerBound)
            guard held == check.bytes else { throw SegmentedDownload.ResourceChanged(reason: .overlapMismatch) }
        }
    }

    /// The bytes a request at `next` of a segment starting at `segmentStart` asks for before `next` (``RangeCap``).
    func overlap(next: Int64, segmentStart: Int64) -> Int64 {
        cap.overlap(next: next, segmentStart: segmentStart)
    }

    /// An answer ended cleanly after `received` bytes, before the end asked for: the server caps its ranges. Returns
    /// the cap when it is below the plan's smallest segment, too small for splitting to pay
    /// (``RangeCap/isTooSmall(forSegmentsOf:)``).
    func shortAnswer(received: Int64) -> Int64? {
        cap.shortAnswer(received: received)
        return cap.isTooSmall(forSegmentsOf: plan.minSegmentSize) ? cap.bytes : nil
    }

    /// Whether a request at `next` now asks for fewer bytes before it than `usedOverlap` (``RangeCap``).
    func asksAgainAtOnce(next: Int64, segmentStart: Int64, usedOverlap: Int64) -> Bool {
        cap.asksAgainAtOnce(next: next, segmentStart: segmentStart, usedOverlap: usedOverlap)
    }

    var snapshot: SegmentPlan { plan }

    /// The windows not yet written: kept by the download for its next attempt.
    var pendingChecks: BoundaryChecks { checks }
}
