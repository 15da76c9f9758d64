import Foundation
import HaulTestSupport
import Logging
import Testing
@testable import HaulCore
@testable import HaulFleet
@testable import HaulKit

/// A node of a fleet whose store goes out of reach while it downloads: how each download ended reaches the store once
/// it is back, whatever the outage's length, and the node never leaves a task it no longer runs `running`.
@Suite(.enabled(if: PostgresServer.testsEnabled, "\(PostgresServer.missing)"), .timeLimit(.minutes(5)))
struct FleetOutageTests {
    /// The downloads end while the store is away for longer than the lease lets a node write (its renewals failing
    /// too): each end is written once the store is back, under the claim it ran under (no other claim, one journal
    /// entry each), and nothing keeps the tasks `running`. No claim can take them over meanwhile (claims blocked), so
    /// only this node's own write can end them. (It used to give up once the lease's deadline passed, leaving the
    /// tasks `running` until another claim took them over and ran them again.)
    @Test func downloadsThatEndWhileTheStoreIsAwayAreRecordedOnceItIsBack() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let server = try await TestServer.start()
            defer { Task { try? await server.shutdown() } }
            let folder = harness.root + "/downloads"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            var bodies: [String: [UInt8]] = [:]
            for n in 0..<3 {
                var resource = Resource(body: TestData.bytes(200_000 + n * 1_000, seed: UInt64(40 + n)), etag: "\"o\(n)\"")
                resource.faults.throttleBytesPerSecond = 100_000
                server.serve("/o\(n).bin", resource)
                bodies["o\(n).bin"] = resource.body
            }
            // Leases of 12 s: renewed every 2 s, written under until 10 s after the last renewal sent.
            let fleet = try await harness.openFleet(node: "node-a", leaseTerms: LeaseTerms(duration: .seconds(12)))
            fleet.startListening()
            let store = OutageStore(fleet.store(session: harness.session))
            var configuration = SessionConfiguration()
            configuration.home = HaulHome(path: harness.root + "/home-a")
            configuration.maxConcurrentDownloads = 3
            configuration.defaultDirectory = folder
            configuration.retry = RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(100))
            let session = try await LocalSession(identifier: harness.session, configuration: configuration, journaling: true, store: store)
            // One connection each, so that each is one request.
            let requests = try (0..<3).map { n in
                var spec = DownloadSpec(url: try UserInput.url(server.url("/o\(n).bin")), destination: .file(folder + "/o\(n).bin"))
                spec.segments = 1
                return DownloadRequest(spec)
            }
            let ids = try await session.add(requests).map(\.id)
            // Each download under way: its request answered (its resume record read before it was sent).
            var running = false
            for _ in 0..<600 where !running {
                let tasks = try await store.inner.tasks()
                running = tasks.count == 3 && tasks.allSatisfy { $0.state == .running }
                    && bodies.keys.allSatisfy { server.requests("/" + $0).contains { $0.bytesSent > 0 } }
                if !running { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(running, "all three download")
            store.claimsBlocked = true
            store.down = true
            // The downloads end (about two seconds each) while the store is away.
            var stillRunning = ids
            for _ in 0..<600 where !stillRunning.isEmpty {
                var left: [String] = []
                for id in stillRunning where await session.isRunning(id) { left.append(id) }
                stillRunning = left
                if !left.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(stillRunning.isEmpty, "the downloads ended while the store was away")
            for (name, body) in bodies {
                let exact = FileManager.default.contents(atPath: folder + "/" + name).map(Array.init) == body
                #expect(exact, "\(name) is in place, exact")
            }
            // Away for longer than the node may write under its last renewal (10 s).
            try await Task.sleep(for: .seconds(11))
            #expect(try await store.inner.tasks().allSatisfy { $0.state == .running }, "nothing was written while the store was away")
            store.down = false
            var tasks: [StoredTask] = []
            for _ in 0..<600 {
                tasks = try await store.inner.tasks()
                if tasks.count == 3, tasks.allSatisfy({ $0.state == .finished }) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(tasks.map(\.state) == [.finished, .finished, .finished], "each end was written once the store was back")
            #expect(tasks.allSatisfy { $0.epoch == 1 && $0.node == "node-a" }, "under the claim it ran under: \(tasks.map(\.epoch))")
            let journal = try await store.inner.journal()
            #expect(journal.map(\.kind) == ["finished", "finished", "finished"] && Set(journal.map(\.taskID)) == Set(ids))
            for name in bodies.keys { #expect(server.requests("/" + name).count == 1, "\(name) fetched once") }
            #expect(await session.isIdle(), "nothing is left to write")
            await session.close()
        }
    }

    /// A download ends while its last progress write is never answered (as a statement sent on a connection that
    /// had just closed was not), so its end cannot be written yet. The node renews the ended download's lease only a
    /// bounded number of times (it used to renew it for ever, as a running download's: the task stayed `running` on
    /// it and no node took it over); then the lease expires and another node's claim takes the task over. When the
    /// write is answered at last, the first node writes nothing more about a task that is no longer its own.
    @Test func aDownloadWhoseEndIsHeldUpHoldsItsLeaseOnlyForBoundedRenewals() async throws {
        try await StoreHarness.with(.postgres) { harness in
            let server = try await TestServer.start()
            defer { Task { try? await server.shutdown() } }
            let folder = harness.root + "/downloads"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            var resource = Resource(body: TestData.bytes(300_000, seed: 77), etag: "\"h\"")
            resource.faults.throttleBytesPerSecond = 100_000
            server.serve("/h.bin", resource)
            // Leases of 3 s: renewed every half second.
            let terms = LeaseTerms(duration: .seconds(3))
            let fleet = try await harness.openFleet(node: "node-a", leaseTerms: terms)
            let store = OutageStore(fleet.store(session: harness.session))
            store.claimsBlocked = true
            var configuration = SessionConfiguration()
            configuration.home = HaulHome(path: harness.root + "/home-a")
            configuration.defaultDirectory = folder
            let session = try await LocalSession(identifier: harness.session, configuration: configuration, journaling: true, store: store)
            var spec = DownloadSpec(url: try UserInput.url(server.url("/h.bin")), destination: .file(folder + "/h.bin"))
            spec.segments = 1
            store.claimsBlocked = false
            let id = try await session.add([DownloadRequest(spec)]).map(\.id)[0]
            var running = false
            for _ in 0..<600 where !running {
                running = try await store.inner.task(id: id)?.state == .running && server.requests("/h.bin").contains { $0.bytesSent > 0 }
                if !running { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(running, "the download runs")
            // Node a claims nothing more: the task is only ever taken over by node b below (whose lease nobody renews).
            store.claimsBlocked = true
            // Its next progress write is never answered, so its end waits behind it.
            store.holdUpdates()
            var ended = false
            for _ in 0..<600 where !ended {
                ended = FileManager.default.contents(atPath: folder + "/h.bin").map(Array.init) == resource.body && store.heldUpdates > 0
                if !ended { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(ended, "the download ended, its file in place, a progress write held")
            let renewalsAtEnd = store.renewals.filter { $0.contains(id) }.count
            // Another node claims the task once its lease has expired (bounded: 60 s, far beyond the few renewals
            // and the lease's 3 s).
            let other = try await harness.openFleet(node: "node-b", leaseTerms: terms).store(session: harness.session)
            var claimed: [ClaimedTask] = []
            for _ in 0..<240 where claimed.isEmpty {
                claimed = try await other.claim(.init(slots: 1))
                if claimed.isEmpty { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(claimed.map(\.task.id) == [id] && claimed.first?.takenOver == true, "another node took the task over")
            let renewalsAfterEnd = store.renewals.filter { $0.contains(id) }.count - renewalsAtEnd
            #expect(renewalsAfterEnd <= LocalSession.endingRenewals + 1, "the ended download's lease was renewed \(renewalsAfterEnd) times")
            // The held write is answered: node a writes nothing about the task, now node b's.
            store.releaseUpdates()
            var done = false
            for _ in 0..<600 where !done {
                done = await session.holdsNothing(of: id)
                if !done { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(done, "node a has finished with the task: no run, no lease, no end being written")
            let task = try await store.inner.task(id: id)
            #expect(task?.state == .running && task?.node == "node-b" && task?.epoch == 2, "the task is node b's: \(String(describing: task))")
            #expect(try await store.inner.journal().isEmpty, "node a journaled no end for it")
            await session.close()
        }
    }
}

extension LocalSession {
    /// Whether nothing of task `id` is left here: no download, no lease, no end being written.
    func holdsNothing(of id: String) -> Bool {
        !isRunning(id) && endsUnderway == 0 && fleet.leases[id] == nil && fleet.ending[id] == nil
    }
}
