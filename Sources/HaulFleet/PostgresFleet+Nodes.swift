import Foundation
import HaulKit
import PostgresNIO

// The fleet's nodes (`haul.node`): a daemon registers under its name, is seen again with every heartbeat (by the
// database's clock) and is marked stopped when it stops in an orderly way.
extension PostgresFleet {
    /// Registers this daemon as its node, refusing a name another live daemon uses: two daemons of one name would
    /// take each other's tasks. A daemon with the same host and `HAUL_HOME` is this one's earlier process (it held
    /// the same home's lock, now this one's), so its name is taken over at once. Then beats every renewal interval.
    package func register(home: String) async throws {
        let host = ProcessInfo.processInfo.hostName
        do {
            try await link.transaction(durable: true) { transaction in
                var binds = PostgresBindings()
                binds.append(node)
                binds.append(leaseMilliseconds)
                let rows = try await transaction.query("""
                    SELECT host, pid, home, stopped, seen_at > now() - ($2 * interval '1 millisecond') AS live
                    FROM haul.node WHERE name = $1 FOR UPDATE
                    """, binds).rows
                if let row = rows.first?.makeRandomAccess(), try row["live"].decode(Bool.self), try !row["stopped"].decode(Bool.self) {
                    let otherHost = try row["host"].decode(String.self), otherHome = try row["home"].decode(String.self)
                    if otherHost != host || otherHome != home {
                        throw SessionStoreError.refused(
                            "node \(node) is already running in the fleet (pid \(try row["pid"].decode(Int.self)) on \(otherHost)); give this daemon another --node")
                    }
                }
                var register = PostgresBindings()
                register.append(node)
                register.append(instance)
                register.append(host)
                register.append(Int64(getpid()))
                register.append(home)
                try await transaction.query("""
                    INSERT INTO haul.node (name, instance, host, pid, home, started_at, seen_at, stopped)
                    VALUES ($1, $2, $3, $4, $5, now(), now(), false)
                    ON CONFLICT (name) DO UPDATE SET instance = $2, host = $3, pid = $4, home = $5, started_at = now(), seen_at = now(),
                        stopped = false
                    """, register)
            }
        } catch {
            throw mappedError(error)
        }
        startHeartbeat()
    }

    private func startHeartbeat() {
        let interval = leaseTerms.renewalInterval
        bells.withLockedValue { bells in
            guard bells.heartbeat == nil, !bells.closed else { return }
            bells.heartbeat = Task { [self] in
                // Until the fleet closes (cancelled).
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard !Task.isCancelled else { return }
                    var binds = PostgresBindings()
                    binds.append(node)
                    binds.append(instance)
                    _ = try? await link.query("UPDATE haul.node SET seen_at = now() WHERE name = $1 AND instance = $2", binds)
                }
            }
        }
    }

    /// Marks this node stopped (an orderly stop).
    package func deregister() async {
        let heartbeat = bells.withLockedValue { bells in
            defer { bells.heartbeat = nil }
            return bells.heartbeat
        }
        heartbeat?.cancel()
        await heartbeat?.value
        var binds = PostgresBindings()
        binds.append(node)
        binds.append(instance)
        _ = try? await link.query("UPDATE haul.node SET stopped = true, seen_at = now() WHERE name = $1 AND instance = $2", binds)
    }

    /// Every node, with the tasks each runs (by its leases, live or expired).
    package func nodes() async throws -> [FleetNode] {
        do {
            var binds = PostgresBindings()
            binds.append(leaseMilliseconds)
            let nodes = try await link.query("""
                SELECT name, host, pid, stopped, seen_at > now() - ($1 * interval '1 millisecond') AS live,
                    extract(epoch FROM now() - seen_at)::float8 AS seen
                FROM haul.node ORDER BY name
                """, binds).rows
            let leases = try await link.query("""
                SELECT node, session, id, url, bytes, total, coalesce(extract(epoch FROM lease_until - now())::float8, 0) AS left_seconds
                FROM haul.task WHERE state = 'running' AND node IS NOT NULL ORDER BY node, session, sequence
                """).rows
            var byNode: [String: [FleetLease]] = [:]
            for row in leases {
                let r = row.makeRandomAccess()
                byNode[try r["node"].decode(String.self), default: []].append(FleetLease(
                    session: try r["session"].decode(String.self), taskID: try r["id"].decode(String.self),
                    url: Redaction.url(try r["url"].decode(String.self)), bytes: try r["bytes"].decode(Int64.self),
                    total: try r["total"].decode(Int64?.self), secondsLeft: try r["left_seconds"].decode(Double.self)))
            }
            var result = try nodes.map { row -> FleetNode in
                let r = row.makeRandomAccess()
                let name = try r["name"].decode(String.self)
                return FleetNode(
                    name: name, host: try r["host"].decode(String.self), pid: try r["pid"].decode(Int.self),
                    alive: try r["live"].decode(Bool.self) && !(try r["stopped"].decode(Bool.self)), stopped: try r["stopped"].decode(Bool.self),
                    secondsSinceSeen: max(0, try r["seen"].decode(Double.self)), leases: byNode.removeValue(forKey: name) ?? [])
            }
            // Tasks under the name of a node that never registered (a store of an earlier schema).
            for (name, leases) in byNode.sorted(by: { $0.key < $1.key }) {
                result.append(FleetNode(name: name, host: "", pid: 0, alive: false, stopped: false, secondsSinceSeen: 0, leases: leases))
            }
            return result
        } catch {
            throw mappedError(error)
        }
    }

    /// The lease's length in milliseconds.
    var leaseMilliseconds: Int64 {
        let (seconds, attoseconds) = leaseTerms.duration.components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
