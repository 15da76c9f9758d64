import Foundation
import HaulTestSupport
import Logging
import Testing
@testable import HaulCore
@testable import HaulFleet
@testable import HaulKit

/// The fleet's connection pool when connections cannot be opened: no caller waits for ever.
@Suite(.timeLimit(.minutes(2))) struct PostgresLinkTests {
    /// More callers than connections against a store that cannot be reached: the callers beyond the pool's size
    /// queue, the connections being opened all fail, and every queued caller still gets its own attempt and an
    /// error (it used to wait for a release that never came).
    @Test(arguments: [2, 3, 6])
    func callersQueuedBehindFailingConnectsAllGetAnError(maxConnections: Int) async throws {
        let port = try PostgresServer.freePort()
        let address = try PostgresAddress.parse("postgres://haul@127.0.0.1:\(port)/nothing")
        let link = try PostgresLink(address: address, password: nil, node: "t", maxConnections: maxConnections, logger: Logger(label: "test"))
        let callers = maxConnections * 4
        let failures = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<callers {
                group.addTask {
                    do {
                        _ = try await link.query("SELECT 1")
                        return false
                    } catch {
                        return error is StoreUnavailable
                    }
                }
            }
            var count = 0
            for await failed in group where failed { count += 1 }
            return count
        }
        #expect(failures == callers)
        // And a transaction queued the same way.
        await #expect(throws: StoreUnavailable.self) { try await link.transaction { try await $0.execute("SELECT 1") } }
        await link.close()
    }
}
