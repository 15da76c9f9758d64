import Foundation

/// A shell command run after a download finishes or fails (a session's ``SessionConfiguration/completionCommand``,
/// a task's ``DownloadSpec/completionCommand``, `haul get --on-complete`), with the task in its environment:
/// `HAUL_SESSION`, `HAUL_TASK_ID`, `HAUL_TASK_URL` (any `user:password@` shown as `***@`), `HAUL_TASK_STATE`,
/// `HAUL_TASK_PATH`, `HAUL_TASK_BYTES` and `HAUL_TASK_ERROR`.
public struct CompletionCommand: Sendable {
    /// Run by `/bin/sh -c`.
    public var command: String

    public init(_ command: String) { self.command = command }

    /// The `HAUL_*` variables describing `task` (`HAUL_SESSION` only with a session).
    public static func environment(for task: TaskSnapshot, session: String?) -> [String: String] {
        var environment: [String: String] = [:]
        if let session { environment["HAUL_SESSION"] = session }
        environment["HAUL_TASK_ID"] = task.id
        environment["HAUL_TASK_URL"] = Redaction.url(task.url)  // its user:password@ as ***: the hook may log it
        environment["HAUL_TASK_STATE"] = task.state.rawValue
        environment["HAUL_TASK_PATH"] = task.filePath ?? ""
        environment["HAUL_TASK_BYTES"] = String(task.bytes)
        environment["HAUL_TASK_ERROR"] = task.error?.message ?? ""
        return environment
    }

    /// Starts the command for `task` with this process's environment plus the task's, stdin from /dev/null and
    /// stdout to `output` (default: this process's). Returns it running, or `nil` when it could not start (or
    /// where there are no subprocesses, as on iOS).
    public func start(for task: TaskSnapshot, session: String?, output: FileHandle? = nil) -> Running? {
        #if os(macOS) || os(Linux)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.environment = ProcessInfo.processInfo.environment.merging(Self.environment(for: task, session: session)) { _, new in new }
        process.standardInput = FileHandle.nullDevice
        if let output { process.standardOutput = output }
        do {
            try process.run()
        } catch {
            return nil
        }
        return Running(process)
        #else
        return nil
        #endif
    }

    /// A started command.
    public final class Running: @unchecked Sendable {
        #if os(macOS) || os(Linux)
        private let process: Process
        init(_ process: Process) { self.process = process }
        #endif

        /// Waits until the command has exited or `limit` has passed; its exit status, or `nil` if it still runs.
        public func wait(upTo limit: Duration) async -> Int32? {
            #if os(macOS) || os(Linux)
            let deadline = ContinuousClock.now + limit
            while process.isRunning {
                guard ContinuousClock.now < deadline else { return nil }
                do { try await Task.sleep(for: .milliseconds(20)) } catch { return nil }
            }
            return process.terminationStatus
            #else
            return nil
            #endif
        }
    }
}
