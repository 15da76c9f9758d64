// How often the dashboard's event stream sends one task's events: pure rules, time passed in.

/// At most one event per key per interval (the dashboard's `segments` events: two a second per task). Pure.
public struct KeyedThrottle: Sendable {
    public let interval: Duration
    private var lastSent: [String: ContinuousClock.Instant] = [:]

    public init(interval: Duration) { self.interval = interval }

    /// Whether an event for `key` may go at `now` (and if so, records it).
    public mutating func allow(_ key: String, at now: ContinuousClock.Instant) -> Bool {
        if let last = lastSent[key], now - last < interval { return false }
        lastSent[key] = now
        return true
    }

    /// Forgets `key` (its task ended): its next event goes at once.
    public mutating func forget(_ key: String) { lastSent[key] = nil }

    public var count: Int { lastSent.count }
}

/// At most `count` events per key in any `window` (the dashboard's `progress` events: four a second per task,
/// whatever a session's progressInterval says). Pure.
public struct KeyedRateWindow: Sendable {
    public let count: Int
    public let window: Duration
    /// Per key, the times of the last `count` events let through, oldest first.
    private var recent: [String: [ContinuousClock.Instant]] = [:]

    public init(count: Int, window: Duration) {
        self.count = max(1, count)
        self.window = window
    }

    /// Whether an event for `key` may go at `now` (and if so, records it).
    public mutating func allow(_ key: String, at now: ContinuousClock.Instant) -> Bool {
        var times = recent[key] ?? []
        if times.count >= count, let oldest = times.first, now - oldest < window { return false }
        times.append(now)
        if times.count > count { times.removeFirst(times.count - count) }
        recent[key] = times
        return true
    }

    /// Forgets `key` (its task stopped running).
    public mutating func forget(_ key: String) { recent[key] = nil }

    public var keys: Int { recent.count }
}
