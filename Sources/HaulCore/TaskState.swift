/// Where a task stands. Stable states only: a task is never stored mid-transition.
public enum TaskState: String, Codable, Sendable, CaseIterable {
    /// Queued for a slot: higher priority first, then in the order added.
    case waiting
    /// Transferring, or retrying after a transient failure.
    case running
    /// Stopped by a caller; its bytes are kept for resuming.
    case paused
    /// Complete, verified, fsync'd and at its final path.
    case finished
    /// Given up on (the task's error says why); resuming it tries again from the bytes still held.
    case failed
    /// Stopped for good; its partial bytes are removed.
    case cancelled
}
