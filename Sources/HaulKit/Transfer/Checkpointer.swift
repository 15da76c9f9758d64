import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Makes progress durable in the background: fsync the partial file, then save the record, so the recorded
/// offset never runs ahead of durable bytes. One checkpoint is in flight at a time; the transfer keeps streaming.
final class Checkpointer {
    private let store: any ResumeRecords
    private var pending: EventLoopFuture<Void>?
    private let busy = NIOLockedValueBox(false)

    init(store: any ResumeRecords) {
        self.store = store
    }

    /// Starts a checkpoint of `record` (the lifecycle said one is due) unless one is still running, whose bytes
    /// the next due one covers; surfaces a failed earlier one.
    func checkpointUnlessBusy(_ record: TransferRecord, file: PartialFile) async throws {
        if busy.withLockedValue({ $0 }) { return }
        if let pending {
            self.pending = nil
            try await pending.get()
        }
        busy.withLockedValue { $0 = true }
        let store = self.store, busy = self.busy
        let future = BlockingIO.pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any()) {
            try file.sync()
            try store.save(record)
        }
        future.whenComplete { _ in busy.withLockedValue { $0 = false } }
        pending = future
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

    func waitForPending() async throws {
        if let pending {
            self.pending = nil
            try await pending.get()
        }
    }
}
