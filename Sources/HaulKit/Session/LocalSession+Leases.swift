import Foundation

// A fleet node's leases on the tasks it runs: held, renewed, lost and given back.
extension LocalSession {
    func hold(_ id: String, _ lease: TaskLease, _ gate: LeaseGate) {
        fleet.leases[id] = (lease, gate)
    }

    /// Forgets the lease of a task that stopped here.
    func release(_ id: String) {
        fleet.leases[id] = nil
        fleet.ending[id] = nil
    }

    /// The download of `id` ended: its lease is no longer a running download's (no gate to keep open, nothing to
    /// stop), only the right to write how it ended. That write is tried until the store takes it (``write(for:retrying:_:)``);
    /// meanwhile the lease is renewed only while the end waits for the store, a bounded number of times (none when
    /// it `lapsed`: nothing is written then, and the lease is left to expire).
    func endRun(_ id: String, lapsed: Bool = false) {
        guard let held = fleet.leases.removeValue(forKey: id) else { return }
        fleet.ending[id] = .init(lease: held.lease, renewals: lapsed ? 0 : Self.endingRenewals)
    }

    /// How many renewals that go through an ended task's lease still gets: a lease's length (six renewals).
    static let endingRenewals = 6

    /// Whether `id` stopped because its lease was lost (then forgotten).
    func dropLost(_ id: String) -> Bool {
        guard fleet.lost.remove(id) != nil else { return false }
        release(id)
        fleet.removals.remove(id)
        return true
    }

    /// `id`, about to be stopped, is to be removed once it has (a client of this session asked).
    func markRemoving(_ id: String) {
        fleet.removals.insert(id)
    }

    /// Whether `id`, just stopped, is to be removed (a client or another node asked); forgotten once asked.
    func removing(_ id: String) -> Bool {
        fleet.removals.remove(id) != nil
    }

    /// The lease of `id` is lost: its download stops writing at once (the gate closes) and is stopped; nothing more
    /// is written about the task here.
    func loseLease(_ id: String) {
        guard let held = fleet.leases[id] else { return }
        held.gate.revoke()
        guard isRunning(id) else {
            fleet.leases[id] = nil
            return
        }
        fleet.lost.insert(id)
        cancelRunning(id)
    }

    /// Renews every lease held; one not renewed is lost, and one whose deadline passed (the store out of reach for
    /// too long) is given up before another node may claim the task.
    func renewLeases(_ shared: any SharedSessionStore) async {
        for (id, held) in fleet.leases where !held.gate.isOpen { loseLease(id) }
        await takeOverWhenDue()
        // Only the leases still open: a lost one (its download stopping) is never renewed again, and an ended task's
        // only while its end waits for the store (its renewals counted).
        var leases = fleet.leases.filter { $0.value.gate.isOpen }.mapValues(\.lease)
        for (id, run) in fleet.ending where run.renewals > 0 { leases[id] = run.lease }
        guard !leases.isEmpty else { return }
        let sent = ContinuousClock.now
        guard let renewed = try? await shared.renew(leases) else { return }
        for (id, lease) in leases {
            if let run = fleet.ending[id], run.lease == lease {
                fleet.ending[id]?.renewals -= 1
                continue
            }
            guard let held = fleet.leases[id], held.lease == lease else { continue }
            if renewed.contains(id) { held.gate.renewed(sentAt: sent) } else { loseLease(id) }
        }
        // The store is back: what could not be saved while it was away is saved now.
        if records.hasUnsaved {
            let records = self.records
            try? await BlockingIO.run { records.saveUnsaved() }
        }
    }

    /// Claims again when other nodes run tasks and this node has a free slot: no one rings when a node dies, so its
    /// tasks are taken over by a claim made after their leases expired (at most a renewal interval late).
    private func takeOverWhenDue() async {
        guard !isClosed, currentMaxConcurrent > runningCount else { return }
        // Not a task this node is still writing the end of: it is not dead.
        guard fleet.known.contains(where: { $0.value.state == .running && fleet.leases[$0.key] == nil && fleet.ending[$0.key] == nil })
        else { return }
        fleet.mayHaveWork = true
        await schedule()
    }
}
