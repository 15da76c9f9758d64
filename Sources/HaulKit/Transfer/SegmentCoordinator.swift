/// Shares a ``SegmentPlan`` and one rate limit between the connections of a segmented download.
actor SegmentCoordinator {
    private var plan: SegmentPlan
    private var bucket: TokenBucket?
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant

    init(plan: SegmentPlan, rateLimit: Int64?) {
        self.plan = plan
        self.bucket = rateLimit.map { TokenBucket(bytesPerSecond: $0) }
        self.start = clock.now
    }

    func claim() -> Segment? { plan.claim() }

    func release(_ id: Int) { plan.release(id) }

    func remaining(_ id: Int) -> Int64 { plan.remaining(id) }

    /// Records bytes written; returns what the segment may still write and how long to pause for the rate limit.
    func advance(_ id: Int, by count: Int64) -> (remaining: Int64, pause: Duration) {
        let remaining = plan.advance(id, by: count)
        let pause = bucket?.consume(Int(count), at: clock.now - start) ?? .zero
        return (remaining, pause)
    }

    var snapshot: SegmentPlan { plan }
}
