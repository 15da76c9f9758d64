/// Where a task stands. Stable states only: a task is never stored mid-transition.
public enum TaskState: String, Codable, Sendable, CaseIterable {
    case waiting, running, paused, finished, failed, cancelled
}
