// How often the dashboard's event stream sends one task's events: pure rules, time passed in.

/// At most one event per key per interval (the dashboard's `segments` and `progress` events: about two a second per task). Pure.
package struct KeyedThrottle: Sendable {
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
