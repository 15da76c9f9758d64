import Foundation

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
    let outcome: String? = await withCheckedContinuation { continuation in
        let thread = Thread {
            let deadline = ContinuousClock.now + timeout
            while true {
                guard run.isRunning else {
                    continuation.resume(returning: "haul ended before \(what): \(run.stderrSoFar())")
                    return
                }
                if condition() {
                    run.signal(signal)
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
