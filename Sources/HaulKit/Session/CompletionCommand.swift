import Foundation
import NIOConcurrencyHelpers

/// A shell command run after a download finishes or fails (a session's ``SessionConfiguration/completionCommand``,
/// a task's ``DownloadSpec/completionCommand``, `haul get --on-complete`), with the task in its environment:
/// `HAUL_SESSION`, `HAUL_TASK_ID`, `HAUL_TASK_URL` (any `user:password@` shown as `***@`), `HAUL_TASK_STATE`,
/// `HAUL_TASK_PATH`, `HAUL_TASK_BYTES` and `HAUL_TASK_ERROR`.
public struct CompletionCommand: Sendable {
    /// Run by `/bin/sh -c`.
    public var command: String

    /// A command line for `/bin/sh -c`.
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
        let environment = ProcessInfo.processInfo.environment.merging(Self.environment(for: task, session: session)) { _, new in new }
        let destination: POSIXSpawn.Output = output.map { .descriptor($0.fileDescriptor) } ?? .inherited
        guard let pid = try? POSIXSpawn.start("/bin/sh", ["-c", command], environment: environment, output: destination, newSession: false) else {
            return nil
        }
        return Running(pid)
        #else
        return nil
        #endif
    }

    /// A started command, reaped by a thread of its own the moment it exits (no zombie, whether anyone waits or not).
    public final class Running: Sendable {
        #if os(macOS) || os(Linux)
        private let status = NIOLockedValueBox<Int32?>(nil)

        init(_ pid: pid_t) {
            let status = self.status
            Thread {
                var raw: Int32 = 0
                while waitpid(pid, &raw, 0) == -1, errno == EINTR {}
                // The exit code, or 128 + the signal that ended it, as a shell reports it.
                let exited = raw & 0x7f == 0
                status.withLockedValue { $0 = exited ? (raw >> 8) & 0xff : 128 + (raw & 0x7f) }
            }.start()
        }
        #endif

        /// Waits until the command has exited or `limit` has passed; its exit status, or `nil` if it still runs.
        public func wait(upTo limit: Duration) async -> Int32? {
            #if os(macOS) || os(Linux)
            let deadline = ContinuousClock.now + limit
            while true {
                if let exited = status.withLockedValue({ $0 }) { return exited }
                guard ContinuousClock.now < deadline else { return nil }
                do { try await Task.sleep(for: .milliseconds(20)) } catch { return nil }
            }
            #else
            return nil
            #endif
        }
    }
}
