import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sends `signal` to `run` as soon as `condition` holds, polling every 5 ms on a dedicated thread: when many tests
/// run in parallel, blocking work can starve Swift's cooperative pool (2 threads on 2 cores) for seconds, and an
/// `eventually` poll would then see a short-lived state too late. Throws when `run` ends first or on timeout.
func signalWhen(
    _ run: HaulRun, _ signal: Int32, _ what: String, timeout: Duration = .seconds(20),
    _ condition: @escaping @Sendable () -> Bool
) async throws {
    try await signalWhen(pid: run.pid, signal, what, timeout: timeout, isRunning: { run.isRunning }, stderr: { run.stderrSoFar() }, condition)
}

/// `signalWhen` for a process this test did not start itself (a daemon that `haul add` started).
func signalWhen(
    pid: Int32, _ signal: Int32, _ what: String, timeout: Duration = .seconds(20),
    isRunning: @escaping @Sendable () -> Bool, stderr: @escaping @Sendable () -> String = { "" },
    _ condition: @escaping @Sendable () -> Bool
) async throws {
    try await actWhen(what, timeout: timeout, isRunning: isRunning, stderr: stderr, condition) { kill(pid, signal) }
}

/// Does `action` as soon as `condition` holds while `run` runs, on the same dedicated polling thread as
/// ``signalWhen(_:_:_:timeout:_:)`` (a file made while a download runs, say, which a starved pool would make after it ended).
func actWhen(
    _ run: HaulRun, _ what: String, timeout: Duration = .seconds(20), _ condition: @escaping @Sendable () -> Bool,
    action: @escaping @Sendable () -> Void
) async throws {
    try await actWhen(what, timeout: timeout, isRunning: { run.isRunning }, stderr: { run.stderrSoFar() }, condition, action: action)
}

private func actWhen(
    _ what: String, timeout: Duration, isRunning: @escaping @Sendable () -> Bool, stderr: @escaping @Sendable () -> String,
    _ condition: @escaping @Sendable () -> Bool, action: @escaping @Sendable () -> Void
) async throws {
    let outcome: String? = await withCheckedContinuation { continuation in
        let thread = Thread {
            let deadline = ContinuousClock.now + timeout
            while true {
                guard isRunning() else {
                    continuation.resume(returning: "the process ended before \(what): \(stderr())")
                    return
                }
                if condition() {
                    action()
                    continuation.resume(returning: nil)
                    return
                }
                guard ContinuousClock.now < deadline else {
                    continuation.resume(returning: "timed out after \(timeout) waiting until \(what)")
                    return
                }
                usleep(5_000)
            }
        }
        thread.start()
    }
    if let outcome { throw HarnessError(outcome) }
}

/// Starts `args` in `box`, SIGKILLs it once its resume record for the destination ending in `suffix` counts at least
/// `bytes` (a checkpoint: bytes past it are not durable and are rightly dropped on resume), and returns the offset
/// recorded, the bytes a rerun holds.
func killOnceRecorded(
    _ box: Sandbox, _ args: [String], destinationSuffix suffix: String, atLeast bytes: Int, timeout: Duration = .seconds(30)
) async throws -> Int {
    let run = try box.start(args)
    @Sendable func recorded() -> Int? {
        box.records().first { ($0["destinationPath"] as? String)?.hasSuffix(suffix) == true }
            .flatMap { ($0["offset"] as? NSNumber)?.intValue }
    }
    try await signalWhen(run, SIGKILL, "a checkpoint of \(suffix) records ≥ \(bytes) bytes", timeout: timeout) {
        (recorded() ?? 0) >= bytes
    }
    let killed = try await run.wait(timeout: .seconds(10))
    #expect(killed.signalled, "\(killed.stderr)")
    return try #require(recorded())
}
