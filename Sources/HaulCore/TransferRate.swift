/// Speed and time remaining over a sliding window of progress samples.
package struct ProgressMeter: Sendable {
    public var window: Duration
    private var samples: [(time: Duration, bytes: Int64)] = []

    public init(window: Duration = .seconds(5)) { self.window = window }

    /// Records that `bytes` were held at `time` (any monotonic clock's offset).
    public mutating func record(bytes: Int64, at time: Duration) {
        samples.append((time, bytes))
        while let first = samples.first, time - first.time > window, samples.count > 2 { samples.removeFirst() }
    }

    /// Bytes per second over the window, or `nil` before two samples are a moment apart.
    public var bytesPerSecond: Double? {
        guard let first = samples.first, let last = samples.last else { return nil }
        let elapsed = (last.time - first.time).seconds
        guard elapsed >= 0.05 else { return nil }
        return Double(last.bytes - first.bytes) / elapsed
    }

    /// Seconds left to reach `total` at the current speed.
    public func secondsRemaining(total: Int64?) -> Double? {
        guard let total, let last = samples.last, let speed = bytesPerSecond, speed > 0 else { return nil }
        return Double(max(0, total - last.bytes)) / speed
    }
}

/// A token bucket: how long to wait so that transfers average at most `bytesPerSecond`.
package struct TokenBucket: Sendable {
    public let bytesPerSecond: Double
    /// How many bytes may pass in a burst after an idle moment.
    public let capacity: Double
    private var tokens: Double
    private var last: Duration?

    public init(bytesPerSecond: Int64, burst: Duration = .milliseconds(100)) {
        self.bytesPerSecond = Double(max(1, bytesPerSecond))
        self.capacity = max(1, self.bytesPerSecond * burst.seconds)
        // Starting empty keeps the average at or under the limit even for short transfers.
        self.tokens = 0
    }

    /// Takes `bytes` at `now` and returns how long to pause before going on (zero when within the limit).
    public mutating func consume(_ bytes: Int, at now: Duration) -> Duration {
        if let last { tokens = min(capacity, tokens + (now - last).seconds * bytesPerSecond) }
        last = now
        tokens -= Double(bytes)
        guard tokens < 0 else { return .zero }
        return .milliseconds(Int64((-tokens / bytesPerSecond * 1000).rounded(.up)))
    }
}
