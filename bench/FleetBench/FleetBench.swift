import Foundation
import HaulFleet
import HaulKit

/// The claim rate of a fleet's store alone, without downloads (see bench/README.md, `fleet.sh`):
///
///     haul-fleet-bench --store postgres://USER@HOST:PORT/DB [--tasks 10000] [--nodes 1] [--batch 16]
///     haul-fleet-bench --sqlite DIR [--tasks 10000] [--batch 16]
///
/// It adds TASKS tasks in one call, then NODES nodes (each its own connections, as separate daemons would have) claim
/// them BATCH at a time and conclude each one as a finished download does (its state, its final resume record and a
/// journal entry in one transaction, fenced by its lease), the BATCH conclusions of a claim at once, as a node's
/// downloads end. With --sqlite, one session's SQLite file instead (in a new folder inside DIR), started and concluded as a single daemon does
/// (`startIfWaiting`, then the conclusion), BATCH at once. Prints one line of JSON: `tasks`, `nodes`, `batch`,
/// `add_seconds`, `run_seconds`, `tasks_per_second` (claimed and concluded), and for PostgreSQL `writes_per_task`
/// (transactions that wrote during the run, per task: each takes a transaction id, reads take none).
@main
struct FleetBench {
    struct Options {
        var store: String?
        var sqlite: String?
        var tasks = 10_000
        var nodes = 1
        var batch = 16
    }

    static func main() async {
        do {
            let options = try parse(Array(CommandLine.arguments.dropFirst()))
            let result = try await (options.sqlite != nil ? runSQLite(options) : runPostgres(options))
            print(result)
        } catch let error as UsageError {
            FileHandle.standardError.write(Data("haul-fleet-bench: \(error.message)\n".utf8))
            FileHandle.standardError.write(Data(
                "usage: haul-fleet-bench (--store URL [--nodes N] | --sqlite DIR) [--tasks N] [--batch N]\n".utf8))
            exit(2)
        } catch {
            FileHandle.standardError.write(Data("haul-fleet-bench: error: \(error)\n".utf8))
            exit(1)
        }
    }

    struct UsageError: Error { let message: String }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var index = 0
        func value() throws -> String {
            index += 1
            guard index < arguments.count else { throw UsageError(message: "\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        func count() throws -> Int {
            let text = try value()
            guard let number = Int(text), number > 0, number <= 1_000_000 else { throw UsageError(message: "\(text) is not a count") }
            return number
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--store": options.store = try value()
            case "--sqlite": options.sqlite = try value()
            case "--tasks": options.tasks = try count()
            case "--nodes": options.nodes = try count()
            case "--batch": options.batch = try count()
            default: throw UsageError(message: "unknown argument \(arguments[index])")
            }
            index += 1
        }
        guard (options.store == nil) != (options.sqlite == nil) else { throw UsageError(message: "give --store or --sqlite") }
        return options
    }

    static func requests(_ count: Int, folder: String) -> [DownloadRequest] {
        (0..<count).compactMap { n in
            URL(string: "http://127.0.0.1:9/file-\(n).bin").map { DownloadRequest(url: $0, destination: .file("\(folder)/file-\(n).bin")) }
        }
    }

    /// Concludes `id` as a finished download does: its final record and journal entry with its state.
    static func conclude(_ store: any SessionStore, _ id: String, lease: TaskLease?, folder: String) async throws {
        let final = StoredRecord(key: TransferRecord.key(destinationPath: "\(folder)/\(id)"), value: "{\"state\":\"finished\"}")
        _ = try await store.conclude(
            id: id, lease: lease, journaling: "finished", payload: { "{\"id\":\"\($0.id)\"}" }, finalRecord: final,
            { $0.state = .finished; $0.bytes = 16_384; $0.total = 16_384 })
    }

    static func runPostgres(_ options: Options) async throws -> String {
        guard let url = options.store else { throw UsageError(message: "give --store") }
        let address = try PostgresAddress.parse(url)
        let session = "claim-bench-\(UUID().uuidString.prefix(8).lowercased())"
        let folder = "/nonexistent/claim-bench"
        let adder = try await PostgresFleet.open(address, node: "bench-adder")
        let store = adder.store(session: session)
        let addStart = ContinuousClock.now
        _ = try await store.add(requests(options.tasks, folder: folder))
        let added = ContinuousClock.now - addStart
        var fleets: [PostgresFleet] = []
        for n in 0..<options.nodes { fleets.append(try await PostgresFleet.open(address, node: "bench-\(n)")) }
        let writesBefore = try await adder.transactionsWritten()
        let start = ContinuousClock.now
        let done = try await withThrowingTaskGroup(of: Int.self) { group in
            for fleet in fleets {
                group.addTask {
                    let node = fleet.store(session: session)
                    var count = 0
                    // Bounded: every turn concludes what it claimed, until a claim finds nothing.
                    for _ in 0..<(options.tasks + 1) {
                        let claimed = try await node.claim(.init(slots: options.batch))
                        if claimed.isEmpty { break }
                        try await withThrowingTaskGroup(of: Void.self) { conclusions in
                            for claim in claimed {
                                conclusions.addTask { try await conclude(node, claim.task.id, lease: claim.lease, folder: folder) }
                            }
                            try await conclusions.waitForAll()
                        }
                        count += claimed.count
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        let took = ContinuousClock.now - start
        let writes = try await adder.transactionsWritten() - writesBefore - 1
        for fleet in fleets { await fleet.close() }
        await adder.close()
        guard done == options.tasks else { throw UsageError(message: "\(done) of \(options.tasks) tasks were claimed") }
        return String(format: """
            {"store":"postgresql","tasks":%d,"nodes":%d,"batch":%d,"add_seconds":%.3f,"run_seconds":%.3f,"tasks_per_second":%.1f,"writes_per_task":%.2f}
            """, options.tasks, options.nodes, options.batch, added.seconds, took.seconds, Double(done) / took.seconds,
            Double(writes) / Double(options.tasks))
    }

    static func runSQLite(_ options: Options) async throws -> String {
        guard let directory = options.sqlite else { throw UsageError(message: "give --sqlite") }
        // A folder of its own: the store makes its folder private.
        let store = try TaskStore(path: directory + "/claim-bench-\(UUID().uuidString.prefix(8))/tasks.sqlite")
        let folder = "/nonexistent/claim-bench"
        let addStart = ContinuousClock.now
        let added = try store.add(requests(options.tasks, folder: folder)).map(\.task.id)
        let addTime = ContinuousClock.now - addStart
        let start = ContinuousClock.now
        for first in stride(from: 0, to: added.count, by: options.batch) {
            let ids = added[first..<min(first + options.batch, added.count)]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for id in ids {
                    group.addTask {
                        _ = try store.startIfWaiting(id: id)
                        try await conclude(store, id, lease: nil, folder: folder)
                    }
                }
                try await group.waitForAll()
            }
        }
        let took = ContinuousClock.now - start
        return String(format: """
            {"store":"sqlite","tasks":%d,"nodes":1,"batch":%d,"add_seconds":%.3f,"run_seconds":%.3f,"tasks_per_second":%.1f}
            """, options.tasks, options.batch, addTime.seconds, took.seconds, Double(added.count) / took.seconds)
    }
}
