import Foundation
import Logging
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulFleet
@testable import HaulKit

/// The session stores the one suite runs against.
enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    /// SQLite always; PostgreSQL when it is installed, and always in CI (where a missing one fails the suite).
    static var tested: [StoreBackend] { PostgresServer.testsEnabled ? [.sqlite, .postgres] : [.sqlite] }

    var testDescription: String { rawValue }
}

/// One test's session store of one backend: a new SQLite file, or a new session in the tests' PostgreSQL database.
/// ``open()`` opens it again as another process would (a new file handle, a new fleet connection).
final class StoreHarness: @unchecked Sendable {
    let backend: StoreBackend
    let root: String
    let session: String
    private var fleets: [PostgresFleet] = []

    private init(_ backend: StoreBackend) {
        self.backend = backend
        root = NSTemporaryDirectory() + "haul-store-contract-" + UUID().uuidString
        session = "s-" + UUID().uuidString.prefix(8).lowercased()
    }

    /// The tests' database on the test process's PostgreSQL server, made once.
    static let database = LazyValue { try PostgresServer.shared().createDatabase() }

    /// Runs `body` with a fresh harness of `backend`, closed after.
    static func with<T>(_ backend: StoreBackend, _ body: (StoreHarness) async throws -> T) async throws -> T {
        let harness = StoreHarness(backend)
        do {
            let value = try await body(harness)
            await harness.close()
            return value
        } catch {
            await harness.close()
            throw error
        }
    }

    /// The store, opened (again).
    func open(node: String = "test-node", leaseTerms: LeaseTerms = LeaseTerms()) async throws -> any SessionStore {
        switch backend {
        case .sqlite:
            return try TaskStore(path: root + "/sessions/s1/tasks.sqlite")
        case .postgres:
            let fleet = try await openFleet(node: node, leaseTerms: leaseTerms)
            return fleet.store(session: session)
        }
    }

    /// A new connection to the tests' database as `node` (PostgreSQL only).
    func openFleet(
        node: String = "test-node", leaseTerms: LeaseTerms = LeaseTerms(), quietPollInterval: Duration = .seconds(15)
    ) async throws -> PostgresFleet {
        let url = try Self.database.get()
        try await SchemaOnce.shared.prepare(url)
        let fleet = try await PostgresFleet.open(
            try PostgresAddress.parse(url), node: node, leaseTerms: leaseTerms, quietPollInterval: quietPollInterval)
        fleets.append(fleet)
        return fleet
    }

    func close() async {
        for fleet in fleets { await fleet.close() }
        fleets = []
        try? FileManager.default.removeItem(atPath: root)
    }

    func newTask(_ n: Int, id: String? = nil, priority: Int = 0) -> DownloadRequest {
        let spec = DownloadSpec(url: URL(string: "https://example.com/files/\(n).bin")!, destination: .directory(root + "/downloads"))
        return DownloadRequest(spec, priority: priority, id: id)
    }
}

/// A value made once, on first use, by a throwing function; its failure is kept too.
final class LazyValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<Value, any Error>?
    private let make: () throws -> Value

    init(_ make: @escaping () throws -> Value) { self.make = make }

    func get() throws -> Value {
        try lock.withLock {
            if let result { return try result.get() }
            let made = Result { try make() }
            result = made
            return try made.get()
        }
    }
}

/// The HaulError a call throws, or `nil` when it succeeds or throws something else.
func thrownHaulError<T>(_ body: () async throws -> T) async -> HaulError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error as? HaulError
    }
}

/// Gives the tests' database its schema once, before the tests open their fleets: dozens of tests opening an empty
/// database at once on a busy machine would otherwise queue on the migration lock (the tests of that race are in
/// PostgresSchemaTests, on databases of their own).
actor SchemaOnce {
    static let shared = SchemaOnce()
    private var preparing: [String: Task<Void, any Error>] = [:]

    func prepare(_ url: String) async throws {
        let task = preparing[url] ?? Task {
            let link = try PostgresLink(address: try PostgresAddress.parse(url), password: nil, node: "schema-once", logger: Logger(label: "test"))
            do {
                try await PostgresSchema.prepare(link)
                await link.close()
            } catch {
                await link.close()
                throw error
            }
        }
        preparing[url] = task
        try await task.value
    }
}
