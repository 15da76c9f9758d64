/// When a daemon with nothing to do exits: after it has been idle — no task running or waiting, no client
/// connected, no request under way — for ``limit`` without a break. A pure clock-driven rule: the daemon
/// reports what it sees and when, and is told whether to exit.
package struct IdleExit: Sendable, Equatable {
    /// How long the daemon must be idle before it exits; zero (or less) means never.
    public let limit: Duration
    /// When the daemon was first seen idle in the current idle stretch, on the caller's clock.
    public private(set) var idleSince: Duration?

    /// What the daemon is doing at one moment.
    public struct Activity: Sendable, Equatable {
        /// Tasks running or waiting to run, in every open session.
        public var tasks: Int
        /// Clients connected to the socket.
        public var connections: Int
        /// Requests being carried out, and sessions opening or closing.
        public var requests: Int

        public init(tasks: Int = 0, connections: Int = 0, requests: Int = 0) {
            self.tasks = tasks
            self.connections = connections
            self.requests = requests
        }

        /// Nothing at all is going on.
        public var isIdle: Bool { tasks <= 0 && connections <= 0 && requests <= 0 }
    }

    public enum Decision: Sendable, Equatable {
        /// Keep running; look again after this long (`nil`: never look again, the daemon never idles out).
        case stay(lookAgainIn: Duration?)
        /// Idle for the whole limit: exit.
        case exit
    }

    public init(limit: Duration) {
        self.limit = limit
    }

    /// Whether idling out is on at all.
    public var isEnabled: Bool { limit > .zero }

    /// How often the daemon should look: often enough to exit within about a quarter of the limit of it having
    /// passed, at most every 15 s and at least every 50 ms.
    public var interval: Duration { min(max(limit / 4, .milliseconds(50)), .seconds(15)) }

    /// Records what the daemon is doing at `now` (any monotonic clock, the same for every call) and decides.
    public mutating func observe(_ activity: Activity, at now: Duration) -> Decision {
        guard isEnabled else { return .stay(lookAgainIn: nil) }
        guard activity.isIdle else {
            idleSince = nil
            return .stay(lookAgainIn: interval)
        }
        let since = idleSince ?? now
        idleSince = since
        if now - since >= limit { return .exit }
        return .stay(lookAgainIn: min(interval, limit - (now - since)))
    }
}
