import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Makes progress durable in the background: fsync the partial file, then save the record, so the recorded
/// offset never runs ahead of durable bytes. One checkpoint is in flight at a time; the transfer keeps streaming.
///
/// The one way a download's progress becomes durable, over one connection or several (a segmented download's
/// monitor calls it from its timer): checkpoints are made in the order asked for, each waits for the one before,
/// and a failed one is never swallowed — it is thrown by the next call (or by ``waitForPending()``), so the
/// download stops with it instead of going on with records that no longer follow its bytes.
final class Checkpointer: Sendable {
    private struct State {
        /// The checkpoint in flight or finished but not yet looked at.
        var pending: EventLoopFuture<Void>?
        /// Whether the one in flight is still running.
        var busy = false
    }

    private let store: any ResumeRecords
    private let state = NIOLockedValueBox(State())

    init(store: any ResumeRecords) {
        self.store = store
    }

    /// Starts a checkpoint of `record` (one is due) unless one is still running, whose bytes the next due one
    /// covers; throws the failure of an earlier one.
    func checkpointUnlessBusy(_ record: TransferRecord, file: PartialFile) async throws {
        if state.withLockedValue({ $0.busy }) { return }
        try await waitForPending()
        let store = self.store, state = self.state
        state.withLockedValue { $0.busy = true }
        let future = BlockingIO.pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any()) {
            try file.sync()
            try store.save(record)
        }
        future.whenComplete { _ in state.withLockedValue { $0.busy = false } }
        state.withLockedValue { $0.pending = future }
    }

    /// Waits for a running checkpoint, then makes `record` durable now (with `file` synced first, if given).
    /// With `durable: false` (a record claiming no bytes) nothing is fsync'd.
    /// The fsyncs run on the blocking-I/O threads: blocking a concurrency thread (two on a 2-core machine) for a
    /// slow disk's fsync would stall every other download and the session with it.
    func checkpointNow(_ record: TransferRecord, file: PartialFile?, durable: Bool = true) async throws {
        try await waitForPending()
        let store = self.store
        guard durable else { return try store.save(record, durable: false) }
        try await BlockingIO.run {
            try file?.sync()
            try store.save(record, durable: true)
        }
    }

    /// Waits for the checkpoint in flight, if any; throws its failure.
    func waitForPending() async throws {
        let pending = state.withLockedValue { state -> EventLoopFuture<Void>? in
            defer { state.pending = nil }
            return state.pending
        }
        try await pending?.get()
    }
}
