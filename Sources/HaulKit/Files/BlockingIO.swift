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
    ///
    /// The caller is resumed from the blocking-I/O thread itself: going through an event loop's future (NIO's
    /// `runIfActive(eventLoop:)`) would wake a third thread per call, a visible share of a tiny file's CPU.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            pool.submit { state in
                guard state == .active else {
                    return continuation.resume(throwing: NIOThreadPoolError.ThreadPoolInactive())
                }
                continuation.resume(with: Result { try body() })
            }
        }
    }

    /// Runs `body` on a blocking-I/O thread for a caller that may be cancelled: once it is (Ctrl-C, SIGTERM, a
    /// paused task), the caller gets a `CancellationError` at once, and `body`, left to finish on its thread, is
    /// ignored. For reading what a user named, which should never be able to hold a download or the daemon.
    static func runInterruptibly<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let waiter = OnceContinuation<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                waiter.set(continuation)
                pool.submit { state in
                    guard state == .active else { return waiter.resume(with: .failure(CancellationError())) }
                    waiter.resume(with: Result { try body() })
                }
            }
        } onCancel: {
            waiter.resume(with: .failure(CancellationError()))
        }
    }
}

/// A continuation resumed once, by whichever comes first: the result, or a cancellation (which may also come
/// before the continuation is set).
private final class OnceContinuation<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var early: Result<T, any Error>?
        var done = false
    }

    private let state = NIOLockedValueBox(State())

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLockedValue { state -> Result<T, any Error>? in
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(with result: Result<T, any Error>) {
        let continuation = state.withLockedValue { state -> CheckedContinuation<T, any Error>? in
            guard !state.done else { return nil }
            state.done = true
            guard let continuation = state.continuation else {
                state.early = result
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: result)
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
