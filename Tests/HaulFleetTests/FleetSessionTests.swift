import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulFleet
@testable import HaulKit

/// Sessions of several nodes on one fleet store, in one process (each node its own HAUL_HOME, one download folder):
/// one queue, every task run once, each node's clients told what the others did, leases that fence.
@Suite(.enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing)"), .timeLimit(.minutes(5)))
struct FleetSessionTests {
    /// A node: its fleet connection and its session.
    struct Node {
        var fleet: PostgresFleet
        var session: LocalSession
    }

    /// Everything one test uses: a server, a shared download folder, nodes on one session of the tests' database.
    final class Fleet: @unchecked Sendable {
        let harness: StoreHarness
        let server: TestServer
        let folder: String
        var nodes: [Node] = []

        init(harness: StoreHarness, server: TestServer) throws {
            self.harness = harness
            self.server = server
            folder = harness.root + "/downloads"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }

        /// Starts node `name` (listening for the others' changes) with a session of `maxConcurrent` slots.
        func start(
            _ name: String, maxConcurrent: Int = 2, lease: Duration = .seconds(30), quietPoll: Duration = .seconds(15)
        ) async throws -> Node {
            let fleet = try await harness.openFleet(node: name, leaseTerms: LeaseTerms(duration: lease), quietPollInterval: quietPoll)
            fleet.startListening()
            var configuration = SessionConfiguration()
            configuration.home = HaulHome(path: harness.root + "/home-" + name)
            configuration.maxConcurrentDownloads = maxConcurrent
            configuration.defaultDirectory = folder
            configuration.retry = RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(100))
            let session = try await LocalSession(
                identifier: harness.session, configuration: configuration, journaling: true, store: fleet.store(session: harness.session))
            let node = Node(fleet: fleet, session: session)
            nodes.append(node)
            return node
        }

        func close() async {
            for node in nodes { await node.session.close() }
            nodes = []
            try? await server.shutdown()
        }

