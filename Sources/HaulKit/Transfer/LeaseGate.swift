import NIOConcurrencyHelpers

/// Whether a node may still write for a task it runs under a lease (a fleet): open until the deadline its last
/// accepted claim or renewal allows (``LeaseTerms/writableUntil(sentAt:)``), or until the lease is known lost.
/// The download checks it before every write to its file and before moving the file into place, so a node that lost
/// the task, or could not renew in time, stops writing at once, before another node may claim it.
package final class LeaseGate: Sendable {
    private let state: NIOLockedValueBox<(until: ContinuousClock.Instant, revoked: Bool)>
    private let terms: LeaseTerms

    /// A gate for a claim sent at `sent`.
    package init(terms: LeaseTerms, sentAt sent: ContinuousClock.Instant) {
        self.terms = terms
        state = NIOLockedValueBox((terms.writableUntil(sentAt: sent), false))
    }

    /// Whether writing is allowed now.
    package var isOpen: Bool {
        let (until, revoked) = state.withLockedValue { $0 }
        return !revoked && terms.mayWrite(until: until, now: ContinuousClock.now)
    }

    /// Throws unless writing is allowed now.
    package func check() throws(HaulError) {
        guard isOpen else {
            throw HaulError(.interrupted, "this node's lease on the task ended; another node of the fleet may take it over", reason: .interrupted)
        }
    }

    /// A renewal sent at `sent` was accepted: writing is allowed until its deadline (never moved back).
    package func renewed(sentAt sent: ContinuousClock.Instant) {
        let until = terms.writableUntil(sentAt: sent)
        state.withLockedValue { if until > $0.until { $0.until = until } }
    }

    /// The lease is lost: no more writes.
    package func revoke() {
        state.withLockedValue { $0.revoked = true }
    }
}
