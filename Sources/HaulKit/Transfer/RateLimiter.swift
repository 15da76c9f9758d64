import NIOConcurrencyHelpers

/// One bandwidth limit shared by several downloads (a session's global limit).
package final class RateLimiter: Sendable {
    private let bucket: NIOLockedValueBox<TokenBucket>
    private let start = ContinuousClock.now

    public init(bytesPerSecond: Int64) {
        bucket = NIOLockedValueBox(TokenBucket(bytesPerSecond: bytesPerSecond))
    }

    /// Takes `bytes` and returns how long the caller should pause.
    public func consume(_ bytes: Int) -> Duration {
        let now = ContinuousClock.now - start
        return bucket.withLockedValue { $0.consume(bytes, at: now) }
    }
}
