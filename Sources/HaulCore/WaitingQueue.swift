/// The waiting tasks of a session, kept in memory in the scheduler's order (higher priority first, then first
/// in first out), one queue per host, and the hosts in the order of their first task (``HostHeads``), so that
/// choosing what to start next visits the hosts from the front until the free slots are filled (and the full ones
/// among them), not every host with a task waiting: a list over thousands of hosts costs no more per task than one
/// over a few.
///
/// ``next(slots:runningPerHost:maxPerHost:)`` chooses exactly what the plain rule (kept as a model in the tests,
/// SchedulerModel.swift) would choose from every task: walking the waiting tasks in order and skipping those whose
/// host is full is the same as taking the first free-slot's worth of each host with room, merged in order.
package struct WaitingQueue: Sendable {
    public struct Entry: Equatable, Sendable {
        public var id: String
        public var priority: Int
        public var sequence: Int64
        public var host: String
        /// The task's own `--max-connections-per-host`, which lets its host run that many while it is next.
        public var hostLimit: Int?

        public init(id: String, priority: Int, sequence: Int64, host: String, hostLimit: Int? = nil) {
            self.id = id
            self.priority = priority
            self.sequence = sequence
            self.host = host
            self.hostLimit = hostLimit
        }

        /// Whether `self` runs before `other`.
        func precedes(_ other: Entry) -> Bool { position.precedes(other.position) }
        /// Whether `self` runs before a task at `position`.
        func precedes(position other: QueuePosition) -> Bool { position.precedes(other) }

        /// Where it stands in the queue's order.
        public var position: QueuePosition { QueuePosition(priority: priority, sequence: sequence) }
    }

    /// One host's waiting tasks in order from `start` on (the ones before it were taken; compacted now and then).
    private struct HostQueue {
        var entries: [Entry] = []
        var start = 0
        var count: Int { entries.count - start }
        /// The position of the first task (the queue is never kept empty).
        var first: QueuePosition { entries[start].position }

        /// Where `entry` goes (or is), by binary search over the live part.
        func position(of entry: Entry) -> Int {
            var low = start, high = entries.count
            while low < high {
                let mid = (low + high) / 2
                if entries[mid].precedes(entry) { low = mid + 1 } else { high = mid }
            }
            return low
        }

        mutating func insert(_ entry: Entry) {
            if let last = entries.last, start < entries.count, !last.precedes(entry) {
                entries.insert(entry, at: position(of: entry))
            } else {
                entries.append(entry)    // the usual case: a task added after the others
            }
        }

        mutating func remove(_ entry: Entry) {
            let index = position(of: entry)
            guard index < entries.count, entries[index].id == entry.id else { return }
            if index == start {
                start += 1
                if start > 64, start * 2 > entries.count {
                    entries.removeFirst(start)
                    start = 0
                }
            } else {
                entries.remove(at: index)
            }
        }
    }

    private var byID: [String: Entry] = [:]
    private var hosts: [String: HostQueue] = [:]
    private var heads = HostHeads()

    public init() {}

    public var count: Int { byID.count }
    public var isEmpty: Bool { byID.isEmpty }
    public func contains(_ id: String) -> Bool { byID[id] != nil }

    /// The waiting task `id`, if it is waiting.
    public func entry(_ id: String) -> Entry? { byID[id] }
    /// The entries the hosts' order holds, live and stale (for tests: it stays within twice the hosts, plus a few).
    var heldHostHeads: Int { heads.count }
    /// How many entries of `host` wait.
    public func count(of host: String) -> Int { hosts[host]?.count ?? 0 }

    /// Adds `entry`, replacing a waiting task with the same id (a changed priority moves it).
    public mutating func insert(_ entry: Entry) {
        remove(entry.id)
        byID[entry.id] = entry
        let before = hosts[entry.host]?.first
        hosts[entry.host, default: HostQueue()].insert(entry)
        if before.map({ entry.precedes(position: $0) }) ?? true {
            heads.push(.init(position: entry.position, host: entry.host))
            tidyHeads()
        }
    }

    /// Removes the task `id` if it is waiting; returns it.
    @discardableResult
    public mutating func remove(_ id: String) -> Entry? {
        guard let entry = byID.removeValue(forKey: id) else { return nil }
        hosts[entry.host]?.remove(entry)
        if let queue = hosts[entry.host] {
            if queue.count == 0 {
                hosts[entry.host] = nil
            } else if entry.precedes(position: queue.first) {
                heads.push(.init(position: queue.first, host: entry.host))    // it was the first: the next one is
            }
        }
        tidyHeads()
        return entry
    }

    /// Drops the stale entries of the hosts' order from its top, or all of them once they outnumber the live ones.
    private mutating func tidyHeads() {
        let hosts = self.hosts
        heads.dropStale { hosts[$0.host]?.first == $0.position }
        if heads.needsRebuild(hosts: hosts.count) {
            heads.rebuild(hosts.map { .init(position: $0.value.first, host: $0.key) })
        }
    }

    public mutating func removeAll() {
        byID = [:]
        hosts = [:]
        heads.removeAll()
    }

    /// Keeps the first `limit` tasks in the queue's order and drops the rest; the position of the last one kept
    /// (`nil` when nothing was dropped).
    public mutating func trim(to limit: Int) -> QueuePosition? {
        guard count > limit else { return nil }
        let kept = byID.values.sorted { $0.precedes($1) }.prefix(max(0, limit))
        removeAll()
        for entry in kept { insert(entry) }
        return kept.last?.position ?? QueuePosition(priority: Int.max, sequence: Int64.min)
    }

    /// Drops the tasks that come after `position` in the queue's order.
    public mutating func drop(after position: QueuePosition) {
        for entry in byID.values where position.precedes(entry.position) { remove(entry.id) }
    }

    /// The waiting tasks to start, in order, for `slots` free slots when `runningPerHost` run on each host and a
    /// host runs at most `maxPerHost` (at least 1). The tasks stay queued until ``remove(_:)``.
    public func next(slots: Int, runningPerHost: [String: Int], maxPerHost: Int) -> [Entry] {
        next(slots: slots, runningPerHost: runningPerHost, maxPerHost: { _ in maxPerHost })
    }

    /// ``next(slots:runningPerHost:maxPerHost:)`` with a cap of its own for each host (a host that speaks HTTP/2
    /// runs its downloads as streams of one connection, and is capped only by the session's `slots`).
    ///
    /// The downloads of a host in `unreachable` (its last connection was refused, or its name did not resolve) go
    /// last, whatever their priority: a slot that frees up goes to another host's download while there is one,
    /// instead of to the next download of a host that is down, which would hold it for its whole backoff. With nothing
    /// else waiting they start as before.
    public func next(slots: Int, runningPerHost: [String: Int], maxPerHost: (String) -> Int, unreachable: Set<String> = []) -> [Entry] {
        guard slots > 0 else { return [] }
        var candidates: [Entry] = []
        var last: [Entry] = []
        // Hosts in the order of their first task. Once `slots` hosts gave candidates, every later host's tasks come
        // after `slots` candidates (those hosts' first tasks) and cannot be chosen: the walk stops there.
        var hostsWithRoom = 0
        var visited: Set<String> = []
        heads.walk { head in
            let host = head.host
            guard let queue = hosts[host], queue.first == head.position, visited.insert(host).inserted else { return true }
            let cap = max(1, maxPerHost(host), queue.entries[queue.start].hostLimit ?? 0)
            let room = min(cap - runningPerHost[host, default: 0], slots)
            guard room > 0 else { return true }
            let entries = queue.entries[queue.start..<(queue.start + min(room, queue.count))]
            if unreachable.contains(host) {
                last += entries
            } else {
                candidates += entries
                hostsWithRoom += 1
            }
            return hostsWithRoom < slots
        }
        candidates.sort { $0.precedes($1) }
        guard candidates.count < slots, !last.isEmpty else { return Array(candidates.prefix(slots)) }
        last.sort { $0.precedes($1) }
        return candidates + last.prefix(slots - candidates.count)
    }
}

/// Where a waiting task stands in a session's queue: higher priority first, then in the order added (`sequence`).
package struct QueuePosition: Equatable, Sendable {
    public var priority: Int
    public var sequence: Int64

    public init(priority: Int, sequence: Int64) {
        self.priority = priority
        self.sequence = sequence
    }

    /// Whether a task at `self` runs before one at `other`.
    public func precedes(_ other: QueuePosition) -> Bool {
        priority != other.priority ? priority > other.priority : sequence < other.sequence
    }
}
