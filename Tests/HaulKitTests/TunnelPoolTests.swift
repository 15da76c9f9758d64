import HaulCore
@testable import HaulKit
import Testing

/// The pool's rules for requests that find no connection yet: one opens the tunnel, the others for the same key wait
/// for it (and stop waiting when it fails, when the server chose HTTP/1.1, or when they are cancelled); other keys
/// (another proxy password, host, port, trust or family) never wait for it.
@Suite struct TunnelPoolTests {
    static func key(password: String = "p", host: String = "example.test", port: Int = 443) throws -> TunnelPool.Key {
        TunnelPool.Key(
            proxy: try ProxyEndpoint(parsing: "http://u:\(password)@127.0.0.1:3128"), socks: false, host: host, port: port,
            trust: TLSTrust(), family: nil)
    }

    static func isEstablish(_ grant: TunnelPool.Grant, shared: Bool) -> Bool {
        if case .establish(let isShared) = grant { return isShared == shared }
        return false
    }

    @Test func aSecondRequestWaitsForTheFirstTunnelAndAnotherKeyDoesNot() async throws {
        let pool = TunnelPool(maxConnectionsPerKey: 8)
        let key = try Self.key()
        #expect(Self.isEstablish(try await pool.acquire(key), shared: true))
        let waiting = Task { try await pool.acquire(key) }
        // Other keys are not held back by it.
        for other in [try Self.key(password: "q"), try Self.key(host: "other.test"), try Self.key(port: 8443)] {
            #expect(Self.isEstablish(try await pool.acquire(other), shared: true))
        }
        // The first tunnel failed: the waiting request opens one itself.
        pool.establishmentEnded(key, shared: true, serverChoseHTTP1: false)
        #expect(Self.isEstablish(try await waiting.value, shared: true))
        // That one found HTTP/1.1: from now on each request opens its own at once.
        pool.establishmentEnded(key, shared: true, serverChoseHTTP1: true)
        #expect(Self.isEstablish(try await pool.acquire(key), shared: false))
        #expect(Self.isEstablish(try await pool.acquire(key), shared: false))
    }

    @Test func aWaitingRequestThatIsCancelledStopsWaitingAtOnce() async throws {
        let pool = TunnelPool(maxConnectionsPerKey: 8)
        let key = try Self.key()
        #expect(Self.isEstablish(try await pool.acquire(key), shared: true))
        let waiting = Task { try await pool.acquire(key) }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        // The tunnel still being opened is unaffected: the next request waits for it, and goes on when it ends.
        let next = Task { try await pool.acquire(key) }
        pool.establishmentEnded(key, shared: true, serverChoseHTTP1: false)
        #expect(Self.isEstablish(try await next.value, shared: true))
    }

    @Test func shutdownReleasesWaitersAndPoolsNothingMore() async throws {
        let pool = TunnelPool(maxConnectionsPerKey: 8)
        let key = try Self.key()
        #expect(Self.isEstablish(try await pool.acquire(key), shared: true))
        let waiting = Task { try await pool.acquire(key) }
        pool.shutdown()
        #expect(Self.isEstablish(try await waiting.value, shared: false))
        #expect(pool.openConnections == 0)
    }
}
