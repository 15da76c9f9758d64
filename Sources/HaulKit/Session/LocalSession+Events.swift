import Foundation

/// The session's events, to each subscriber, and to the idle waiters.
extension LocalSession {
    func events(filter: String?) -> AsyncStream<SessionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionEvent.self, bufferingPolicy: .unbounded)
        subscribe(filter: filter, continuation) { event, _, _ in continuation.yield(event) }
        return stream
    }

    /// Every event with its journal sequence (finished and failed events of a journaling session), and in a fleet the
    /// node whose change it reports when that is another node.
    package func journaledEvents() -> AsyncStream<(event: SessionEvent, sequence: Int64?, node: String?)> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: (event: SessionEvent, sequence: Int64?, node: String?).self, bufferingPolicy: .unbounded)
        subscribe(filter: nil, continuation) { event, sequence, node in continuation.yield((event, sequence, node)) }
        return stream
    }

    private func subscribe<T>(
        filter: String?, _ continuation: AsyncStream<T>.Continuation, yield: @escaping @Sendable (SessionEvent, Int64?, String?) -> Void
    ) {
        let key = UUID()
        subscribers[key] = Subscriber(filter: filter, yield: yield, finish: { continuation.finish() })
        continuation.onTermination = { _ in Task { await self.unsubscribe(key) } }
    }

    private func unsubscribe(_ key: UUID) { subscribers[key] = nil }

    /// Event streams open now (tests wait for a subscriber before acting).
    var subscriberCount: Int { subscribers.count }

    /// Tells the subscribers; `node`: another node of the fleet made the change.
    func emit(_ event: SessionEvent, sequence: Int64? = nil, from node: String? = nil) {
        for (_, subscriber) in subscribers where subscriber.filter == nil || subscriber.filter == event.taskID {
            subscriber.yield(event, sequence, node)
        }
        guard !idleWaiters.isEmpty else { return }
        // The queue drained (a fleet's too), unless a start or an end is still being written meanwhile: the last of
        // those resumes the waiters then.
        if case .allFinished = event { drainedMeanwhile = true }
        resumeIdleWaitersIfIdle()
    }
}
