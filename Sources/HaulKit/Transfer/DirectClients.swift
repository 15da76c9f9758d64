import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOSSL

/// The engine's HTTP clients for direct requests: one kind per address family a download is limited to and per
/// HTTP/2 offered or not, each kind in generations (``ClientGenerations``). AsyncHTTPClient keeps a connection pool
/// for every origin a client has served until the client shuts down; a list over a million hosts would keep
/// gigabytes. A generation serves ``maxOrigins`` origins, and a retired one is shut down once its last request ends.
final class DirectClients: Sendable {
    /// Which client: bound to an address family (`-4`, `-6`) or not; offering HTTP/2 by ALPN or not; trusting the
    /// system's CAs (`trust` nil) or what a download's TLS settings say (`--cacert`, `-k`, a client certificate).
    ///
    /// A download's own trust makes a client of its own rather than going with each request: AsyncHTTPClient hashes
    /// a request's TLS configuration, certificates and all, into its pool's key at every request, and compares it
    /// again for every connection (a quarter of the CPU over 3,000 HTTPS hosts with `-k`).
    struct Kind: Hashable, Sendable {
        var family: IPFamily?
        var multiplexed: Bool
        var trust: TLSTrust?
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
    private let make: @Sendable (Kind, TLSConfiguration?) -> HTTPClient

    /// `make` makes a client of a kind, with the TLS configuration of its `trust` (nil: the system's).
    init(maxOrigins: Int, make: @escaping @Sendable (Kind, TLSConfiguration?) -> HTTPClient) {
        self.maxOrigins = maxOrigins
        self.make = make
    }

    /// A client of `kind` for a request to `origin`; `tls` is the configuration of the kind's `trust`, for making one.
    func lease(_ kind: Kind, origin: Origin?, tls: TLSConfiguration?) -> Lease {
        let (lease, retired) = state.withLockedValue { state -> (Lease, HTTPClient?) in
            // In place: a copy taken out of the dictionary would copy its set of origins at every lease.
            let chosen = state.generations[kind, default: ClientGenerations(maxOrigins: maxOrigins)].lease(origin)
            let retired = chosen.retired.flatMap { state.clients[kind]?.removeValue(forKey: $0) }
            let client: HTTPClient
            if let existing = state.clients[kind]?[chosen.generation] {
                client = existing
            } else {
                client = make(kind, tls)
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
