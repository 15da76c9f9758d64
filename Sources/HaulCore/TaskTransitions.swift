/// What can happen to a task in a session.
public enum TaskCommand: Equatable, Sendable {
    /// The scheduler gives the task a slot.
    case start
    /// Out of its slot or the queue, bytes kept (from waiting or running).
    case pause
    /// Back into the queue (from paused, failed or cancelled).
    case resume
    /// Stopped for good (from waiting, running, paused or failed).
    case cancel
    /// The transfer completed and the file is at its final path (from running).
    case finish
    /// The transfer gave up (from running).
    case fail
}

/// The task state machine: which stable state a command leads to, or `nil` when it does not apply.
package enum TaskTransitions {
    public static func apply(_ command: TaskCommand, to state: TaskState) -> TaskState? {
        switch (state, command) {
        case (.waiting, .start): return .running
        case (.waiting, .pause), (.running, .pause): return .paused
        case (.paused, .resume), (.failed, .resume), (.cancelled, .resume): return .waiting
        case (.waiting, .cancel), (.running, .cancel), (.paused, .cancel), (.failed, .cancel): return .cancelled
        case (.running, .finish): return .finished
        case (.running, .fail): return .failed
        default: return nil
        }
    }

    /// The state a task is restored in when its session opens again after the process ended.
    /// A task that was running resumes (`.waiting`) or is restored as paused, as configured.
    public static func restored(_ state: TaskState, resumeRunning: Bool) -> TaskState {
        guard state == .running else { return state }
        return resumeRunning ? .waiting : .paused
    }

    /// Whether the task has reached an end (no slot, nothing left to do).
    public static func isEnded(_ state: TaskState) -> Bool {
        state == .finished || state == .failed || state == .cancelled
    }
}

/// One task as the scheduler sees it.
package struct SchedulerEntry: Equatable, Sendable {
    public var id: String
    public var state: TaskState
    public var priority: Int
    public var sequence: Int64
    public var host: String

    public init(id: String, state: TaskState, priority: Int, sequence: Int64, host: String) {
        self.id = id
        self.state = state
        self.priority = priority
        self.sequence = sequence
        self.host = host
    }
}

/// Which waiting tasks to start: higher priority first, then first in first out, within the caps on
/// concurrent downloads and on downloads per host. A task whose host is full does not hold back others.
package enum Scheduler {
    public static func tasksToStart(_ entries: [SchedulerEntry], maxConcurrent: Int, maxPerHost: Int) -> [String] {
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
