import NIOConcurrencyHelpers
import NIOPosix

/// Calls that wait on the disk (fsync), run off Swift's cooperative pool. That pool has one thread per core: a few
/// downloads waiting there for their fsyncs would stall every other task of the process, and the disk would get at
/// most that many syncs at once. With many in flight, the kernel and the device complete them together.
enum BlockingIO {
    static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 32)
        pool.start()
        return pool
    }()

    /// Runs `body` on a blocking-I/O thread. Not cancelled with the calling task: what it saves is what a pause
    /// or Ctrl-C needs saved (NIO's async `runIfActive` would drop work queued by a cancelled task).
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any(), body).get()
    }
}

/// Fsyncs of a directory, shared: a caller that asks while one is running waits for the next, which begins after
/// the running one ends and so covers everything every waiting caller did in the directory before asking (a rename
/// into place). Each caller still returns only after an fsync that began after it asked; many downloads finishing
/// into one folder then cost a few directory fsyncs instead of one each.
final class DirectorySyncer: Sendable {
    private struct Waiter {
        var continuation: CheckedContinuation<Void, Never>
        /// Syncs the directory by a descriptor the waiter holds open while it waits; `nil`: by the key, a path.
        var syncHeld: (@Sendable () -> Void)?
    }

    /// The directories with a sync running, and who waits for the next one of each.
    private let state = NIOLockedValueBox<[String: [Waiter]]>([:])
    private let sync: @Sendable (String) -> Void

    init(sync: @escaping @Sendable (String) -> Void = { POSIX.syncDirectory($0) }) {
        self.sync = sync
    }

    static let shared = DirectorySyncer()

    /// Returns once an fsync of `directory` that began after this call has completed.
    func sync(_ directory: String) async {
        await wait(key: directory, syncHeld: nil)
    }

    /// Returns once an fsync of `folder` (by its descriptor, or another's open on the same folder) that began
    /// after this call has completed. Folders are told apart by device and inode, not by path.
    func sync(_ folder: OpenDirectory) async {
        await wait(key: folder.identityKey, syncHeld: { folder.sync() })
    }

    private func wait(key: String, syncHeld: (@Sendable () -> Void)?) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let first = state.withLockedValue { directories in
                let running = directories[key] != nil
                directories[key, default: []].append(Waiter(continuation: continuation, syncHeld: syncHeld))
                return !running
            }
            if first { BlockingIO.pool.submit { _ in self.drain(key) } }
        }
    }

    /// Syncs `key`'s directory for everyone waiting, again while more arrived meanwhile, then marks it idle.
    private func drain(_ key: String) {
        while true {
            let batch = state.withLockedValue { directories in
                let waiting = directories[key] ?? []
                directories[key] = []
                return waiting
            }
            if batch.isEmpty {
                let idle = state.withLockedValue { directories in
                    guard directories[key]?.isEmpty ?? true else { return false }
                    directories[key] = nil
                    return true
                }
                if idle { return }
                continue
            }
            // Every waiter of the batch still holds its descriptor open: any of them syncs the same folder.
            if let held = batch.first?.syncHeld { held() } else { sync(key) }
            for waiter in batch { waiter.continuation.resume() }
        }
    }
}
