@testable import HaulCore

// The plain rule of which waiting tasks start, kept as the model the session's `WaitingQueue` is checked against
// (WaitingQueueTests): it looks at every task each time, which the queue must never need to.

/// One task as the scheduler sees it.
struct SchedulerEntry: Equatable, Sendable {
    var id: String
    var state: TaskState
    var priority: Int
    var sequence: Int64
    var host: String

    init(id: String, state: TaskState, priority: Int, sequence: Int64, host: String) {
        self.id = id
        self.state = state
        self.priority = priority
        self.sequence = sequence
        self.host = host
    }
}

/// Which waiting tasks to start: higher priority first, then first in first out, within the caps on
/// concurrent downloads and on downloads per host. A task whose host is full does not hold back others.
enum Scheduler {
    static func tasksToStart(_ entries: [SchedulerEntry], maxConcurrent: Int, maxPerHost: Int) -> [String] {
        var perHost: [String: Int] = [:]
        var running = 0
        for entry in entries where entry.state == .running {
            running += 1
            perHost[entry.host, default: 0] += 1
        }
        var slots = max(0, maxConcurrent - running)
        guard slots > 0 else { return [] }
        let waiting = entries.filter { $0.state == .waiting }.sorted {
            $0.priority != $1.priority ? $0.priority > $1.priority : $0.sequence < $1.sequence
        }
        var chosen: [String] = []
        for entry in waiting where slots > 0 {
            guard perHost[entry.host, default: 0] < max(1, maxPerHost) else { continue }
            perHost[entry.host, default: 0] += 1
            chosen.append(entry.id)
            slots -= 1
        }
        return chosen
    }
}
