import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulFleet
@testable import HaulKit

/// Claims, leases, fencing, requests and the change feed of a fleet's store, with several nodes on one database.
@Suite(.enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing)"), .timeLimit(.minutes(5)))
struct FleetStoreTests {
    /// `count` nodes on one session of the tests' database.
    func nodes(_ harness: StoreHarness, _ count: Int, lease: Duration = .seconds(30)) async throws -> [PostgresSessionStore] {
        var stores: [PostgresSessionStore] = []
        for n in 0..<count {
            let fleet = try await harness.openFleet(node: "node-\(n)", leaseTerms: LeaseTerms(duration: lease))
            stores.append(fleet.store(session: harness.session))
        }
        return stores
    }

    @Test func nodesClaimByPriorityThenAgeAndNeverTheSameTask() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let (a, b) = try await { let n = try await nodes(harness, 2); return (n[0], n[1]) }()
            _ = try await a.add((1...6).map { harness.newTask($0, id: "t\($0)", priority: $0 == 5 ? 9 : 0) })
            let first = try await a.claim(.init(slots: 3))
            #expect(first.map(\.task.id) == ["t5", "t1", "t2"])
            #expect(first.allSatisfy { $0.task.state == .running && $0.task.node == "node-0" && $0.lease.node == "node-0" && !$0.takenOver })
            #expect(first.allSatisfy { $0.unendedStarts == 0 && $0.lease.epoch == $0.task.epoch && $0.task.epoch == 1 })
            let second = try await b.claim(.init(slots: 10))
            #expect(second.map(\.task.id) == ["t3", "t4", "t6"])
            #expect(try await b.claim(.init(slots: 10)).isEmpty)
            #expect(try await a.unendedStarts(ids: ["t1", "t3"]) == ["t1": 1, "t3": 1])
            #expect(try await a.task(id: "t3")?.node == "node-1")
        }
    }

    /// Many nodes claiming at once, each as fast as it can: every task is claimed exactly once (SKIP LOCKED never
    /// hands a row to two transactions), and none waits for another's lock.
    @Test func concurrentClaimsTakeEachTaskOnce() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let stores = try await nodes(harness, 4)
            _ = try await stores[0].add((0..<300).map { harness.newTask($0, id: "t\($0)") })
            let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
                for store in stores {
                    group.addTask {
                        var mine: [String] = []
                        // Bounded: 300 tasks, at least one per turn until none is left.
                        for _ in 0..<400 {
                            let batch = try await store.claim(.init(slots: 7))
                            if batch.isEmpty { break }
                            mine += batch.map(\.task.id)
                        }
                        return mine
                    }
                }
                var all: [[String]] = []
                for try await mine in group { all.append(mine) }
                return all
            }
            let flat = claimed.flatMap { $0 }
            #expect(flat.count == 300 && Set(flat).count == 300)
            #expect(claimed.filter { !$0.isEmpty }.count >= 2, "the claims were spread over the nodes")
        }
    }

    /// A download stopped by a pause or Ctrl-C writes how it ended from its own task, which is cancelled by then:
    /// every write still reaches the store (a prepared statement's rows used to be cut off with a
    /// `CancellationError`, and the end of a paused task was never written).
    @Test func writesFromACancelledTaskAreMade() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let a = try await nodes(harness, 1)[0]
            _ = try await a.add([harness.newTask(1, id: "t1"), harness.newTask(2, id: "t2")])
            let claims = try await a.claim(.init(slots: 2))
            #expect(claims.count == 2)
            let ended = Task { () async throws -> [TaskState?] in
                // Bounded: the task is cancelled right after it is made.
                for _ in 0..<100_000 where !Task.isCancelled { await Task.yield() }
                var states: [TaskState?] = []
                for claim in claims {
                    let saved = try await a.update(id: claim.task.id, lease: claim.lease) { $0.bytes = 7 }
                    let done = try await a.conclude(
                        id: claim.task.id, lease: claim.lease, journaling: "failed", payload: { _ in "{}" }, finalRecord: nil) { $0.state = .paused }
                    states += [saved?.state, done?.task.state]
                }
                return states
            }
            ended.cancel()
            #expect(try await ended.value == [.running, .paused, .running, .paused])
            #expect(try await a.task(id: "t2")?.state == .paused)
        }
    }

    /// Two tasks with different URLs and one destination file are never written at once, whichever nodes claim
    /// them: each node locks files in its own `HAUL_HOME`, so the store keeps them apart. Four nodes claim and end
    /// tasks as fast as they can; a file held by two downloads at once would be seen by the shared ledger.
    @Test func aDestinationFileIsWrittenByOneNodeAtATime() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let stores = try await nodes(harness, 4)
            func task(_ n: Int, file: String) -> DownloadRequest {
                DownloadRequest(DownloadSpec(url: URL(string: "https://example.com/\(n).bin")!, destination: .file(harness.root + "/" + file)), id: "t\(n)")
            }
            // 3 files, 8 tasks each, one after the other in the queue.
            _ = try await stores[0].add((0..<24).map { task($0, file: "f\($0 % 3)") })
            let ledger = FileLedger()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for store in stores {
                    group.addTask {
                        // Bounded: 24 tasks, and a claim that finds none for 200 turns gives up.
                        var idle = 0
                        while idle < 200 {
                            let claims = try await store.claim(.init(slots: 2))
                            if claims.isEmpty { idle += 1; try await Task.sleep(for: .milliseconds(5)); continue }
                            idle = 0
                            for claim in claims {
                                guard case .file(let path)? = claim.task.spec.destination else { continue }
                                await ledger.take(path, claim.task.id)
                                await Task.yield()
                                // Let go in the ledger before the end is committed: the next claim of the file comes after.
                                await ledger.release(path)
                                _ = try await store.conclude(
                                    id: claim.task.id, lease: claim.lease, journaling: nil, payload: { _ in "" }, finalRecord: nil) { $0.state = .finished }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let overlaps = await ledger.overlaps
            #expect(overlaps.isEmpty, "files written by two downloads at once: \(overlaps)")
            #expect(await ledger.taken == 24)
            let running = try await stores[0].claim(.init(slots: 10))
            #expect(running.isEmpty, "every task ran once")
        }
    }

    /// Which download holds each destination file, as the test's nodes claim and end them.
    actor FileLedger {
        private var holders: [String: String] = [:]
        private(set) var overlaps: [String] = []
        private(set) var taken = 0

        func take(_ path: String, _ id: String) {
            if let other = holders[path] { overlaps.append("\(path): \(other) and \(id)") }
            holders[path] = id
            taken += 1
        }

        func release(_ path: String) { holders[path] = nil }
    }

    @Test func aWriteUnderALeaseNoLongerHeldIsRefused() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let (a, b) = try await { let n = try await nodes(harness, 2, lease: .seconds(3)); return (n[0], n[1]) }()
            _ = try await a.add([harness.newTask(1, id: "t")])
            let claim = try #require(try await a.claim(.init(slots: 1)).first)
            // Under its lease: progress, a record, the conclusion's checks all pass.
            #expect(try await a.update(id: "t", lease: claim.lease) { $0.bytes = 10 }?.bytes == 10)
            try a.save(StoredRecord(key: "k", value: "{\"at\":10}"), choice: nil, fence: RecordFence(taskID: "t", lease: claim.lease))
            // Another node cannot take it while the lease lives; it can once it has expired, by the database's clock.
            #expect(try await b.claim(.init(slots: 1)).isEmpty)
            let taken = try await waitForClaim(b)
            #expect(taken.takenOver && taken.task.node == "node-1" && taken.lease.epoch == claim.lease.epoch + 1)
            #expect(taken.unendedStarts == 1, "the first node's start never ended")
            // The first node is fenced off from every write: the task, the record, the conclusion.
            await #expect(throws: SessionStoreError.leaseLost(taskID: "t")) { try await a.update(id: "t", lease: claim.lease) { $0.bytes = 99 } }
            #expect(throws: SessionStoreError.leaseLost(taskID: "t")) {
                try a.save(StoredRecord(key: "k", value: "{\"at\":99}"), choice: StoredRecord(key: "c", value: "/x"), fence: RecordFence(taskID: "t", lease: claim.lease))
            }
            await #expect(throws: SessionStoreError.leaseLost(taskID: "t")) {
                try await a.conclude(id: "t", lease: claim.lease, journaling: "finished", payload: { _ in "{}" }, finalRecord: nil) { $0.state = .finished }
            }
            #expect(try a.record(key: "k") == "{\"at\":10}" && a.choice(key: "c") == nil, "nothing the fenced node wrote is kept")
            #expect(try await a.renew(["t": claim.lease]).isEmpty, "its renewal finds the lease gone")
            #expect(try await b.renew(["t": taken.lease]) == ["t"])
            #expect(try await b.task(id: "t")?.bytes == 10)
            let done = try await b.conclude(id: "t", lease: taken.lease, journaling: "finished", payload: { _ in "{}" }, finalRecord: nil) {
                $0.state = .finished
            }
            #expect(done?.task.state == .finished && done?.task.node == "node-1")
            #expect(try await b.unendedStarts(ids: ["t"]).isEmpty)
        }
    }

    /// Every change since `cursor`, reading again while some are still being committed (other tests share the
    /// database: their transactions hold the horizon back for a moment); bounded.
    func read(_ store: PostgresSessionStore, since cursor: inout Int64) async throws -> FleetChanges {
        var all = FleetChanges(tasks: [], journal: [], cursor: cursor)
        for _ in 0..<200 {
            let changes = try await store.changes(since: cursor)
            cursor = changes.cursor
            all.tasks += changes.tasks
            all.journal += changes.journal
            all.cursor = cursor
            if !changes.pending { return all }
            try await Task.sleep(for: .milliseconds(50))
        }
        return all
    }

    /// Claims until one returns a task (the lease of the one sought expires by the database's clock); bounded.
    func waitForClaim(_ store: PostgresSessionStore) async throws -> ClaimedTask {
        for _ in 0..<200 {
            if let claim = try await store.claim(.init(slots: 1)).first { return claim }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ChildProcessError("no task could be claimed in 20 s")
    }

    @Test func aFleetWideLimitHoldsHowEverManyNodesClaimAtOnce() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let stores = try await nodes(harness, 5)
            _ = try await stores[0].add((0..<40).map { harness.newTask($0, id: "t\($0)") })
            var other = harness.newTask(100, id: "other")
            other.url = URL(string: "https://other.example/f")!
            _ = try await stores[0].add([other])
            let claimed = try await withThrowingTaskGroup(of: [ClaimedTask].self) { group in
                for store in stores {
                    group.addTask { try await store.claim(.init(slots: 5, fleetMaxPerHost: 3)) }
                }
                var all: [ClaimedTask] = []
                for try await batch in group { all += batch }
                return all
            }
            let perHost = Dictionary(grouping: claimed, by: { $0.task.spec.url.host ?? "" }).mapValues(\.count)
            #expect(perHost["example.com"] == 3, "\(perHost)")
            #expect(perHost["other.example"] == 1, "a full host holds back no other")
            // One finishes: its connection goes to the next claim.
            let done = try #require(claimed.first { $0.task.spec.url.host == "example.com" })
            _ = try await stores[0].conclude(id: done.task.id, lease: nil, journaling: nil, payload: { _ in "" }, finalRecord: nil) { $0.state = .finished }
            #expect(try await stores[1].claim(.init(slots: 5, fleetMaxPerHost: 3)).count == 1)
            #expect(try await stores[2].claim(.init(slots: 5, fleetMaxPerHost: 3)).isEmpty)
        }
    }

    @Test func aRequestGoesToTheNodeRunningTheTaskOrIsCarriedOutWhenNoneHoldsIt() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let (a, b) = try await { let n = try await nodes(harness, 2, lease: .seconds(3)); return (n[0], n[1]) }()
            _ = try await a.add([harness.newTask(1, id: "run"), harness.newTask(2, id: "wait"), harness.newTask(3, id: "gone")])
            let claims = try await a.claim(.init(slots: 1))
            #expect(claims.map(\.task.id) == ["run"])
            #expect(try await b.request(.pause, id: "run") == .asked)
            #expect(try await a.task(id: "run")?.requested == .pause)
            #expect(try await b.request(.pause, id: "nope") == .missing)
            guard case .notRunning(let waiting) = try await b.request(.cancel, id: "wait") else {
                Issue.record("a waiting task is the caller's to cancel")
                return
            }
            #expect(waiting.state == .waiting)
            // A running task whose node is gone: carried out at once, its epoch raised.
            let gone = try #require(try await a.claim(.init(slots: 5)).first { $0.task.id == "gone" })
            try await Task.sleep(for: .seconds(4))
            guard case .applied(let old, let now) = try await b.request(.cancel, id: "gone") else {
                Issue.record("an expired lease's task is cancelled at once")
                return
            }
            #expect(old == .running && now?.state == .cancelled && now?.node == nil && (now?.epoch ?? 0) > gone.lease.epoch)
            #expect(try await b.unendedStarts(ids: ["gone"]).isEmpty)
            await #expect(throws: SessionStoreError.leaseLost(taskID: "gone")) {
                try await a.update(id: "gone", lease: gone.lease) { $0.bytes = 1 }
            }
            #expect(try await b.request(.remove, id: "gone") == .notRunning(try #require(try await b.task(id: "gone"))))
        }
    }

    @Test func eachNodeReadsWhatTheOthersChangedAndTheirJournalEntries() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let (a, b) = try await { let n = try await nodes(harness, 2); return (n[0], n[1]) }()
            var cursor = try await b.changes(since: nil).cursor
            _ = try await a.add([harness.newTask(1, id: "t1"), harness.newTask(2, id: "t2")])
            var seen = try await read(b, since: &cursor)
            #expect(seen.tasks.map(\.task.id) == ["t1", "t2"] && seen.tasks.allSatisfy { $0.writer == "node-0" })
            let before = cursor
            let claim = try #require(try await a.claim(.init(slots: 1)).first)
            _ = try await a.conclude(id: "t1", lease: claim.lease, journaling: "finished", payload: { _ in "{\"id\":\"t1\"}" }, finalRecord: nil) {
                $0.state = .finished
            }
            seen = try await read(b, since: &cursor)
            #expect(seen.tasks.map(\.task.id) == ["t1"] && seen.tasks.first?.task.state == .finished)
            #expect(seen.journal.map(\.taskID) == ["t1"], "another node's journal entry")
            var mine = before
            #expect(try await read(a, since: &mine).journal.isEmpty, "not one's own")
            #expect(try await read(b, since: &cursor).tasks.isEmpty, "read once")
        }
    }

    @Test func theDoorbellRingsTheOtherNodesAndAgainAfterABreak() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let a = try await harness.openFleet(node: "node-0")
            let b = try await harness.openFleet(node: "node-1")
            b.startListening()
            let bell = b.store(session: harness.session).doorbell()
            var rings = bell.makeAsyncIterator()
            // Bounded: the listener is heard within 40 s on a busy machine, else the test fails.
            for _ in 0..<400 where !b.isListening { try await Task.sleep(for: .milliseconds(100)) }
            #expect(b.isListening)
            _ = await rings.next()  // the ring of the listener being heard
            _ = try await a.store(session: harness.session).add([harness.newTask(1)])
            let rang: Void? = await rings.next()
            #expect(rang != nil)
            await b.close()
            #expect(await rings.next() == nil, "the doorbell ends with the store")
        }
    }
}
