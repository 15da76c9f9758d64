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
