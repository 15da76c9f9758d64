/// When to try again after a transient failure: exponential backoff with jitter, honouring `Retry-After`.
public struct RetryPolicy: Equatable, Sendable {
    /// Retries after the first attempt; the count restarts whenever an attempt made progress.
    public var maxRetries: Int
    /// The backoff before the first retry; it doubles with each retry after that.
    public var baseDelay: Duration
    /// The longest backoff, however many retries came before.
    public var maxDelay: Duration
    /// The longest `Retry-After` honoured; a longer one is shortened to this.
    public var maxRetryAfter: Duration

    /// A policy with these limits; the defaults are 5 retries, 1 s doubling up to 60 s, `Retry-After` up to 10 min.
    public init(maxRetries: Int = 5, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60), maxRetryAfter: Duration = .seconds(600)) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// The wait before retry number `retry` (1-based). `jitter` in 0...1 spreads it over 50–100% of the backoff.
    public func delay(beforeRetry retry: Int, retryAfter: Duration? = nil, jitter: Double) -> Duration {
        let exponent = Double(max(0, min(retry - 1, 30)))
        let base = baseDelay.seconds * pow2(exponent)
        let backoff = min(base, maxDelay.seconds) * (0.5 + 0.5 * min(max(jitter, 0), 1))
        var wait = backoff
        if let retryAfter { wait = max(wait, min(retryAfter.seconds, maxRetryAfter.seconds)) }
        return .milliseconds(Int64((wait * 1000).rounded()))
    }

    /// Parses `Retry-After` (delay-seconds or an HTTP-date) relative to `now` (Unix seconds).
    public static func parseRetryAfter(_ value: String, now: Int64) -> Duration? {
        let trimmed = value.trimmingASCIIWhitespace()
        if let seconds = ContentRange.parseDigits(trimmed) { return .seconds(seconds) }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        return .seconds(max(0, date - now))
    }

    private func pow2(_ exponent: Double) -> Double {
        var result = 1.0
        for _ in 0..<Int(exponent) { result *= 2 }
        return result
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    public var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
