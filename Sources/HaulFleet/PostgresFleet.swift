import Foundation
import HaulKit
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// One daemon's handle on its fleet's database (`haul daemon --store postgres://...`): the connections, this node's
/// name and the lease terms, and the session stores (``PostgresSessionStore``) it opens on them.
package final class PostgresFleet: Sendable {
    /// Where the store is, as it may be printed (no password).
    package let location: String
    /// This daemon's name in the fleet (`--node`, default: the host name).
    package let node: String
    /// How long leases last.
    package let leaseTerms: LeaseTerms
    /// This process, among the node's processes over time.
    let instance = UUID().uuidString
    /// How often a session reads the fleet's changes while it hears the notifications (a safety net only).
    package let quietPollInterval: Duration
    /// The connections of the sessions' transactions (async: a transaction holds one while its caller is suspended).
    let link: PostgresLink
    /// Other connections for the resume records, which the engine writes synchronously, sometimes from a concurrency
    /// thread: a caller blocked there waits only for these single statements, which complete on the event loops,
    /// never for a transaction that needs a concurrency thread to go on (with one pool, two blocked threads of a
    /// 2-core machine and a pool held by suspended transactions would wait for each other).
    let recordLink: PostgresLink
    let logger: Logger
    /// Who waits for the doorbell, and whether it is heard (see PostgresFleet+Listening.swift).
    let bells = NIOLockedValueBox(Bells())

    private init(
        link: PostgresLink, recordLink: PostgresLink, node: String, leaseTerms: LeaseTerms, quietPollInterval: Duration, logger: Logger
    ) {
        self.link = link
        self.recordLink = recordLink
        self.quietPollInterval = quietPollInterval
        self.location = link.location
        self.node = node
        self.leaseTerms = leaseTerms
        self.logger = logger
    }

    /// Connects to the store at `address` as `node` and brings its schema up to date (creating it in an empty
    /// database). The password is the URL's, else `PGPASSWORD`'s, else `~/.pgpass`'s (``password(for:environment:)``).
    /// `schema` is for tests that make an older store; `quietPollInterval` for tests that show the doorbell alone wakes a
    /// node.
    package static func open(
        _ address: PostgresAddress, node: String, leaseTerms: LeaseTerms = LeaseTerms(),
        environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger = Logger(label: "haul.fleet"),
        schema: Int = PostgresSchema.version, quietPollInterval: Duration = .seconds(15)
    ) async throws -> PostgresFleet {
        try validate(node: node)
        let password = password(for: address, environment: environment)
        let link = try PostgresLink(address: address, password: password, node: node, logger: logger)
        let recordLink = try PostgresLink(address: address, password: password, node: node, maxConnections: 4, logger: logger)
        let fleet = PostgresFleet(
            link: link, recordLink: recordLink, node: node, leaseTerms: leaseTerms, quietPollInterval: quietPollInterval, logger: logger)
        do {
            try await PostgresSchema.prepare(link, upTo: schema)
        } catch {
            await link.close()
            await recordLink.close()
            throw fleet.mappedError(error)
        }
        return fleet
    }

    /// The store of session `name` (nothing is written until a task is added).
    package func store(session name: String) -> PostgresSessionStore {
        PostgresSessionStore(fleet: self, session: name)
    }

    /// Stops listening and closes the connections.
    package func close() async {
        await stopListening()
        await link.close()
        await recordLink.close()
    }

    /// The next transaction id (taking one): every transaction that writes takes one and a read takes none, so the
    /// difference of two is how many wrote in between, plus one (for the benchmarks' writes per task).
    package func transactionsWritten() async throws -> Int64 {
        let result = try await link.query("SELECT pg_current_xact_id()::text::bigint AS xid")
        return try result.rows.first?.makeRandomAccess()["xid"].decode(Int64.self) ?? 0
    }

    /// The schema version the database shows (for tests and `haul fleet`).
    package func schemaVersion() async throws -> Int {
        let result = try await link.query("SELECT coalesce(max(version), 0) AS version FROM haul.schema_migration")
        return try result.rows.first?.makeRandomAccess()["version"].decode(Int.self) ?? 0
    }

    /// Throws unless `node` is 1 to 64 letters, digits, `.`, `_` and `-`.
    package static func validate(node: String) throws(HaulError) {
        guard !node.isEmpty, node.utf8.count <= 64, node.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
            throw HaulError(.usage, "the node name \"\(node)\" must be 1 to 64 letters, digits, '.', '_' or '-'")
        }
    }

    /// The password for `address`: the URL's, else `PGPASSWORD`, else the password file (`PGPASSFILE`, else
    /// `~/.pgpass`) when only its owner may read it, as libpq does. Never printed.
    package static func password(for address: PostgresAddress, environment: [String: String]) -> String? {
        if let password = address.password { return password }
        if let password = environment["PGPASSWORD"], !password.isEmpty { return password }
        let path = environment["PGPASSFILE"] ?? (environment["HOME"].map { $0 + "/.pgpass" } ?? NSHomeDirectory() + "/.pgpass")
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, PGPass.isPrivate(mode: UInt32(info.st_mode)),
              info.st_size < 1 << 20, let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return PGPass.password(in: text, for: address)
    }

    /// What `error` says to a person: where the store is and what went wrong, without a password.
    func mappedError(_ error: any Error) -> any Error {
        switch error {
        case let error as StoreUnavailable:
            return SessionStoreError.unavailable("the store at \(location) cannot be reached (\(error.description)); check that PostgreSQL runs there")
        case let error as StoreRefusal:
            return SessionStoreError.refused("the store at \(location) refused a change (\(error.description))")
        default:
            return error
        }
    }
}
