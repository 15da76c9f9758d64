/// Shares a ``SegmentPlan`` and one rate limit between the connections of a segmented download.
actor SegmentCoordinator {
    private var plan: SegmentPlan
    private let limiter: RateLimiter?

    init(plan: SegmentPlan, rateLimit: Int64?, shared: RateLimiter? = nil) {
        self.plan = plan
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
    func advance(_ id: Int, by count: Int64) -> (remaining: Int64, pause: Duration) {
        let remaining = plan.advance(id, by: count)
        let pause = limiter?.consume(Int(count)) ?? .zero
        return (remaining, pause)
    }

    var snapshot: SegmentPlan { plan }
}
