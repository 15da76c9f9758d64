import Foundation
import HaulTestSupport
import Logging
import PostgresNIO
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

    /// A statement in flight when the server ends its session, as a shutdown or restart ends every session ("terminating
    /// connection due to administrator command", SQL state 57P01), finds the store out of reach, to be tried again:
    /// it is not a refusal. (It was one: a task's conclusion in flight when PostgreSQL stopped was dropped as refused,
    /// and a resume record being saved failed its download.) The link then goes on with a new connection.
    @Test(.enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing)"))
    func aStatementCutOffByTheServerEndingItsSessionIsUnavailableNotRefused() async throws {
        let url = try StoreHarness.database.get()
        let database = String(url.split(separator: "/").last ?? "")
        let link = try PostgresLink(address: try PostgresAddress.parse(url), password: nil, node: "cut-off", logger: Logger(label: "test"))
        let sleeping = Task { try await link.query("SELECT pg_sleep(60)") }
        var ended = false
        for _ in 0..<400 where !ended {
            ended = try PostgresServer.shared().psql("""
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE application_name = 'haul node cut-off' AND query LIKE 'SELECT pg_sleep%'
                """, database: database) == "1"
            if !ended { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(ended, "the statement's session was ended")
        do {
            _ = try await sleeping.value
            Issue.record("the statement went on after its session ended")
        } catch {
            #expect(error is StoreUnavailable, "\(error)")
            #expect(PostgresLink.classify(error) is StoreUnavailable)
        }
        let one = try await link.query("SELECT 1 AS one").rows.first?.makeRandomAccess()["one"].decode(Int.self)
        #expect(one == 1)
        await link.close()
    }

    /// A statement sent on a connection that has closed is never answered by PostgresNIO (its future is never
    /// completed): the operation's deadline fails it as the store out of reach. (Closing the connection at the deadline
    /// was all the link did: a progress write sent on a connection that closed as PostgreSQL stopped waited for ever,
    /// and with it the end of its download, whose lease the node renewed for ever.)
    @Test(.enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing)"))
    func aStatementSentOnAClosedConnectionFailsAtItsDeadline() async throws {
        let url = try StoreHarness.database.get()
        let link = try PostgresLink(address: try PostgresAddress.parse(url), password: nil, node: "closed", logger: Logger(label: "test"))
        let connection = try await link.dedicatedConnection()
        let deadline = OperationDeadline(connection, timeout: .milliseconds(500))
        let logger = Logger(label: "test")
        await #expect(throws: StoreUnavailable.self) {
            // Sent once the connection has closed, past the check of a closed connection: only the deadline ends it.
            _ = try await deadline.run {
                connection.close().flatMap { () -> EventLoopFuture<PostgresQueryResult> in
                    connection.query(PostgresQuery(unsafeSQL: "SELECT 1"), logger: logger)
                }
            }.get()
        }
        // A connection known closed is not used at all.
        await #expect(throws: StoreUnavailable.self) {
            _ = try await OperationDeadline(connection, timeout: .seconds(60)).run { () -> EventLoopFuture<PostgresQueryResult> in
                connection.query(PostgresQuery(unsafeSQL: "SELECT 1"), logger: logger)
            }.get()
        }
        await link.close()
    }

    /// A transaction whose connection closes under it (as PostgreSQL stopping closes every connection) fails as the
    /// store out of reach, to be tried again, and the link goes on with a new connection.
    @Test(.enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing)"))
    func aTransactionWhoseConnectionClosedUnderItIsUnavailable() async throws {
        let url = try StoreHarness.database.get()
        let link = try PostgresLink(
            address: try PostgresAddress.parse(url), password: nil, node: "closed-under", operationTimeout: .seconds(2), logger: Logger(label: "test"))
        await #expect(throws: StoreUnavailable.self) {
            try await link.transaction { transaction in
                try await transaction.connection.close().get()
                try await transaction.execute("SELECT 1")
            }
        }
        let one = try await link.query("SELECT 1 AS one").rows.first?.makeRandomAccess()["one"].decode(Int.self)
        #expect(one == 1)
        await link.close()
    }

    /// A statement PostgreSQL refused to prepare (here: its table was away for a moment) is prepared again once the
    /// cause is gone: PostgresNIO keeps a failed preparation as failed on its connection for good, so that connection
    /// is dropped, not used again.
    @Test(.enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing)"))
    func aStatementThatCouldNotBePreparedIsPreparedAgainOnAnotherConnection() async throws {
        let server = try PostgresServer.shared()
        let url = try server.createDatabase()
        let database = String(url.split(separator: "/").last ?? "")
        let fleet = try await PostgresFleet.open(try PostgresAddress.parse(url), node: "n")
        let store = fleet.store(session: "prepared")
        _ = try await store.add([DownloadRequest(DownloadSpec(url: URL(string: "https://example.com/a.bin")!, destination: .file("/tmp/a.bin")), id: "t")])
        try server.psql("ALTER TABLE haul.task RENAME TO task_away", database: database)
        await #expect(throws: (any Error).self) { try await store.claim(.init(slots: 1)) }
        try server.psql("ALTER TABLE haul.task_away RENAME TO task", database: database)
        #expect(try await store.claim(.init(slots: 1)).map(\.task.id) == ["t"])
        await fleet.close()
    }
}
