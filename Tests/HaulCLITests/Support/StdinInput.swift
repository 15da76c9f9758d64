import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Sandbox {
    /// Runs `haul ARGS` like `run(_:timeout:)` (HAUL_HOME = `home`, working directory `work`), but with `input`
    /// written to its stdin through a pipe that is then closed. stdout and stderr go to files in the sandbox, so the
    /// child never blocks on a full pipe. Bounded: on timeout the process is killed and an error thrown.
    func runFeedingStdin(_ arguments: [String], input: String, timeout: Duration = .seconds(40)) async throws -> HaulResult {
        let prefix = root + "/stdin-run-" + UUID().uuidString
        let stdoutPath = prefix + ".stdout", stderrPath = prefix + ".stderr"
        FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        FileManager.default.createFile(atPath: stderrPath, contents: nil)
        var environment = ProcessInfo.processInfo.environment
        environment["HAUL_HOME"] = home

        let process = Process()
        process.executableURL = URL(fileURLWithPath: try HaulBinary.path())
        process.arguments = arguments
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: work)
        let stdin = Pipe()
        process.standardInput = stdin
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        // However this ends, the child does not outlive the call.
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        // The input is small (well under a pipe buffer), so this write does not block; closing sends EOF.
        try stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
        try stdin.fileHandleForWriting.close()

        let stderrSoFar = { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                kill(process.processIdentifier, SIGKILL)
                try? await eventually("the killed haul exits", timeout: .seconds(5)) { !process.isRunning }
                throw HarnessError("haul \(arguments.joined(separator: " ")) (stdin fed) did not finish within \(timeout); killed it. stderr: \(stderrSoFar())")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return HaulResult(
            exitCode: process.terminationStatus,
            signalled: process.terminationReason == .uncaughtSignal,
            stdout: (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "",
            stderr: stderrSoFar())
    }
}
