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
