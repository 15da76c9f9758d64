import Foundation

extension Sandbox {
    /// Runs `haul ARGS` like `run(_:timeout:)`, with `input` on its stdin (a pipe closed after writing it).
    func runFeedingStdin(_ arguments: [String], input: String, timeout: Duration = .seconds(40)) async throws -> HaulResult {
        try await start(arguments, input: Data(input.utf8)).wait(timeout: timeout)
    }
}
