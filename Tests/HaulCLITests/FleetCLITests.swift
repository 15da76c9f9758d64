#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// `haul daemon --store`, `--node`, `HAUL_STORE`, the store's password, and what `haul ls` and `haul fleet` show of a
/// fleet, through real processes.
@Suite(.serialized, .enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing)"))
struct FleetCLITests {
    /// The password comes from the URL, PGPASSWORD or a private ~/.pgpass (not one others may read), and is never
    /// printed: not in the log, not in an error, not in `haul fleet`.
    @Test func theStoresPasswordIsTakenFromWhereLibpqTakesItAndNeverShown() async throws {
        let secret = "pw-" + UUID().uuidString.prefix(8).lowercased()
        let postgres = try PostgresServer.make(password: secret)
        defer { postgres.close() }
        let url = try postgres.createDatabase()
        let withPassword = url.replacingOccurrences(of: "haul@", with: "haul:\(secret)@")
        try await Sandbox.with { sandbox in
            /// Starts `haul daemon` as node `node` with `environment`; its result once stopped (it is stopped with SIGTERM
            /// if it started).
            func daemon(_ node: String, store: String, _ environment: [String: String]) async throws -> (started: Bool, log: String, fleet: String) {
                let fleet = try FleetProcesses(sandbox, store: store)
                do {
                    let run = try await fleet.start(node, environment: environment)
                    let shown = try await fleet.haul(node, ["fleet"])
                    run.signal(SIGTERM)
                    let result = try await run.wait()
                    return (true, result.stderr, shown.stdout + shown.stderr)
                } catch {
                    return (false, "\(error)", "")
                }
            }
            let fromURL = try await daemon("url", store: withPassword, [:])
            #expect(fromURL.started, "\(fromURL.log)")
            #expect(fromURL.fleet.contains("url") && fromURL.fleet.contains("alive"), "\(fromURL.fleet)")
            let fromEnvironment = try await daemon("env", store: url, ["PGPASSWORD": secret])
            #expect(fromEnvironment.started, "\(fromEnvironment.log)")
            let home = sandbox.root + "/user"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let pgpass = home + "/.pgpass"
            FileManager.default.createFile(
                atPath: pgpass, contents: Data("127.0.0.1:\(postgres.port):*:haul:\(secret)\n".utf8), attributes: [.posixPermissions: 0o600])
            let fromFile = try await daemon("file", store: url, ["HOME": home, "PGPASSWORD": ""])
            #expect(fromFile.started, "\(fromFile.log)")
            chmod(pgpass, 0o644)
            let readable = try await daemon("open", store: url, ["HOME": home, "PGPASSWORD": ""])
            #expect(!readable.started, "a password file others may read is ignored, as libpq does")
            #expect(readable.log.contains("password authentication failed") || readable.log.contains("cannot be reached"), "\(readable.log)")
            let wrong = try await daemon("wrong", store: url.replacingOccurrences(of: "haul@", with: "haul:nope-\(secret)@"), [:])
            #expect(!wrong.started)
            for outcome in [fromURL, fromEnvironment, fromFile, readable, wrong] {
                #expect(!outcome.log.contains(secret) && !outcome.fleet.contains(secret), "the password is never shown")
            }
        }
    }

