import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Makes progress durable in the background: fsync the partial file, then save the record, so the recorded
/// offset never runs ahead of durable bytes. One checkpoint is in flight at a time; the transfer keeps streaming.
final class Checkpointer {
    private let store: TransferRecordStore
    private let everyBytes: Int64
    private let everyInterval: Duration
    private let clock = ContinuousClock()
    private var lastOffset: Int64 = 0
    private var lastTime: ContinuousClock.Instant
    private var pending: EventLoopFuture<Void>?
    private let busy = NIOLockedValueBox(false)

    init(store: TransferRecordStore, everyBytes: Int64, everyInterval: Duration) {
        self.store = store
        self.everyBytes = everyBytes
        self.everyInterval = everyInterval
        self.lastTime = clock.now
    }

    /// Starts a checkpoint of `record` when one is due and none is running; surfaces a failed earlier one.
    func checkpointIfDue(_ record: TransferRecord, file: PartialFile) async throws {
        if busy.withLockedValue({ $0 }) { return }
        if let pending {
            self.pending = nil
            try await pending.get()
        }
        let now = clock.now
        guard record.offset - lastOffset >= everyBytes || now - lastTime >= everyInterval else { return }
        lastOffset = record.offset
        lastTime = now
        busy.withLockedValue { $0 = true }
        let store = self.store, busy = self.busy
        let future = NIOThreadPool.singleton.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any()) {
            try file.sync()
            try store.save(record)
        }
        future.whenComplete { _ in busy.withLockedValue { $0 = false } }
        pending = future
    }

    /// Waits for a running checkpoint, then makes `record` durable now (with `file` synced first, if given).
    /// With `durable: false` (a record claiming no bytes) nothing is fsync'd.
    func checkpointNow(_ record: TransferRecord, file: PartialFile?, durable: Bool = true) async throws {
        try await waitForPending()
        if durable { try file?.sync() }
        try store.save(record, durable: durable)
        lastOffset = record.offset
        lastTime = clock.now
    }

    func waitForPending() async throws {
        if let pending {
            self.pending = nil
            try await pending.get()
        }
    }
}
