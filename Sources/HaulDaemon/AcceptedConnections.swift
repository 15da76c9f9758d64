import NIOConcurrencyHelpers
import NIOCore

/// A listener's connections, from the moment they are accepted until they are served and closed: the daemon's
/// socket and the web dashboard both use one.
///
/// A listener made with SwiftNIO's async `bind` wraps each accepted connection in a `NIOAsyncChannel` in the child
/// initializer, then hands it to the accept loop. A connection whose initializer completes after the listener has
/// closed is never handed over: its `NIOAsyncChannel` is dropped without its writer being finished, which traps
/// ("Deinited NIOAsyncWriter without calling finish()", swift-nio issue 2637). The daemon and the web dashboard close
/// their listeners while clients may still be connecting (SIGTERM, idle exit), so ``admit(_:wrap:)`` holds each
/// accepted connection until ``serve(_:_:)`` takes it, and once the listener has closed, the ones left over are
/// closed and any later one is refused. Taken connections are open until their handler returns: ``openCount`` counts
/// them and ``closeOpen()`` closes them.
package final class AcceptedConnections<Inbound: Sendable, Outbound: Sendable>: Sendable {
    package typealias Connection = NIOAsyncChannel<Inbound, Outbound>

    private struct State {
        var stopped = false
        /// Accepted and wrapped, not yet taken by the accept loop.
        var waiting: [ObjectIdentifier: Connection] = [:]
        /// Taken and being served, by the number ``serve(_:_:)`` gave them.
        var open: [Int: Channel] = [:]
        var lastNumber = 0
    }

    private let state = NIOLockedValueBox(State())

    package init() {}

    /// Called from the child initializer, on `channel`'s event loop: wraps the connection and holds it until the accept
    /// loop takes it; once the loop has ended, closes `channel` and throws instead.
    package func admit(_ channel: Channel, wrap: () throws -> Connection) throws -> Connection {
        let admitted = try state.withLockedValue { state -> Connection? in
            guard !state.stopped else { return nil }
            let connection = try wrap()
            state.waiting[ObjectIdentifier(channel)] = connection
            return connection
        }
        guard let admitted else {
            channel.close(promise: nil)
            throw ChannelError.ioOnClosedChannel
        }
        return admitted
    }

    /// Serves `listener`: each connection gets a task running `handle` with it and its number (1, 2, …), which must
    /// call its `executeThenClose`. Once the listener closes or fails, refuses connections, closes those accepted that
    /// were never taken, and returns when every handler has.
    package func serve(
        _ listener: NIOAsyncChannel<Connection, Never>, _ handle: @escaping @Sendable (Connection, Int) async -> Void
    ) async throws {
        try await withThrowingDiscardingTaskGroup { group in
            do {
                try await listener.executeThenClose { inbound in
                    for try await connection in inbound {
                        let number = state.withLockedValue { state in
                            state.waiting.removeValue(forKey: ObjectIdentifier(connection.channel))
                            state.lastNumber += 1
                            state.open[state.lastNumber] = connection.channel
                            return state.lastNumber
                        }
                        group.addTask {
                            await handle(connection, number)
                            self.state.withLockedValue { _ = $0.open.removeValue(forKey: number) }
                        }
                    }
                }
            } catch {
                await stop()
                throw error
            }
            await stop()
        }
    }

    /// Connections being served.
    package var openCount: Int { state.withLockedValue { $0.open.count } }

    /// Closes every connection being served (their handlers then end).
    package func closeOpen() {
        for (_, channel) in state.withLockedValue({ $0.open }) { channel.close(promise: nil) }
    }

    /// Refuses connections from now on, and finishes and closes those accepted that were never taken.
    private func stop() async {
        let leftover = state.withLockedValue { state in
            state.stopped = true
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for connection in leftover {
            try? await connection.executeThenClose { _, _ in }
        }
    }
}
