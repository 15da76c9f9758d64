// Why waiting tasks do not start although the session has room: their host's limit is reached. Each such task says
// so in its snapshot (`haul ls`, `--json`), and a live view says so beside its counts.
extension LocalSession {
    /// Why the waiting task `id` has not started although the session has room: its host's limit is reached.
    func heldBackNote(_ id: String) -> String? {
        guard let entry = waitingEntry(id), runningCount < currentMaxConcurrent else { return nil }
        let limit = max(maxDownloads(to: entry.host), entry.hostLimit ?? 0)
        guard runningPerHost()[entry.host, default: 0] >= limit else { return nil }
        return HeldBackNote.text(limit: limit, host: entry.host)
    }

    /// The waiting tasks, and the per-host limit holding some of them back while the session has room for more.
    /// Costs as much as the running downloads: only the hosts they run against can be at their limit.
    func waitingSummary() -> WaitingSummary {
        var limit: Int?
        if runningCount < currentMaxConcurrent {
            for (host, running) in runningPerHost() where !nothingWaits(for: host) {
                let hostLimit = maxDownloads(to: host)
                if running >= hostLimit { limit = max(limit ?? 0, hostLimit) }
            }
        }
        return WaitingSummary(waiting: waitingCount, heldBackPerHost: limit)
    }
}
