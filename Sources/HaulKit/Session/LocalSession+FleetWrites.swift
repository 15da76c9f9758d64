import Foundation

// How a node of a fleet writes what its tasks do while the store may be out of reach (a database restarting, a
// connection broken). A running download's writes are tried again while its lease allows; the end of a download (the
// stable state it ended in) is tried again until the store takes it, however long the store is away: the store's
// fencing (the task still held by this node, under the same epoch) alone decides whether it is still this node's to
// write, so a node that lost the task never writes it, and one that did not never leaves it `running`.
extension LocalSession {
    /// Runs a write for task `id` under its lease, if it has one. A lost lease ends the task's bookkeeping here
    /// (`nil`). In a fleet, unless `retrying` is false: for a task whose download ended (``endRun(_:lapsed:)``), any failure
    /// but a lost lease is tried again, with growing pauses, until the write is made or the session closes; for a
    /// running task, a store out of reach is tried again while its lease still allows writing. Any other failure
    /// gives `nil`, as a failed write always has.
    func write<T>(for id: String, retrying: Bool = true, _ body: (TaskLease?) async throws -> T) async -> T? {
        let held = fleet.leases[id]
        let ending = fleet.ending[id]?.lease
        let lease = held?.lease ?? ending
        var pause = Duration.milliseconds(200)
        // Bounded by a count: about a week of pauses for an ended task, the lease's deadline for a running one.
        for _ in 0..<100_000 {
            do {
                return try await body(lease)
            } catch SessionStoreError.leaseLost {
                loseLease(id)
                return nil
            } catch {
                guard retrying, shared != nil, lease != nil else { return nil }
                if let ending {
                    guard !isClosed, fleet.ending[id]?.lease == ending else { return nil }
                } else {
                    guard case SessionStoreError.unavailable = error, let held, held.gate.isOpen else { return nil }
                }
                await Self.pause(pause)
                pause = min(pause * 2, ending == nil ? .seconds(2) : .seconds(5))
            }
        }
        return nil
    }

    /// Waits `duration`, even in a cancelled task (a download stopped by a pause as it ended still has its end
    /// written, and must not try again at once, in a loop).
    private static func pause(_ duration: Duration) async {
        await Task.detached { try? await Task.sleep(for: duration) }.value
    }
}
