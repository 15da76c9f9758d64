import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulFleet
@testable import HaulKit

/// The fleet's schema is versioned: an empty database gets it, a newer daemon upgrades an older one keeping its
/// tasks, and a database of a newer haul is refused before anything is written.
@Suite(.enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing)"), .timeLimit(.minutes(5)))
struct PostgresSchemaTests {
    func address() throws -> (PostgresAddress, PostgresServer, String) {
        let server = try PostgresServer.shared()
        let url = try server.createDatabase()
        return (try PostgresAddress.parse(url), server, String(url.split(separator: "/").last ?? ""))
    }

    @Test func anEmptyDatabaseGetsTheSchemaOnceEvenWhenDaemonsStartTogether() async throws {
        let (address, server, database) = try address()
        let fleets = try await withThrowingTaskGroup(of: PostgresFleet.self) { group in
            for n in 0..<4 { group.addTask { try await PostgresFleet.open(address, node: "n\(n)") } }
            var opened: [PostgresFleet] = []
            for try await fleet in group { opened.append(fleet) }
            return opened
        }
        for fleet in fleets {
            #expect(try await fleet.schemaVersion() == PostgresSchema.version)
            await fleet.close()
        }
        #expect(try server.psql("SELECT count(*) FROM haul.schema_migration", database: database) == "\(PostgresSchema.version)")
    }

    @Test func aNewerDaemonUpgradesAVersion1StoreKeepingItsTasks() async throws {
        let (address, server, database) = try address()
        let old = try await PostgresFleet.open(address, node: "old", schema: 1)
        #expect(try await old.schemaVersion() == 1)
        let oldStore = old.store(session: "kept")
        let spec = DownloadSpec(url: URL(string: "https://example.com/a.iso")!, destination: .file("/data/a.iso"))
        // Schema 1 has no fleet columns: write as a haul of that schema would have (the store's writes need them).
        try server.psql("""
            INSERT INTO haul.session (name) VALUES ('kept');
            INSERT INTO haul.task (session, id, url, destination_kind, destination_path, destination_key, spec, host, state, bytes,
                created_at, updated_at)
            VALUES ('kept', 'was-running', 'https://example.com/a.iso', 'file', '/data/a.iso', 'k1', '\(spec.json.serialized)',
                'example.com', 'running', 512, 1, 1);
            INSERT INTO haul.transfer (session, key, record) VALUES ('kept', 'rk', '{"x":1}')
            """, database: database)
        await old.close()
        _ = oldStore

        let new = try await PostgresFleet.open(address, node: "new")
        #expect(try await new.schemaVersion() == PostgresSchema.version)
        let store = new.store(session: "kept")
        let task = try #require(try await store.task(id: "was-running"))
        #expect(task.state == .running && task.bytes == 512 && task.spec == spec && task.node == nil && task.epoch == 0)
        #expect(try store.record(key: "rk") == "{\"x\":1}")
        #expect(try server.psql("SELECT lease_until IS NULL FROM haul.task WHERE id = 'was-running'", database: database) == "t",
                "a task left running by schema 1 has no lease: the first claim takes it over")
        await new.close()
    }

    @Test func aStoreOfANewerHaulIsRefusedAndLeftAsItIs() async throws {
        let (address, server, database) = try address()
        let fleet = try await PostgresFleet.open(address, node: "n")
        await fleet.close()
        try server.psql("INSERT INTO haul.schema_migration (version) VALUES (99)", database: database)
        let error = await #expect(throws: SessionStoreError.self) { try await PostgresFleet.open(address, node: "n") }
        #expect("\(error.map { "\($0)" } ?? "")".contains("newer version of haul (schema 99)"))
        #expect(try server.psql("SELECT max(version) FROM haul.schema_migration", database: database) == "99")
    }

    @Test func anUnreachableStoreSaysWhereWithoutThePassword() async throws {
        // Port 1 of loopback: nothing listens there, connections are refused at once.
        let port = 1
        let address = try PostgresAddress.parse("postgres://haul:secret-word@127.0.0.1:\(port)/nothing")
        let error = await #expect(throws: SessionStoreError.self) { try await PostgresFleet.open(address, node: "n") }
        let text = "\(error.map { "\($0)" } ?? "")"
        #expect(text.contains("postgres://haul@127.0.0.1:\(port)/nothing") && text.contains("cannot be reached"), "\(text)")
        #expect(!text.contains("secret-word"))
    }
}
