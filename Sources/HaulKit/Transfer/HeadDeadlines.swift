import NIOConcurrencyHelpers

/// The deadlines of requests waiting for their response heads, kept by one sweeping task instead of a timer of an
/// event loop per request.
///
/// Scheduling an event loop's timer from a task, then cancelling it once the head arrives, wakes that loop twice per
/// request: a visible share of a tiny file's CPU when thousands are fetched. Here adding and removing a deadline
/// take a lock, and one task, running only while deadlines are kept, fires those that passed, at most
/// ``granularity`` late. A head deadline is the connect and stall timeouts added: seconds, as a rule.
final class HeadDeadlines: Sendable {
    /// Identifies one kept deadline, to remove it.
    struct Token: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    private struct Entry {
        var deadline: ContinuousClock.Instant
        var fire: @Sendable () -> Void
    }

    private struct State {
        var entries: [Token: Entry] = [:]
        var nextToken: UInt64 = 0
        /// Whether the sweeping task runs.
        var sweeping = false
    }

    static let shared = HeadDeadlines()

    /// How late a deadline may fire at most.
    let granularity: Duration
    private let state = NIOLockedValueBox(State())

    init(granularity: Duration = .milliseconds(100)) {
        self.granularity = granularity
    }

    /// Calls `fire` once `duration` has passed, unless `remove` was called with the token first.
    func add(after duration: Duration, _ fire: @escaping @Sendable () -> Void) -> Token {
        let deadline = ContinuousClock.now + duration
        let (token, startSweeping) = state.withLockedValue { state -> (Token, Bool) in
            state.nextToken &+= 1
            let token = Token(value: state.nextToken)
            state.entries[token] = Entry(deadline: deadline, fire: fire)
            defer { state.sweeping = true }
            return (token, !state.sweeping)
        }
        if startSweeping { Task.detached { await self.sweep() } }
        return token
    }

    /// Forgets the deadline of `token`: its `fire` is not called, unless it was already due and being called.
    func remove(_ token: Token) {
        _ = state.withLockedValue { $0.entries.removeValue(forKey: token) }
    }

    /// How many deadlines are kept (for tests).
    var count: Int { state.withLockedValue { $0.entries.count } }

    /// Fires the deadlines that passed, every ``granularity``, until none is kept.
    private func sweep() async {
        // Bounded: it ends at the first turn that finds no deadline kept, and each kept one is removed by its
        // request or fired here once.
        while true {
            try? await Task.sleep(for: granularity)
            let now = ContinuousClock.now
            let due = state.withLockedValue { state -> [Entry]? in
                guard !state.entries.isEmpty else {
                    state.sweeping = false
                    return nil
                }
                let passed = state.entries.filter { $0.value.deadline <= now }
                for token in passed.keys { state.entries.removeValue(forKey: token) }
                return Array(passed.values)
            }
            guard let due else { return }
            for entry in due { entry.fire() }
        }
    }
}