        /// A writer of the store that is no node's session (a client's addition through any daemon).
        func store() async throws -> PostgresSessionStore {
            try await harness.openFleet(node: "writer").store(session: harness.session)
        }
    }

    static func with(_ body: (Fleet) async throws -> Void) async throws {
        try await StoreHarness.with(.postgres) { harness in
            let fleet = try Fleet(harness: harness, server: try await TestServer.start())
            do {
                try await body(fleet)
                await fleet.close()
            } catch {
                await fleet.close()
                throw error
            }
        }
    }

    /// Waits (bounded: 120 s) until `condition` holds for the session's tasks as stored.
    static func waitForTasks(
        _ store: any SessionStore, _ what: String, _ condition: ([StoredTask]) -> Bool
    ) async throws -> [StoredTask] {
        for _ in 0..<1_200 {
            let tasks = try await store.tasks()
            if condition(tasks) { return tasks }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ChildProcessError("timed out waiting for \(what)")
    }

    @Test func twoNodesShareOneQueueEachTaskRunsOnceAndEachNodeHearsTheOthersEnds() async throws {
        try await Self.with { fleet in
            var bodies: [String: [UInt8]] = [:]
            for n in 0..<16 {
                var resource = Resource(body: TestData.bytes(40_000 + n * 1_000, seed: UInt64(n)), etag: "\"e\(n)\"")
                resource.faults.throttleBytesPerSecond = 200_000
                fleet.server.serve("/f\(n).bin", resource)
                bodies["f\(n).bin"] = resource.body
            }
            let a = try await fleet.start("node-a")
            let b = try await fleet.start("node-b")
            let heard = EventBox()
            let events = await b.session.journaledEvents()
            let listener = Task { for await (event, _, _) in events { heard.append(event) } }
            defer { listener.cancel() }
            let requests = try (0..<16).map { DownloadRequest(url: try UserInput.url(fleet.server.url("/f\($0).bin"))) }
            let added = try await a.session.add(requests)
            #expect(added.count == 16)
            let done = try await Self.waitForTasks(a.session.store, "every task finished") { tasks in
                tasks.count == 16 && tasks.allSatisfy { $0.state == .finished }
            }
            for (name, body) in bodies {
                #expect(FileManager.default.contents(atPath: fleet.folder + "/" + name).map(Array.init) == body, "\(name) exact")
                #expect(fleet.server.requests("/" + name).count == 1, "\(name) fetched once")
            }
            let byNode = Dictionary(grouping: done, by: { $0.node ?? "-" }).mapValues(\.count)
            #expect(Set(byNode.keys) == ["node-a", "node-b"], "both nodes ran tasks: \(byNode)")
            // Node b's clients are told of every end, its own and node a's, once each.
            for _ in 0..<600 where heard.finished.count < 16 { try await Task.sleep(for: .milliseconds(100)) }
            #expect(heard.finished.sorted() == added.map(\.id).sorted())
            #expect(heard.added.count == 16, "b's clients heard of the tasks a added")
            let snapshots = try await b.session.tasks()
            #expect(snapshots.allSatisfy { $0.node == "node-a" || $0.node == "node-b" }, "every task shows the node that ran it")
        }
    }

    /// The doorbell alone wakes an idle node: its safety poll is set to an hour, so only the notification can.
    @Test func anIdleNodeStartsANewTaskWhenTheDoorbellRings() async throws {
        try await Self.with { fleet in
            fleet.server.serve("/one.bin", Resource(body: TestData.bytes(10_000, seed: 5), etag: "\"o\""))
            let b = try await fleet.start("node-b", quietPoll: .seconds(3_600))
            for _ in 0..<400 where !b.fleet.isListening { try await Task.sleep(for: .milliseconds(100)) }
            let writer = try await fleet.store()
            let added = try await writer.add([DownloadRequest(
                url: try UserInput.url(fleet.server.url("/one.bin")), destination: .file(fleet.folder + "/one.bin"))])
            let id = try #require(added.first?.task.id)
            let done = try await Self.waitForTasks(writer, "the task finished") { $0.first { $0.id == id }?.state == .finished }
            #expect(done.first?.node == "node-b")
        }
    }

    /// Another node takes the task (its epoch raised, as a claim after expiry does): the node that ran it stops
    /// writing the file at once and writes nothing more about it.
    @Test func aNodeThatLosesItsLeaseStopsWritingAtOnce() async throws {
        try await Self.with { fleet in
            var slow = Resource(body: TestData.bytes(4_000_000, seed: 9), etag: "\"s\"")
            slow.faults.throttleBytesPerSecond = 100_000
            fleet.server.serve("/slow.bin", slow)
            let a = try await fleet.start("node-a")
            let path = fleet.folder + "/slow.bin"
            let id = try #require(try await a.session.add([DownloadRequest(url: try UserInput.url(fleet.server.url("/slow.bin")), destination: .file(path))]).first?.id)
            let partial = path + ".haul-part"
            _ = try await Self.waitForTasks(a.session.store, "bytes saved") { ($0.first?.bytes ?? 0) > 100_000 }
            // As a claim by another node after the lease expired would: a new epoch, another node.
            let database = String(try StoreHarness.database.get().split(separator: "/").last ?? "")
            try PostgresServer.shared().psql("""
                UPDATE haul.task SET node = 'node-z', epoch = epoch + 1, change_xid = pg_current_xact_id()::text::bigint, writer = 'node-z'
                WHERE session = '\(fleet.harness.session)' AND id = '\(id)'
                """, database: database)
            for _ in 0..<300 where await a.session.isRunning(id) { try await Task.sleep(for: .milliseconds(100)) }
            #expect(await !a.session.isRunning(id), "the download stopped")
            let size = Self.size(partial)
            let stored = try await a.session.store.task(id: id)
            try await Task.sleep(for: .seconds(2))
            #expect(Self.size(partial) == size, "not one byte more was written")
            #expect(try await a.session.store.task(id: id) == stored, "nothing more was stored about it")
            #expect(stored?.state == .running && stored?.node == "node-z")
        }
    }

    @Test func aPauseAskedOnOneNodeIsCarriedOutByTheNodeRunningTheTask() async throws {
        try await Self.with { fleet in
            var slow = Resource(body: TestData.bytes(2_000_000, seed: 3), etag: "\"p\"")
            slow.faults.throttleBytesPerSecond = 100_000
            fleet.server.serve("/p.bin", slow)
            let a = try await fleet.start("node-a")
            let b = try await fleet.start("node-b", maxConcurrent: 0)
            let heard = EventBox()
            let events = await b.session.journaledEvents()
            let listener = Task { for await (event, _, _) in events { heard.append(event) } }
            defer { listener.cancel() }
            let id = try #require(try await a.session.add([DownloadRequest(url: try UserInput.url(fleet.server.url("/p.bin")))]).first?.id)
            _ = try await Self.waitForTasks(a.session.store, "bytes saved") { ($0.first?.bytes ?? 0) > 50_000 }
            try await b.session.apply(.pause, to: [id])
            let paused = try await Self.waitForTasks(b.session.store, "paused") { $0.first?.state == .paused }
            #expect(paused.first?.requested == nil && (paused.first?.bytes ?? 0) > 0)
            #expect(await !a.session.isRunning(id))
            for _ in 0..<100 where !heard.states.contains(where: { $0.to == .paused }) { try await Task.sleep(for: .milliseconds(100)) }
            #expect(heard.states.contains { $0.id == id && $0.from == .running && $0.to == .paused }, "b's clients saw it")
            // Resumed through b, which has no slot: a runs it again, from the bytes held.
            try await b.session.apply(.resume, to: [id])
            _ = try await Self.waitForTasks(a.session.store, "finished") { $0.first?.state == .finished }
            #expect(FileManager.default.contents(atPath: fleet.folder + "/p.bin").map(Array.init) == slow.body)
            #expect(fleet.server.requests("/p.bin").last?.header("Range") != nil, "resumed, not fetched again whole")
        }
    }

    /// A removal asked on one node is carried out by the node running the task; both announce it to their clients,
    /// and so does a third node, which neither asked nor ran it: each once.
    @Test func aRemovalAskedOnOneNodeIsAnnouncedByItAndByTheNodeRunningTheTask() async throws {
        try await Self.with { fleet in
            var slow = Resource(body: TestData.bytes(4_000_000, seed: 4), etag: "\"r\"")
            slow.faults.throttleBytesPerSecond = 100_000
            fleet.server.serve("/r.bin", slow)
            let a = try await fleet.start("node-a")
            let b = try await fleet.start("node-b", maxConcurrent: 0)
            let c = try await fleet.start("node-c", maxConcurrent: 0)
            let heardOnA = EventBox(), heardOnB = EventBox(), heardOnC = EventBox()
            let eventsOnA = await a.session.journaledEvents(), eventsOnB = await b.session.journaledEvents()
            let eventsOnC = await c.session.journaledEvents()
            let listeners = [
                Task { for await (event, _, _) in eventsOnA { heardOnA.append(event) } },
                Task { for await (event, _, _) in eventsOnB { heardOnB.append(event) } },
                Task { for await (event, _, _) in eventsOnC { heardOnC.append(event) } },
            ]
            defer { for listener in listeners { listener.cancel() } }
            let id = try #require(try await a.session.add([DownloadRequest(url: try UserInput.url(fleet.server.url("/r.bin")))]).first?.id)
            _ = try await Self.waitForTasks(a.session.store, "bytes saved") { ($0.first?.bytes ?? 0) > 50_000 }
            try await b.session.remove([id], deleteFile: false)
            _ = try await Self.waitForTasks(b.session.store, "the task gone") { $0.isEmpty }
            #expect(await !a.session.isRunning(id))
            for _ in 0..<100 where !([heardOnA, heardOnB, heardOnC].allSatisfy { $0.removed.contains(id) }) {
                try await Task.sleep(for: .milliseconds(100))
            }
            // Later rings (the running node's removal journaled, read by the asker) announce nothing more.
            try await Task.sleep(for: .milliseconds(500))
            #expect(heardOnB.removed == [id], "the node asked announced it once")
            #expect(heardOnA.removed == [id], "the node that ran it announced it once")
            #expect(heardOnC.removed == [id], "a third node announced it once")
        }
    }

    /// A waiting task removed through one node is announced by every other node too (its clients may wait for it).
    @Test func aWaitingTaskRemovedOnOneNodeIsAnnouncedByEveryNode() async throws {
        try await Self.with { fleet in
            let a = try await fleet.start("node-a", maxConcurrent: 0)
            let b = try await fleet.start("node-b", maxConcurrent: 0)
            let heardOnA = EventBox(), heardOnB = EventBox()
            let eventsOnA = await a.session.journaledEvents(), eventsOnB = await b.session.journaledEvents()
            let listeners = [
                Task { for await (event, _, _) in eventsOnA { heardOnA.append(event) } },
                Task { for await (event, _, _) in eventsOnB { heardOnB.append(event) } },
            ]
            defer { for listener in listeners { listener.cancel() } }
            let added = try await b.session.add((0..<3).map { DownloadRequest(url: URL(string: "http://127.0.0.1:1/w\($0)")!, destination: .directory(fleet.folder)) })
            let ids = added.map(\.id)
            for _ in 0..<100 where Set(heardOnA.added) != Set(ids) { try await Task.sleep(for: .milliseconds(100)) }
            try await b.session.remove([ids[0], ids[2]], deleteFile: false)
            for _ in 0..<100 where heardOnA.removed.count < 2 { try await Task.sleep(for: .milliseconds(100)) }
            #expect(Set(heardOnA.removed) == [ids[0], ids[2]] && heardOnA.removed.count == 2, "\(heardOnA.removed)")
            #expect(Set(heardOnB.removed) == [ids[0], ids[2]] && heardOnB.removed.count == 2, "\(heardOnB.removed)")
            #expect(try await a.session.store.tasks().map(\.id) == [ids[1]])
        }
    }

    /// A task whose nodes died twice in a row while running it is failed, not run a third time (the rule a
    /// single daemon applies to its own crashes).
    @Test func aTaskThatTwoNodesDiedRunningIsNotRunAThirdTime() async throws {
        try await Self.with { fleet in
            let writer = try await fleet.store()
            _ = try await writer.add([DownloadRequest(url: URL(string: "http://127.0.0.1:1/never")!, destination: .file(fleet.folder + "/x"))])
            // Two nodes claim it in turn and die (their leases expire, by the database's clock).
            for name in ["gone-1", "gone-2"] {
                let store = try await fleet.harness.openFleet(node: name, leaseTerms: LeaseTerms(duration: .seconds(3))).store(session: fleet.harness.session)
                var claimed: [ClaimedTask] = []
                for _ in 0..<200 where claimed.isEmpty {
                    claimed = try await store.claim(.init(slots: 1))
                    if claimed.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(claimed.count == 1)
            }
            try await Task.sleep(for: .seconds(4))
            let c = try await fleet.start("node-c")
            let failed = try await Self.waitForTasks(c.session.store, "failed") { $0.first?.state == .failed }
            #expect(failed.first?.error?.message.contains("stopped twice") == true)
            #expect(try await c.session.store.journal().map(\.kind) == ["failed"])
        }
    }

    static func size(_ path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? -1
    }
}

/// Events a session reported, collected from its stream.
final class EventBox: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [SessionEvent] = []

    func append(_ event: SessionEvent) { lock.withLock { events.append(event) } }

    var finished: [String] {
        lock.withLock { events.compactMap { if case .finished(let task) = $0 { return task.id } else { return nil } } }
    }

    var added: [String] {
        lock.withLock { events.compactMap { if case .added(let task) = $0 { return task.id } else { return nil } } }
    }

    var removed: [String] {
        lock.withLock { events.compactMap { if case .removed(let id) = $0 { return id } else { return nil } } }
    }

    var states: [(id: String, from: TaskState, to: TaskState)] {
        lock.withLock { events.compactMap { if case .stateChanged(let id, let from, let to) = $0 { return (id, from, to) } else { return nil } } }
    }
}
