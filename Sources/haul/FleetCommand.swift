import ArgumentParser
import Foundation
import HaulKit

struct FleetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet", abstract: "List the daemons of the fleet (haul daemon --store), with the tasks each runs under its lease.",
        discussion: """
            On one machine it lists this daemon only. A node is alive while the store heard from it within a lease; \
            the tasks of one that is gone are taken over by another once their leases expire (docs/fleet.md).

            """ + HelpText.examples("haul fleet", "haul fleet --json                     # the protocol's fleet.nodes answer"))

    @Flag(help: "The daemon's answer as one JSON object.")
    var json = false

    @OptionGroup var daemon: DaemonClientOptions

    func run() async throws {
        let answer: FleetNodes.Result
        do {
            let connection = try await daemon.connect()
            answer = try await connection.call(FleetNodes.self, NoParameters())
            await connection.close()
        } catch {
            throw CLIFailure.exit(error)
        }
        if json {
            print(try JSONValueEncoder.encode(answer).serialized)
            return
        }
        let nodes = answer.nodes.map(\.value)
        if let store = answer.store { print("store: \(store)") }
        var rows = [["NODE", "STATE", "SEEN", "HOST", "PID", "TASKS"]]
        for node in nodes {
            let state = node.stopped ? "stopped" : node.alive ? "alive" : "gone"
            let mark = node.name == answer.node ? " *" : ""
            rows.append([
                TerminalText.sanitized(node.name) + mark, state, "\(Int(node.secondsSinceSeen.rounded())) s ago",
                node.host.isEmpty ? "-" : TerminalText.sanitized(node.host),
                node.pid > 0 ? String(node.pid) : "-", String(node.leases.count),
            ])
        }
        print(TaskTable.aligned(rows).joined(separator: "\n"))
        for node in nodes where !node.leases.isEmpty {
            print("\n\(TerminalText.sanitized(node.name)):")
            for lease in node.leases {
                let bytes = ByteFormat.string(lease.bytes) + (lease.total.map { " of " + ByteFormat.string($0) } ?? "")
                // A daemon of its own (no fleet store) holds no leases: its tasks simply run.
                let left = answer.store == nil ? "running" : lease.secondsLeft > 0 ? "lease \(Int(lease.secondsLeft.rounded())) s" : "lease expired"
                print("  \(TerminalText.sanitized(String(lease.taskID.prefix(8))))  \(lease.session)  \(bytes)  \(left)  \(TerminalText.sanitized(lease.url))")
            }
        }
    }
}
