import Foundation

/// When a session is idle: nothing runs, waits, or is being started or ended; and who waits for that.
extension LocalSession {
    /// Returns once the session is idle (or closed, or the caller cancelled).
    func waitUntilIdle() async {
        let key = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // On the session: no event can come between this look and the waiter being entered.
                guard !isIdle(), !isClosed, !Task.isCancelled else { return continuation.resume() }
                idleWaiters[key] = continuation
            }
        } onCancel: {
            Task { await self.resumeIdleWaiters(only: key) }
        }
    }

    /// Resumes the idle waiters (only `key`'s, when given).
    func resumeIdleWaiters(only key: UUID? = nil) {
        if let key { return idleWaiters.removeValue(forKey: key)?.resume() ?? () }
        drainedMeanwhile = false
        let waiters = idleWaiters.values
        idleWaiters = [:]
        for waiter in waiters { waiter.resume() }
    }

    package func isIdle() -> Bool {
        !hasRunningTasks && startsUnderway == 0 && endsUnderway == 0 && !hasWaitingTasks
            && (shared == nil || (!fleet.mayHaveWork && fleet.ending.isEmpty))
    }

    /// A waiting task taken from the window is being started (``endStart()`` once it runs, or did not start).
    func beginStart() { startsUnderway += 1 }
    func endStart() {
        startsUnderway -= 1
        resumeIdleWaitersIfIdle()
    }

    /// A download ended and what it ended in is being written (``endEnd()`` once it is).
    func beginEnd() { endsUnderway += 1 }
    func endEnd() {
        endsUnderway -= 1
        resumeIdleWaitersIfIdle()
    }

    func resumeIdleWaitersIfIdle() {
        guard !idleWaiters.isEmpty, startsUnderway == 0, endsUnderway == 0 else { return }
        if drainedMeanwhile || isIdle() { resumeIdleWaiters() }
    }
}
