import Foundation
import NIOConcurrencyHelpers

/// The connections an engine's downloads hold to each host, shared by ``ConnectionShare``'s rules: each running
/// download gets one, segments use the spare ones and give them back when another download needs one. A download
/// that cannot get its first connection waits here (and says so) instead of queueing unseen in the HTTP client's
/// pool, where it would show 0 B/s and never time out.
///
/// A host that answered over HTTP/2 is *multiplexed*: downloads that may use HTTP/2 (``first(_:host:multiplexable:waiting:)``)
/// are streams of its one connection and take no connection here, so they never wait for one; the server's own
/// limit on streams (`SETTINGS_MAX_CONCURRENT_STREAMS`) is kept by the HTTP client.
final class HostConnections: Sendable {
    private struct State {
        var hosts: [String: ConnectionShare] = [:]
        var waiters: [Int: (continuation: CheckedContinuation<Void, any Error>, multiplexable: Bool, host: String)] = [:]
        /// The hosts that answered over HTTP/2, 4,096 at most (an arbitrary one is forgotten to make room): one
        /// forgotten is learned again by its next download, which meanwhile takes a connection as over HTTP/1.1.
        var multiplexed: Set<String> = []
        var nextID = 0
    }

    let limit: Int
    private let state = NIOLockedValueBox(State())
    /// Called for each host found to speak HTTP/2 (a session then runs more of its downloads at once); again for a
    /// host that had been forgotten (``State/multiplexed``) and is found again.
    private let multiplexedObserver = NIOLockedValueBox<(@Sendable (String) -> Void)?>(nil)

    /// Calls `observer` with each host found to speak HTTP/2 from now on.
    func onMultiplexed(_ observer: @escaping @Sendable (String) -> Void) {
        multiplexedObserver.withLockedValue { $0 = observer }
    }

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
    /// `waiting` is called once when it has to wait. Cancellation ends the wait. A `multiplexable` download (one
    /// that may be an HTTP/2 stream) takes none once the host is known to be multiplexed, and stops waiting when it
    /// becomes so: ``holds(_:host:)`` then says `false`.
    /// `allowing`: the download's own limit of connections to the host, which raises the host's while it is in use.
    func first(_ id: Int, host: String, allowing: Int? = nil, multiplexable: Bool = false, waiting: () -> Void) async throws {
        let (granted, admitted) = state.withLockedValue { state -> (Bool, [CheckedContinuation<Void, any Error>]) in
            if multiplexable, state.multiplexed.contains(host) { return (true, []) }
            var share = state.hosts[host] ?? ConnectionShare(limit: limit)
            let raised = allowing.map { share.raiseLimit(to: $0) } ?? []
            let granted = share.requestFirst(id)
            state.hosts[host] = share
            return (granted, raised.compactMap { state.waiters.removeValue(forKey: $0)?.continuation })
        }
        for waiter in admitted { waiter.resume() }
        if granted { return }
        waiting()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let admitted = state.withLockedValue { state -> Bool in
                    // Admitted meanwhile, or cancelled before suspending: no need to wait.
                    if state.hosts[host]?.connections(of: id) ?? 0 > 0 || Task.isCancelled { return true }
                    if multiplexable, state.multiplexed.contains(host) {
                        state.hosts[host]?.releaseAll(id)
                        return true
                    }
                    state.waiters[id] = (continuation, multiplexable, host)
                    return false
                }
                if admitted { continuation.resume() }
            }
            try Task.checkCancellation()
        } onCancel: {
            let waiter = state.withLockedValue { state in state.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Whether download `id` holds a connection to `host` (not when it runs as an HTTP/2 stream).
    func holds(_ id: Int, host: String) -> Bool {
        state.withLockedValue { ($0.hosts[host]?.connections(of: id) ?? 0) > 0 }
    }

    /// Whether `host` answered over HTTP/2.
    func isMultiplexed(_ host: String) -> Bool {
        state.withLockedValue { $0.multiplexed.contains(host) }
    }

    /// `host` answered over HTTP/2: downloads that may be streams stop waiting for a connection (and download
    /// `id`, which learned it, gives its connection back).
    func markMultiplexed(_ host: String, by id: Int) {
        let (resumed, first) = state.withLockedValue { state -> ([CheckedContinuation<Void, any Error>], Bool) in
            let first = state.multiplexed.insert(host, keepingAtMost: hostsRemembered)
            let streams = state.waiters.filter { $0.value.multiplexable && $0.value.host == host }.map(\.key)
            var resumed: [CheckedContinuation<Void, any Error>] = []
            for waiter in streams {
                state.hosts[host]?.releaseAll(waiter)
                if let entry = state.waiters.removeValue(forKey: waiter) { resumed.append(entry.continuation) }
            }
            return (resumed, first)
        }
        for continuation in resumed { continuation.resume() }
        if first { multiplexedObserver.withLockedValue { $0 }?(host) }
        releaseAll(id, host: host)
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
            return admitted.compactMap { state.waiters.removeValue(forKey: $0)?.continuation }
        }
        for waiter in resumed { waiter.resume() }
    }
}
