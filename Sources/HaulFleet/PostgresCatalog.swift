import HaulKit
import PostgresNIO

/// A fleet's sessions for one daemon: every session's store, settings and tasks in the fleet's database, shared by
/// every node; the node's `HAUL_HOME` keeps only what is its own (its socket, its lock, each session's lock).
package final class PostgresCatalog: SessionCatalog {
    let fleet: PostgresFleet

    /// The sessions of `fleet`, for the daemon that opened it (which closes it with ``close()``).
    package init(fleet: PostgresFleet) {
        self.fleet = fleet
    }

    package var node: String? { fleet.node }
    package var location: String? { fleet.location }

    package func store(for name: String) -> (any SessionStore)? {
        fleet.store(session: name)
    }

    package func settings(of name: String) async throws -> JSONValue? {
        try await mapped {
            var binds = PostgresBindings()
            binds.append(name)
            let rows = try await fleet.link.query("SELECT settings FROM haul.session WHERE name = $1 AND settings IS NOT NULL", binds).rows
            guard let text = try rows.first?.makeRandomAccess()["settings"].decode(String.self) else { return nil }
            return JSONValue.parse(Array(text.utf8)) ?? .null
        }
    }

    /// Saves the settings and tells the other nodes (they apply them to the session if they have it open).
    package func saveSettings(_ settings: JSONValue, for name: String) async throws {
        try await mapped {
            try await fleet.link.transaction { transaction in
                var binds = PostgresBindings()
                binds.append(name)
                binds.append(settings.serialized)
                binds.append(fleet.node)
                try await transaction.query("""
                    INSERT INTO haul.session (name, settings, settings_xid, settings_writer)
                    VALUES ($1, $2, pg_current_xact_id()::text::bigint, $3)
                    ON CONFLICT (name) DO UPDATE SET settings = $2, settings_xid = pg_current_xact_id()::text::bigint, settings_writer = $3
                    """, binds)
                var notify = PostgresBindings()
                notify.append("s:" + name)
                try await transaction.query("SELECT pg_notify('\(PostgresSessionStore.channel)', $1)", notify)
            }
        }
    }

    package func sessionsWithWork() async -> [String] {
        (try? await names("""
            SELECT name FROM haul.session s WHERE settings IS NOT NULL AND EXISTS (
                SELECT 1 FROM haul.task t WHERE t.session = s.name AND t.state IN ('waiting', 'running'))
            ORDER BY name
            """)) ?? []
    }

    package func sessionNames() async -> [String] {
        (try? await names("SELECT name FROM haul.session WHERE settings IS NOT NULL ORDER BY name")) ?? []
    }

    package func signals() -> AsyncStream<FleetSignal>? {
        fleet.signals()
    }

    package func sessionsToTakeOver() async -> [String] {
        (try? await names("""
            SELECT DISTINCT session AS name FROM haul.task
            WHERE state = 'running' AND (lease_until IS NULL OR lease_until < now()) ORDER BY 1
            """)) ?? []
    }

    package var takeOverInterval: Duration? { fleet.leaseTerms.renewalInterval }

    package func nodes() async throws -> [FleetNode] {
        try await fleet.nodes()
    }

    /// Marks this node stopped and closes the connections.
    package func close() async {
        await fleet.deregister()
        await fleet.close()
    }

    private func names(_ sql: String) async throws -> [String] {
        try await fleet.link.query(sql).rows.map { try $0.makeRandomAccess()["name"].decode(String.self) }
    }

    private func mapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw fleet.mappedError(error)
        }
    }
}
