// Why waiting tasks do not start although the session has room: their host's limit is reached. Each such task says
// so in its snapshot (`haul ls`, `--json`), and a live view says so beside its counts.
extension LocalSession {
    /// Why the waiting task `id` has not started although the session has room: its host's limit is reached. Or the
    /// session has no room at all: its limit is 0 downloads at once.
    func heldBackNote(_ id: String) -> String? {
        if currentMaxConcurrent == 0 { return HeldBackNote.sessionRunsNone }
        guard let entry = waitingEntry(id),
              let limit = reachedLimit(of: entry.host, running: runningPerHost()[entry.host, default: 0], taskLimit: entry.hostLimit)
        else { return nil }
        return HeldBackNote.text(limit: limit, host: entry.host)
    }

    /// The waiting tasks, and the per-host limit holding some of them back while the session has room for more.
    /// Costs as much as the running downloads: only the hosts they run against can be at their limit.
    func waitingSummary() -> WaitingSummary {
        let limits = runningPerHost().compactMap { host, running in
            nothingWaits(for: host) ? nil : reachedLimit(of: host, running: running, taskLimit: nil)
        }
        return WaitingSummary(waiting: waitingCount, heldBackPerHost: limits.max())
    }

    /// The limit of `host` (a task's own, `taskLimit`, when higher) when `running` downloads against it reach it while
    /// the session has room for more; `nil` otherwise.
    private func reachedLimit(of host: String, running: Int, taskLimit: Int?) -> Int? {
        guard runningCount < currentMaxConcurrent else { return nil }
        let limit = max(maxDownloads(to: host), taskLimit ?? 0)
        return running >= limit ? limit : nil
    }
}
