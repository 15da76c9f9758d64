import AsyncHTTPClient
import NIOConcurrencyHelpers

/// The engine's HTTP clients for direct requests: one kind per address family a download is limited to and per
/// HTTP/2 offered or not, each kind in generations (``ClientGenerations``). AsyncHTTPClient keeps a connection pool
/// for every origin a client has served until the client shuts down; a list over a million hosts would keep
/// gigabytes. A generation serves ``maxOrigins`` origins, and a retired one is shut down once its last request ends.
final class DirectClients: Sendable {
    /// Which client: bound to an address family (`-4`, `-6`) or not; offering HTTP/2 by ALPN or not.
    struct Kind: Hashable, Sendable {
        var family: IPFamily?
        var multiplexed: Bool
    }

    /// A request's hold on a client, given back with ``release(_:)`` when the request ends.
    struct Lease: Sendable {
        let client: HTTPClient
        fileprivate let kind: Kind
        fileprivate let generation: Int
    }

    private struct State {
        var generations: [Kind: ClientGenerations<Origin?>] = [:]
        var clients: [Kind: [Int: HTTPClient]] = [:]
    }

    /// How many origins one generation of a client serves.
    let maxOrigins: Int
    private let state = NIOLockedValueBox(State())
    private let make: @Sendable (Kind) -> HTTPClient

    init(maxOrigins: Int, make: @escaping @Sendable (Kind) -> HTTPClient) {
        self.maxOrigins = maxOrigins
        self.make = make
    }

    /// A client of `kind` for a request to `origin`.
    func lease(_ kind: Kind, origin: Origin?) -> Lease {
        let (lease, retired) = state.withLockedValue { state -> (Lease, HTTPClient?) in
            var generations = state.generations[kind] ?? ClientGenerations(maxOrigins: maxOrigins)
            let chosen = generations.lease(origin)
            state.generations[kind] = generations
            let retired = chosen.retired.flatMap { state.clients[kind]?.removeValue(forKey: $0) }
            let client: HTTPClient
            if let existing = state.clients[kind]?[chosen.generation] {
                client = existing
            } else {
                client = make(kind)
                state.clients[kind, default: [:]][chosen.generation] = client
            }
            return (Lease(client: client, kind: kind, generation: chosen.generation), retired)
        }
        retired?.shutdown { _ in }
        return lease
    }

    /// The request that held `lease` ended (its response was read to the end, failed or was cancelled).
    func release(_ lease: Lease) {
        let retired = state.withLockedValue { state -> HTTPClient? in
            guard let generation = state.generations[lease.kind]?.release(lease.generation) else { return nil }
            return state.clients[lease.kind]?.removeValue(forKey: generation)
        }
        retired?.shutdown { _ in }
    }

    /// Every client alive, current and retired (for shutting down, and for tests).
    var all: [HTTPClient] {
        state.withLockedValue { $0.clients.values.flatMap(\.values) }
    }
}
