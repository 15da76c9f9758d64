import HaulKit
import NIOConcurrencyHelpers
import NIOCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The dashboard listener's ``WebConnectionGate``, and which connections have shown a credential.
final class Admission: Sendable {
    private struct State {
        var gate: WebConnectionGate
        /// The peer address of each open connection, and whether it is still pending.
        var peers: [ObjectIdentifier: (peer: String, pending: Bool)] = [:]
    }

    private let state: NIOLockedValueBox<State>

    init(limits: WebConnectionGate.Limits) {
        state = NIOLockedValueBox(State(gate: WebConnectionGate(limits: limits)))
    }

    /// Admits a connection just accepted, or refuses it (the caller closes it). An admitted one is counted until it
    /// closes.
    func admit(_ channel: Channel) -> Bool {
        let peer = channel.remoteAddress?.ipAddress ?? "unknown"
        let key = ObjectIdentifier(channel)
        let admitted = state.withLockedValue { state in
            guard state.gate.admit(peer: peer) else { return false }
            state.peers[key] = (peer, true)
            return true
        }
        guard admitted else { return false }
        channel.closeFuture.whenComplete { [state] _ in
            state.withLockedValue { state in
                guard let entry = state.peers.removeValue(forKey: key) else { return }
                state.gate.close(peer: entry.peer, pending: entry.pending)
            }
        }
        return true
    }

    /// The connection carried a valid credential: it no longer counts against the pending limits.
    func trust(_ channel: Channel) {
        let key = ObjectIdentifier(channel)
        state.withLockedValue { state in
            guard let entry = state.peers[key], entry.pending else { return }
            state.peers[key]?.pending = false
            state.gate.trust(peer: entry.peer)
        }
    }
}
