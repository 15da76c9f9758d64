import Foundation
import HaulKit

// A daemon that is one node of a fleet: it opens a session when another node leaves a task waiting in it, applies the
// settings another node changed, and lists the fleet's nodes (`haul fleet`).
extension DaemonService {
    /// Follows what the fleet's other daemons change, until shutdown (nothing to follow on one machine).
    func startFollowingFleet() {
        guard follower == nil, let signals = catalog.signals() else { return }
        let interval = catalog.takeOverInterval ?? .seconds(5)
        follower = Task { [weak self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await signal in signals {
                        guard let self, !Task.isCancelled else { return }
                        await self.follow(signal)
                    }
                }
                // No one rings when a node dies: its sessions are opened here once its leases have expired.
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        guard let self, !Task.isCancelled else { return }
                        for name in await self.catalog.sessionsToTakeOver() { await self.openToClaim(name) }
                    }
                }
            }
        }
    }

    private func follow(_ signal: FleetSignal) async {
        guard !shuttingDown else { return }
        switch signal {
        case .tasks(let name, let waiting):
            guard waiting else { return }
            await openToClaim(name)
        case .settings(let name):
            await applySavedSettings(name)
        case .everything:
            for name in await catalog.sessionsWithWork() { await openToClaim(name) }
            for name in sessions.keys.sorted() { await applySavedSettings(name) }
        }
    }

    /// Opens session `name` (when it exists and is not open) so that it claims the tasks waiting in it.
    private func openToClaim(_ name: String) async {
        guard sessions[name] == nil, opening[name] == nil, closing[name] == nil,
              (try? SessionFolder.validate(identifier: name)) != nil else { return }
        do {
            _ = try await session(name)
            logger.info("opened session \(name): the fleet has tasks waiting in it")
        } catch {
            logger.debug("could not open session \(name) for the fleet's tasks: \(error)")
        }
    }

    /// Applies the settings of open session `name` as another node saved them.
    private func applySavedSettings(_ name: String) async {
        guard sessions[name] != nil, let saved = try? await catalog.settings(of: name)?.objectValue else { return }
        do {
            _ = try await session(name, configuring: Params(saved))
        } catch {
            logger.warning("could not apply the settings of session \(name) another node saved: \(error)")
        }
    }

    /// `fleet.nodes`: each daemon of the fleet with the tasks it runs; on one machine, this daemon.
    func fleetNodes() async throws -> FleetNodes.Result {
        var nodes = try await catalog.nodes()
        if catalog.node == nil { nodes = [await localNode()] }
        return FleetNodes.Result(store: catalog.location, node: catalog.node, nodes: nodes)
    }

    /// This daemon as a node of a fleet of one: the tasks its open sessions run (no leases: `secondsLeft` 0).
    private func localNode() async -> FleetNode {
        var leases: [FleetLease] = []
        for name in sessions.keys.sorted() {
            guard let session = sessions[name], let tasks = try? await session.runningTasks() else { continue }
            for task in tasks where task.state == .running {
                leases.append(FleetLease(
                    session: name, taskID: task.id, url: Redaction.url(task.url), bytes: task.bytes, total: task.total, secondsLeft: 0))
            }
        }
        let host = ProcessInfo.processInfo.hostName
        return FleetNode(name: host, host: host, pid: Int(getpid()), alive: true, stopped: false, secondsSinceSeen: 0, leases: leases)
    }
}