    /// One machine's `haul ls` has no NODE column and no `node` in its JSON; a fleet's shows the node of each task, and
    /// `haul fleet` lists the nodes with the tasks each holds. HAUL_STORE works as --store.
    @Test func aFleetShowsItsNodesAndEachTasksNode() async throws {
        let postgres = try PostgresServer.shared()
        let url = try postgres.createDatabase()
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        var slow = Resource(body: TestData.bytes(2_000_000, seed: 31), etag: "\"s\"")
        slow.faults.throttleBytesPerSecond = 100_000
        server.serve("/slow.bin", slow)
        server.serve("/quick.bin", Resource(body: TestData.bytes(1_000, seed: 32), etag: "\"q\""))
        try await Sandbox.with { sandbox in
            // One machine first.
            let alone = try await startDaemon(sandbox)
            let added = try await sandbox.run(["add", server.url("/quick.bin"), "--dir", sandbox.work])
            #expect(added.exitCode == 0)
            try await eventuallyAsync("the task finished", timeout: .seconds(60)) {
                try await sandbox.run(["ls"]).stdout.contains("finished")
            }
            let plain = try await sandbox.run(["ls"])
            #expect(!plain.stdout.contains("NODE"), "\(plain.stdout)")
            #expect(!(try await sandbox.run(["ls", "--json"])).stdout.contains("\"node\""))
            let single = try await sandbox.run(["fleet"])
            #expect(single.exitCode == 0 && single.stdout.contains("alive") && !single.stdout.contains("store:"), "\(single.stdout)")
            // A daemon of its own holds no leases: a task it runs is shown running, never "lease expired".
            let running = try await sandbox.run(["add", server.url("/slow.bin"), "-o", sandbox.path("alone-slow.bin")])
            let runningID = try #require(running.stdoutLines.first, "\(running.stderr)")
            var fleetList = ""
            try await eventuallyAsync("haul fleet lists the running task", timeout: .seconds(60)) {
                fleetList = try await sandbox.run(["fleet"]).stdout
                return fleetList.contains(String(runningID.prefix(8)))
            }
            #expect(fleetList.contains("running") && !fleetList.contains("lease"), "\(fleetList)")
            #expect(try await sandbox.run(["rm", runningID]).exitCode == 0)
            alone.signal(SIGTERM)
            _ = try await alone.wait()

            let fleet = try FleetProcesses(sandbox, store: url)
            try await fleet.start("n1", environment: [:])
            // HAUL_STORE in place of --store: started by hand without the flag.
            try FileManager.default.createDirectory(atPath: fleet.home("n2"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let n2 = try sandbox.start(
                ["daemon", "--socket", fleet.socket("n2"), "--node", "n2"], environment: ["HAUL_HOME": fleet.home("n2"), "HAUL_STORE": url])
            try await eventually("n2 accepts connections", timeout: .seconds(60)) {
                guard n2.isRunning else { throw HarnessError("n2 exited: \(n2.stderrSoFar())") }
                return RawSocketClient.canConnect(fleet.socket("n2"))
            }
            #expect(n2.stderrSoFar().contains("node n2 of the fleet"))
            let add = try await fleet.haul("n1", ["add", "--segments", "1", "--dir", fleet.folder, server.url("/slow.bin")])
            #expect(add.exitCode == 0, "\(add.stderr)")
            var listed = ""
            try await eventuallyAsync("the task runs on a node", timeout: .seconds(60)) {
                listed = try await fleet.haul("n2", ["ls"]).stdout
                return listed.contains("running") && (listed.contains(" n1 ") || listed.contains(" n2 "))
            }
            #expect(listed.contains("NODE"), "\(listed)")
            let json = try await fleet.tasks(through: "n2")
            let runner = try #require(json.first?["node"] as? String)
            #expect(["n1", "n2"].contains(runner))
            let shown = try await fleet.haul("n1", ["fleet"])
            #expect(shown.stdout.contains("store: \(url)"), "\(shown.stdout)")
            #expect(shown.stdout.contains("n1") && shown.stdout.contains("n2") && shown.stdout.contains("slow.bin"), "\(shown.stdout)")
            // A second daemon under a name in use is refused.
            try FileManager.default.createDirectory(atPath: fleet.home("dup"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let duplicate = try await sandbox.start(
                ["daemon", "--socket", fleet.home("dup") + "/d.sock", "--store", url, "--node", "n1"], environment: ["HAUL_HOME": fleet.home("dup")]
            ).wait()
            #expect(duplicate.exitCode != 0 && duplicate.stderr.contains("node n1 is already running in the fleet"), "\(duplicate.stderr)")
        }
    }

    @Test func aStoreOrNodeGivenWrongIsOneLineAndExitCode2() async throws {
        try await Sandbox.with { sandbox in
            for (arguments, message) in [
                (["daemon", "--node", "n1"], "--node names a daemon of a fleet"),
                (["daemon", "--store", "mysql://me@h/db"], "--store: the store must be a URL such as postgres://"),
                (["daemon", "--store", "postgres://h/db"], "names no user"),
                (["daemon", "--store", "postgres://me@h/db", "--node", "a b"], "--node"),
                (["daemon", "--store", "postgres://me@h/db", "--lease", "1"], "--lease must be between 3 and 3600 seconds"),
            ] {
                let result = try await sandbox.run(arguments)
                #expect(result.exitCode == 2, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            }
        }
    }
}
#endif
