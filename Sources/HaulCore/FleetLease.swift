/// A node's hold on a task of a store that several daemons share (a fleet): the node's name and the epoch of its
/// claim. Every claim of a task raises its epoch, so the pair names one claim: a write made under a lease the store
/// no longer shows (another node took the task, or it was released) is refused. The epoch is the fencing token.
public struct TaskLease: Hashable, Sendable {
    /// The node that claimed the task (`haul daemon --node`).
    public var node: String
    /// Raised by one at each claim of the task.
    public var epoch: Int64

    /// The lease of claim `epoch` by `node`.
    public init(node: String, epoch: Int64) {
        self.node = node
        self.epoch = epoch
    }

    /// Whether a task stored as `state`, held by `node` under `epoch`, is still held under this lease: a write made
    /// with the lease may go on. The store applies the same rule to every write it is asked to fence.
    public func isHeld(state: TaskState, node: String?, epoch: Int64) -> Bool {
        state == .running && node == self.node && epoch == self.epoch
    }

    /// Whether a version of the task's row, read at any time (a reader may get it after newer writes), shows that
    /// this lease was taken: a later claim (a higher epoch, as every claim and every request carried out for a node
    /// that is gone raises it), or this epoch under another node. A row of an earlier epoch is an older version,
    /// read before this claim: it says nothing about the lease.
    public func isSuperseded(node: String?, epoch: Int64) -> Bool {
        epoch > self.epoch || (epoch == self.epoch && node != self.node)
    }
}

/// How long a lease lasts, how often its holder renews it, and until when the holder may still write for the task.
///
/// The database alone decides when a lease has expired: a renewal sets the expiry to its own clock's now plus
/// ``duration``, and another node may claim the task only once the database's clock has passed it. The holder
/// never reads a wall clock: it counts on its monotonic clock from the moment it *sent* the renewal, which is before
/// the database received it, and stops writing ``margin`` before even that earlier expiry. So a node whose clock
/// is off by any amount, or a network that delays the answer, cannot make two nodes write one task at once; only the
/// rates of the clocks matter, and the margin covers their drift and a write already under way.
public struct LeaseTerms: Sendable, Equatable {
    /// How long a claim or renewal holds the task, by the database's clock.
    public var duration: Duration

    /// Leases of `duration` (at least 3 seconds).
    public init(duration: Duration = .seconds(30)) {
        self.duration = max(duration, .seconds(3))
    }

    /// How often a holder renews its leases: six times per lease, so that a database away for most of a lease
    /// (a restart) does not cost it.
    public var renewalInterval: Duration { duration / 6 }

    /// How long before the database's expiry the holder stops writing.
    public var margin: Duration { duration / 6 }

    /// Until when, on the holder's monotonic clock, it may write for a task whose claim or renewal it sent at `sent`
    /// and the database accepted.
    public func writableUntil<Instant: InstantProtocol>(sentAt sent: Instant) -> Instant where Instant.Duration == Duration {
        sent.advanced(by: duration - margin)
    }

    /// Whether the holder may still write at `now`, given ``writableUntil(sentAt:)``.
    public func mayWrite<Instant: InstantProtocol>(until deadline: Instant, now: Instant) -> Bool {
        now < deadline
    }

    /// Whether a renewal is due at `now`, the last one having been sent at `lastSent`.
    public func renewalDue<Instant: InstantProtocol>(lastSent: Instant, now: Instant) -> Bool where Instant.Duration == Duration {
        lastSent.duration(to: now) >= renewalInterval
    }
}
