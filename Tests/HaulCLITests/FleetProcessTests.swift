#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// A fleet of real `haul daemon` processes on one PostgreSQL store and one download folder, through its failures: a
/// node killed mid-run, the database stopped for ten seconds, a node whose clock is a minute off. One at a time: each
/// runs several daemons and a database on a machine of two cores.
@Suite(.serialized, .enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing)"))
struct FleetProcessTests {
    /// `count` files of `size` bytes served at `rate` bytes per second each (ranges, strong ETags); their bodies by name.
    static func serve(_ server: TestServer, _ count: Int, size: Int, rate: Int) -> [String: [UInt8]] {
        var bodies: [String: [UInt8]] = [:]
        for n in 0..<count {
            var resource = Resource(body: TestData.bytes(size + n * 997, seed: UInt64(700 + n)), etag: "\"f\(n)\"")
            resource.faults.throttleBytesPerSecond = rate
            server.serve("/f\(n).bin", resource)
            bodies["f\(n).bin"] = resource.body
        }
        return bodies
    }

    /// Every file is exact, and none was fetched whole more than once: at most one response carried the whole file,
    /// and all of them together fewer bytes than twice its size. (A node killed before its first byte arrived may
    /// leave a request from byte 0 that sent nothing: the node taking over asks from byte 0 again.)
    static func expectExactAndNeverFetchedWholeTwice(_ bodies: [String: [UInt8]], _ fleet: FleetProcesses, _ server: TestServer) {
        for (name, body) in bodies {
            #expect(readBytes(fleet.folder + "/" + name) == body, "\(name) is exact")
            let requests = server.requests("/" + name)
            let whole = requests.filter { $0.bytesSent >= body.count }.count
            let sent = requests.reduce(0) { $0 + $1.bytesSent }
            #expect(whole <= 1 && sent < 2 * body.count, "\(name): \(whole) whole responses, \(sent) bytes sent for \(body.count)")
        }
    }

