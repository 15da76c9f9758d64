import Foundation
import HaulTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// What a finished tool left: its exit status and output.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `executable ARGUMENTS` in `directory` (bounded by `timeout`, SIGKILLed after it) and returns its status and
/// output, whatever the status. Output goes through files, so a chatty tool never blocks.
func runCommand(
    _ executable: String, _ arguments: [String], in directory: String, environment: [String: String]? = nil,
    timeout: Duration = .seconds(30)
) throws -> CommandResult {
    let logs = NSTemporaryDirectory() + "haul-tool-" + UUID().uuidString
    defer {
        try? FileManager.default.removeItem(atPath: logs + ".stdout")
        try? FileManager.default.removeItem(atPath: logs + ".stderr")
    }
    _ = FileManager.default.createFile(atPath: logs + ".stdout", contents: nil)
    _ = FileManager.default.createFile(atPath: logs + ".stderr", contents: nil)
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    if let environment { process.environment = environment }
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle(forWritingAtPath: logs + ".stdout")
    process.standardError = FileHandle(forWritingAtPath: logs + ".stderr")
    try process.run()
    let deadline = ContinuousClock.now + timeout
    while process.isRunning, ContinuousClock.now < deadline { usleep(5_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw HarnessError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout)")
    }
    return CommandResult(
        status: process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus,
        stdout: (try? String(contentsOfFile: logs + ".stdout", encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOfFile: logs + ".stderr", encoding: .utf8)) ?? "")
}

/// Runs `executable ARGUMENTS` in `directory` (bounded by `timeout`) and returns its stdout; throws with its
/// stderr when it fails.
@discardableResult
func runTool(_ executable: String, _ arguments: [String], in directory: String, timeout: Duration = .seconds(30)) throws -> String {
    let result = try runCommand(executable, arguments, in: directory, timeout: timeout)
    guard result.status == 0 else {
        throw HarnessError("\(executable) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderr)")
    }
    return result.stdout
}
