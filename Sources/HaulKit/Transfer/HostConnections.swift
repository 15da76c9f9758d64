import Foundation
import NIOConcurrencyHelpers

/// The connections an engine's downloads hold to each host, shared by ``ConnectionShare``'s rules: each running
/// download gets one, segments use the spare ones and give them back when another download needs one. A download
/// that cannot get its first connection waits here (and says so) instead of queueing unseen in the HTTP client's
/// pool, where it would show 0 B/s and never time out.
final class HostConnections: Sendable {
    private struct State {
        var hosts: [String: ConnectionShare] = [:]
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextID = 0
    }

    let limit: Int
    private let state = NIOLockedValueBox(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// A fresh identity for one download's claims.
    func makeID() -> Int {
        state.withLockedValue { state in
            state.nextID += 1
            return state.nextID
        }
    }

    /// Takes the first connection of download `id` to `host`, waiting for one when the host is full;
    /// `waiting` is called once when it has to wait. Cancellation ends the wait.
    func first(_ id: Int, host: String, waiting: () -> Void) async throws {
        let granted = state.withLockedValue { state in
            state.hosts[host, default: ConnectionShare(limit: limit)].requestFirst(id)
        }
        if granted { return }
        waiting()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let admitted = state.withLockedValue { state -> Bool in
                    // Admitted meanwhile, or cancelled before suspending: no need to wait.
                    if state.hosts[host]?.connections(of: id) ?? 0 > 0 || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if admitted { continuation.resume() }
            }
            try Task.checkCancellation()
        } onCancel: {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Void, any Error>? in
                state.waiters.removeValue(forKey: id)
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Segmented download `id` would use `count` connections.
    func setWants(_ id: Int, host: String, _ count: Int) {
        state.withLockedValue { $0.hosts[host]?.setWants(id, count) }
    }

    /// Another connection for segmented download `id`, if its share allows one now.
    func extra(_ id: Int, host: String) -> Bool {
        state.withLockedValue { $0.hosts[host]?.requestExtra(id) ?? false }
    }

    /// Whether `id` holds more connections than its share (another download needs one).
    func shouldGiveBack(_ id: Int, host: String) -> Bool {
        state.withLockedValue { $0.hosts[host]?.shouldGiveBack(id) ?? false }
    }

    func releaseExtra(_ id: Int, host: String) {
        admit(host) { $0.releaseExtra(id) }
    }

    /// Download `id` ended: all its connections (or its place in the queue) are free.
    func releaseAll(_ id: Int, host: String) {
        admit(host) { $0.releaseAll(id) }
    }

    private func admit(_ host: String, _ change: (inout ConnectionShare) -> [Int]) {
        let resumed = state.withLockedValue { state -> [CheckedContinuation<Void, any Error>] in
            guard var share = state.hosts[host] else { return [] }
            let admitted = change(&share)
            state.hosts[host] = share.isIdle ? nil : share
            return admitted.compactMap { state.waiters.removeValue(forKey: $0) }
        }
        for waiter in resumed { waiter.resume() }
    }
}
