import NIOConcurrencyHelpers
import NIOCore

/// The connections a listener has accepted and wrapped but its accept loop has not taken yet.
///
/// A listener made with SwiftNIO's async `bind` wraps each accepted connection in a `NIOAsyncChannel` in the child
/// initializer, then hands it to the accept loop. A connection whose initializer completes after the listener has
/// closed is never handed over: its `NIOAsyncChannel` is dropped without its writer being finished, which traps
/// ("Deinited NIOAsyncWriter without calling finish()", swift-nio issue 2637). The daemon and the web dashboard close
/// their listeners while clients may still be connecting (SIGTERM, idle exit), so each keeps its accepted connections
/// here: ``admit(_:wrap:)`` holds one until ``acceptLoop(_:_:)`` hands it on, and once the listener has closed, the
/// ones left over are closed and any later one is refused.
package final class AcceptedConnections<Inbound: Sendable, Outbound: Sendable>: Sendable {
    package typealias Connection = NIOAsyncChannel<Inbound, Outbound>

    private let state = NIOLockedValueBox((stopped: false, waiting: [ObjectIdentifier: Connection]()))

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

    /// The accept loop: hands each connection of `listener` to `serve` (which must call its `executeThenClose`) until the
    /// listener closes or fails; then refuses connections and closes those accepted that it never handed on.
    package func acceptLoop(
        _ listener: NIOAsyncChannel<Connection, Never>, _ serve: (Connection) -> Void
    ) async throws {
        do {
            try await listener.executeThenClose { inbound in
                for try await connection in inbound {
                    state.withLockedValue { _ = $0.waiting.removeValue(forKey: ObjectIdentifier(connection.channel)) }
                    serve(connection)
                }
            }
        } catch {
            await stop()
            throw error
        }
        await stop()
    }

    /// Refuses connections from now on, and finishes and closes those accepted that were never handed on.
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