    /// The number of claims of each task (its epoch), from the store.
    static func epochs(_ server: PostgresServer, _ database: String) throws -> [String: Int] {
        let text = try server.psql("SELECT id || ' ' || epoch FROM haul.task", database: database)
        var epochs: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let epoch = Int(parts[1]) { epochs[String(parts[0])] = epoch }
        }
        return epochs
    }

    static func database(of url: String) -> String { String(url.split(separator: "/").last ?? "") }

    /// Three nodes share the queue; one is killed with SIGKILL while it downloads. Its tasks are taken over once their
    /// leases expire, resumed from their last checkpoint in the shared folder: every file ends exact, none is fetched
    /// whole twice, and only the killed node's tasks were claimed twice.
    @Test func aNodeKilledMidRunLosesNothingAndNoFileIsFetchedWholeTwice() async throws {
        let postgres = try PostgresServer.shared()
        let url = try postgres.createDatabase()
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        try await Sandbox.with { sandbox in
            let fleet = try FleetProcesses(sandbox, store: url)
            let bodies = Self.serve(server, 18, size: 1_200_000, rate: 200_000)
            for node in ["a", "b", "c"] { try await fleet.start(node, ["--lease", "8"]) }
            let urls = (0..<18).map { server.url("/f\($0).bin") }
            let added = try await fleet.haul("a", ["add", "--dir", fleet.folder] + urls)
            #expect(added.exitCode == 0, "\(added.stderr)")
            // Node b has downloads under way with durable progress (a checkpoint a second): kill it.
            var onB: [String] = []
            try await eventuallyAsync("node b runs tasks with bytes held", timeout: .seconds(120), step: .milliseconds(200)) {
                let tasks = (try? await fleet.tasks(through: "a")) ?? []
                onB = tasks.filter { $0["node"] as? String == "b" && $0["state"] as? String == "running" && (($0["bytes"] as? Int) ?? 0) > 300_000 }
                    .compactMap { $0["id"] as? String }
                return !onB.isEmpty
            }
            fleet.daemon("b")?.signal(SIGKILL)
            // The tasks b held when it died are the ones still running on it now (on a busy machine the list above
            // may be seconds old, and b may have finished some of them meanwhile).
            let afterKill = try await fleet.tasks(through: "a")
            onB = afterKill.filter { $0["node"] as? String == "b" && $0["state"] as? String == "running" }.compactMap { $0["id"] as? String }
            #expect(!onB.isEmpty, "node b was killed while it ran tasks: \(FleetProcesses.states(afterKill))")
            let done = try await fleet.waitUntilAllFinished(18, through: "a")
            Self.expectExactAndNeverFetchedWholeTwice(bodies, fleet, server)
            for task in done where onB.contains(task["id"] as? String ?? "") {
                #expect(["a", "c"].contains(task["node"] as? String ?? ""), "a killed node's task ends on another: \(task)")
                let name = ((task["path"] as? String) ?? "").split(separator: "/").last.map(String.init) ?? ""
                #expect(server.requests("/" + name).contains { $0.header("Range") != nil }, "\(name) was resumed, not fetched again")
            }
            let epochs = try Self.epochs(postgres, Self.database(of: url))
            #expect(onB.allSatisfy { (epochs[$0] ?? 0) >= 2 }, "the killed node's tasks were taken over: \(epochs)")
            let answer = try await fleet.haul("a", ["fleet", "--json"])
            let object = try JSONSerialization.jsonObject(with: Data(answer.stdout.utf8)) as? [String: Any]
            let nodes = (object?["nodes"] as? [[String: Any]]) ?? []
            #expect(nodes.compactMap { $0["name"] as? String }.sorted() == ["a", "b", "c"])
            let killed = nodes.first { $0["name"] as? String == "b" }
            #expect(killed?["alive"] as? Bool == false && (killed?["leases"] as? [Any])?.isEmpty == true, "\(answer.stdout)")
        }
    }

    /// The only task runs on node a; node b has closed the session as idle. When a is killed, nobody rings, yet b
    /// opens the session once the lease has expired and takes the task over.
    @Test func aDeadNodesTaskIsTakenOverByANodeThatHadClosedTheSession() async throws {
        let postgres = try PostgresServer.shared()
        let url = try postgres.createDatabase()
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        try await Sandbox.with { sandbox in
            let fleet = try FleetProcesses(sandbox, store: url)
            let bodies = Self.serve(server, 1, size: 2_000_000, rate: 150_000)
            try await fleet.start("a", ["--lease", "6"])
            let added = try await fleet.haul("a", ["add", "--segments", "1", "--dir", fleet.folder, server.url("/f0.bin")])
            #expect(added.exitCode == 0, "\(added.stderr)")
            try await eventuallyAsync("node a runs the task with bytes held", timeout: .seconds(60), step: .milliseconds(200)) {
                let tasks = (try? await fleet.tasks(through: "a")) ?? []
                return tasks.first?["node"] as? String == "a" && ((tasks.first?["bytes"] as? Int) ?? 0) > 200_000
            }
            // Node b starts, finds nothing to claim, and closes the session after a second idle.
            try await fleet.start("b", ["--lease", "6", "--session-idle-timeout", "1"])
            try await eventually("node b closed the session as idle", timeout: .seconds(60)) {
                fleet.daemon("b")?.stderrSoFar().contains("closed session default (idle)") == true
            }
            fleet.daemon("a")?.signal(SIGKILL)
            let done = try await fleet.waitUntilAllFinished(1, through: "b")
            #expect(done.first?["node"] as? String == "b")
            Self.expectExactAndNeverFetchedWholeTwice(bodies, fleet, server)
        }
    }

    /// PostgreSQL stops for ten seconds while every task downloads: the downloads go on (their files grow), their
    /// state is written once it is back, and every task ends once, exact, fetched whole once.
    @Test func theStoreStoppedForTenSecondsLosesAndDoublesNothing() async throws {
        let postgres = try PostgresServer.make()
        defer { postgres.close() }
        let url = try postgres.createDatabase()
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        try await Sandbox.with { sandbox in
            let fleet = try FleetProcesses(sandbox, store: url)
            let bodies = Self.serve(server, 6, size: 3_000_000, rate: 200_000)
            for node in ["a", "b"] { try await fleet.start(node) }
            // One connection each, so that each download lasts its 15 s.
            let added = try await fleet.haul("a", ["add", "--segments", "1", "--dir", fleet.folder] + (0..<6).map { server.url("/f\($0).bin") })
            #expect(added.exitCode == 0, "\(added.stderr)")
            var seen: [[String: Any]] = []
            try await eventuallyAsync(
                "all six running with bytes held (\(FleetProcesses.states(seen)))\n\(fleet.logs())", timeout: .seconds(120), step: .milliseconds(200)
            ) {
                seen = (try? await fleet.tasks(through: "a")) ?? seen
                return seen.count == 6 && seen.allSatisfy { $0["state"] as? String == "running" && (($0["bytes"] as? Int) ?? 0) > 100_000 }
            }
            let partials = { bodies.keys.map { fileSize(fleet.folder + "/" + $0 + ".haul-part") ?? fileSize(fleet.folder + "/" + $0) ?? 0 }.reduce(0, +) }
            postgres.stop()
            let before = partials()
            try await Task.sleep(for: .seconds(10))
            #expect(partials() > before + 1_000_000, "the downloads went on while the store was away")
            #expect(fleet.daemon("a")?.isRunning == true && fleet.daemon("b")?.isRunning == true)
            try postgres.start()
            _ = try await fleet.waitUntilAllFinished(6, through: "b")
            Self.expectExactAndNeverFetchedWholeTwice(bodies, fleet, server)
            let epochs = try Self.epochs(postgres, Self.database(of: url))
            #expect(epochs.count == 6 && epochs.values.allSatisfy { $0 == 1 }, "each task claimed once: \(epochs)")
            let journal = try postgres.psql("SELECT count(*) FROM haul.journal WHERE kind = 'finished'", database: Self.database(of: url))
            #expect(journal == "6", "each task's end journaled once")
        }
    }

    /// One node's wall clock is a minute ahead (preloaded, as a wrong clock would be), with leases of 8 s: were
    /// leases counted by a node's clock, it would take the other's tasks at once. Each task is claimed once.
    @Test(.enabled(if: ClockOffsetShim.compiler != nil || ExternalTools.inCI, "needs a C compiler (the Swift toolchain's clang) for the clock shim"))
    func aNodeWhoseClockIsAMinuteOffBreaksNothing() async throws {
        let postgres = try PostgresServer.shared()
        let url = try postgres.createDatabase()
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        try await Sandbox.with { sandbox in
            let shim = try ClockOffsetShim.build(in: sandbox.root)
            let skewed = ["LD_PRELOAD": shim, "HAUL_TEST_CLOCK_OFFSET": "60"]
            let shown = try await sandbox.start(["+%s"], binary: "/bin/date", environment: skewed).wait()
            let offset = (Int(shown.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - Int(Date().timeIntervalSince1970)
            #expect((55...65).contains(offset), "the shim sets the clock a minute ahead (\(offset) s)")
            let fleet = try FleetProcesses(sandbox, store: url)
            let bodies = Self.serve(server, 8, size: 1_200_000, rate: 200_000)
            try await fleet.start("true", ["--lease", "8"])
            try await fleet.start("ahead", ["--lease", "8"], environment: skewed)
            let added = try await fleet.haul("true", ["add", "--segments", "1", "--dir", fleet.folder] + (0..<8).map { server.url("/f\($0).bin") })
            #expect(added.exitCode == 0, "\(added.stderr)")
            let done = try await fleet.waitUntilAllFinished(8, through: "ahead")
            Self.expectExactAndNeverFetchedWholeTwice(bodies, fleet, server)
            let epochs = try Self.epochs(postgres, Self.database(of: url))
            #expect(epochs.count == 8 && epochs.values.allSatisfy { $0 == 1 }, "no lease was taken early: \(epochs)")
            #expect(Set(done.compactMap { $0["node"] as? String }) == ["true", "ahead"], "both nodes ran tasks")
        }
    }
}
#endif
