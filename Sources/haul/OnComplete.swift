import Foundation
import HaulKit
import NIOConcurrencyHelpers

/// `--on-complete CMD` of `haul get`: the command runs after each download finishes or fails (not when it is
/// interrupted), with the `HAUL_TASK_*` variables of ``CompletionCommand``, and `haul get` waits for it (at most
/// ``waitLimit`` in all) before exiting.
final class OnComplete: Sendable {
    /// How long `haul get` waits for its commands in all before exiting without them.
    static let waitLimit: Duration = .seconds(120)

    private let command: CompletionCommand
    /// The command's stdout goes to stderr when haul's own stdout carries data (`--json`, `-o -`).
    private let toStandardError: Bool
    private let started = NIOLockedValueBox<[CompletionCommand.Running]>([])

    /// `nil` without a command.
    init?(_ command: String?, toStandardError: Bool) {
        guard let command, !command.isEmpty else { return nil }
        self.command = CompletionCommand(command)
        self.toStandardError = toStandardError
    }

    /// Starts the command for `task`.
    func run(for task: TaskSnapshot, session: String?) {
        let output = toStandardError ? FileHandle.standardError : nil
        guard let running = command.start(for: task, session: session, output: output) else {
            Reporter.printError("haul: warning: could not start the --on-complete command with /bin/sh")
            return
        }
        started.withLockedValue { $0.append(running) }
    }

    /// Waits for every command started so far, at most ``waitLimit`` in all; one line for each that failed, and
    /// one if time ran out.
    func waitForAll() async {
        let deadline = ContinuousClock.now + Self.waitLimit
        for running in started.withLockedValue({ $0 }) {
            guard let status = await running.wait(upTo: max(deadline - ContinuousClock.now, .zero)) else {
                Reporter.printError("haul: warning: the --on-complete command still runs after \(Int(Self.waitLimit.seconds)) s; exiting without waiting for it")
                return
            }
            if status != 0 { Reporter.printError("haul: warning: the --on-complete command exited with status \(status)") }
        }
    }

    /// The download as the command sees it: finished or failed; `nil` when it was interrupted (nothing ended).
    static func task(_ options: DownloadOptions, _ outcome: Result<DownloadResult, any Error>) -> TaskSnapshot? {
        let url = options.url.absoluteString
        switch outcome {
        case .success(let result):
            return TaskSnapshot(
                id: "", url: url, state: .finished, priority: 0, bytes: result.bytes, total: result.bytes, bytesPerSecond: nil,
                filePath: result.path, error: nil)
        case .failure(let error):
            let failure = error as? HaulError ?? HaulError(.network, String(describing: error))
            if failure.kind == .interrupted { return nil }
            var path: String?
            if case .file(let file) = options.destination { path = file }
            return TaskSnapshot(
                id: "", url: url, state: .failed, priority: 0, bytes: 0, total: nil, bytesPerSecond: nil, filePath: path, error: failure)
        }
    }
}
