/// Which generation of an HTTP client each request goes through, so that the per-origin state a client keeps for its
/// whole life (AsyncHTTPClient keeps a connection pool per origin, a few KB each, until the client shuts down) is
/// bounded by `maxOrigins` per generation instead of growing with every host a list names.
///
/// A request for an origin the current generation has not served, once it has served `maxOrigins`, starts the next
/// generation; the previous one is retired, and shut down as soon as none of its requests is in flight (at once when
/// none is). A host that is still being fetched then opens a new connection in the new generation: one connection
/// per `maxOrigins` other hosts.
///
/// Pure: the engine makes and shuts down the clients this names.
package struct ClientGenerations<Origin: Hashable & Sendable>: Sendable {
    /// How many origins one generation serves before a new origin starts the next.
    public let maxOrigins: Int
    /// The generation new requests go through.
    public private(set) var current = 0
    /// The origins the current generation has served.
    private var origins: Set<Origin> = []
    /// Requests in flight, per generation (no entry: none).
    private var inFlight: [Int: Int] = [:]

    public init(maxOrigins: Int) {
        self.maxOrigins = max(1, maxOrigins)
    }

    /// The generation a request goes through, and one to shut down now (`retired`: it is no longer current and
    /// none of its requests is in flight).
    public struct Lease: Equatable, Sendable {
        public var generation: Int
        public var retired: Int?
    }

    /// A request for `origin` begins: the generation it goes through (``release(_:)`` it when it ends).
    public mutating func lease(_ origin: Origin) -> Lease {
        var retired: Int?
        if !origins.contains(origin) {
            if origins.count >= maxOrigins {
                let previous = current
                current += 1
                origins.removeAll()
                if inFlight[previous] == nil { retired = previous }
            }
            origins.insert(origin)
        }
        inFlight[current, default: 0] += 1
        return Lease(generation: current, retired: retired)
    }

    /// A request of `generation` ended; the generation to shut down now, if it was the last of a retired one.
    public mutating func release(_ generation: Int) -> Int? {
        guard let count = inFlight[generation] else { return nil }
        if count > 1 {
            inFlight[generation] = count - 1
            return nil
        }
        inFlight[generation] = nil
        return generation == current ? nil : generation
    }

    /// The generations with requests in flight, the current one included when it has some (for tests).
    public var generationsInFlight: Set<Int> { Set(inFlight.keys) }
}
