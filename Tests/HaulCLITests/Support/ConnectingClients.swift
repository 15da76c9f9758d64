#if os(Linux)
import Foundation
import Glibc

/// Sends SIGTERM to `daemon` while four threads connect to it and hang up in a loop (`connect` says whether one
/// connection was made), once they have made at least 200; returns how the daemon ended. Each thread stops after
/// 50,000 connections, 20 s, or once the daemon has ended; this returns only once they all have.
func sigtermWhileClientsConnect(
    _ daemon: HaulRun, round: Int, connect: @escaping @Sendable () -> Bool
) async throws -> HaulResult {
    let connected = ThreadCounter(), threadsDone = ThreadCounter()
    let deadline = ContinuousClock.now + .seconds(20)
    for _ in 0..<4 {
        Thread {
            defer { threadsDone.add() }
            for _ in 0..<50_000 where daemon.isRunning && ContinuousClock.now < deadline {
                if connect() { connected.add() }
            }
        }.start()
    }
    try await eventually("round \(round): 200 connections made", timeout: .seconds(30)) { connected.value >= 200 }
    daemon.signal(SIGTERM)
    let result = try await daemon.wait(timeout: .seconds(30))
    try await eventually("round \(round): the connecting threads are done", timeout: .seconds(30)) { threadsDone.value == 4 }
    return result
}

/// A count that threads add to and a test reads.
private final class ThreadCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}
#endif
