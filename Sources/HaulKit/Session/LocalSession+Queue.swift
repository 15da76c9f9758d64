import Foundation

// The waiting queue as a session sees it: a window of the store's waiting tasks, and which of them start next under
// the session's and each host's limits.
extension LocalSession {
    /// Keeps the waiting queue in step with a task as it was just stored.
    func noteStored(_ task: StoredTask) {
        if task.state == .waiting {
            window.waiting(Self.entry(task))
        } else {
            window.notWaiting(task.id)
        }
    }

    /// A waiting task as the queue keeps it.
    static func entry(_ task: StoredTask) -> WaitingQueue.Entry {
        WaitingQueue.Entry(
            id: task.id, priority: task.priority, sequence: task.sequence, host: host(of: task.url), hostLimit: task.spec.maxConnectionsPerHost)
    }

    /// The task `id` is no longer stored.
    func forget(_ id: String) { window.notWaiting(id) }

    /// The waiting tasks to start now, in order (still queued); first reads the next page of the queue from the
    /// store when the window runs low, or when slots would stay free because every task held waits for a busy host.
    func chooseNext() async -> [WaitingQueue.Entry] {
        // Bounded: each read completes the window or grows it by a page, up to its most.
        for _ in 0..<64 {
            let chosen = nextToStart()
            let blocked = chosen.count < currentMaxConcurrent - runningCount
            guard window.needsRefill(blocked: blocked), await readNextPage() else { return chosen }
        }
        return nextToStart()
    }

    /// Reads the next page of waiting tasks into the window; false when the store could not be read.
    private func readNextPage() async -> Bool {
        let (after, limit) = window.beginRefill()
        do {
            let page = try await store.tasks(in: .waiting, after: after, limit: limit)
            window.refilled(page.map(Self.entry), asked: limit)
            return true
        } catch {
            window.refillFailed()
            return false
        }
    }

    /// The waiting tasks to start now, in order (still queued), from the window.
    func nextToStart() -> [WaitingQueue.Entry] {
        window.next(
            slots: currentMaxConcurrent - runningCount, runningPerHost: runningPerHost(), maxPerHost: maxDownloads(to:),
            unreachable: engine.unreachableHosts)
    }

    /// How many of the session's downloads may run against `host` at once: its per-host limit, or, for a host that
    /// speaks HTTP/2 (its downloads are streams of one connection), as many as the session runs.
    /// A fleet-wide per-host limit caps it too.
    func maxDownloads(to host: String) -> Int {
        let own = engine.connections.isMultiplexed(host) ? max(currentMaxConcurrent, configuration.maxDownloadsPerHost) : configuration.maxDownloadsPerHost
        return min(own, configuration.fleetMaxConnectionsPerHost ?? Int.max)
    }

    var hasWaitingTasks: Bool { !window.isEmpty }
    /// The waiting task `id` as the window holds it.
    func waitingEntry(_ id: String) -> WaitingQueue.Entry? { window.queue.entry(id) }
    /// How many tasks wait: `nil` when the window holds only the first of them.
    var waitingCount: Int? { window.isComplete ? window.queue.count : nil }

    /// Whether no task of `host` waits soon: none in the window, which holds the next few thousand (or every) waiting
    /// tasks. One of its tasks further on would find a keep-alive connection that sat idle through thousands of
    /// downloads, one descriptor and some memory per host passed: like curl, whose connection cache holds four per
    /// transfer it runs at once, Haul does not keep those.
    func nothingWaits(for host: String) -> Bool { window.queue.count(of: host) == 0 }

    /// The server a task counts against for the per-host cap: its `host:port` (as the engine shares connections).
    static func host(of url: String) -> String { URL(string: url).map(Origin.authority(of:)) ?? "" }
}
