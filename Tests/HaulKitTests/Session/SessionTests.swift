import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// Collects a session's events from its stream.
final class SessionEventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [SessionEvent] = []
    private var reader: Task<Void, Never>?

    init(_ stream: AsyncStream<SessionEvent>) {
        reader = Task { for await event in stream { self.append(event) } }
    }

    private func append(_ event: SessionEvent) {
        lock.lock()
        storage.append(event)
        lock.unlock()
    }

    var events: [SessionEvent] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }

    func count(_ match: (SessionEvent) -> Bool) -> Int { events.filter(match).count }

    /// The largest number of tasks that were running at the same time.
    var peakRunning: Int {
        var running = Set<String>()
        var peak = 0
        for case .stateChanged(let id, _, let to) in events {
            if to == .running { running.insert(id) } else { running.remove(id) }
            peak = max(peak, running.count)
        }
        return peak
    }

    /// Task ids in the order they started running.
    var startOrder: [String] {
        events.compactMap { if case .stateChanged(let id, _, .running) = $0 { return id } else { return nil } }
    }
}

func sessionConfiguration(_ sandbox: Sandbox, concurrent: Int = 3) -> SessionConfiguration {
    var configuration = SessionConfiguration()
    configuration.home = sandbox.home
    configuration.maxConcurrentDownloads = concurrent
    configuration.retry = RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))
    configuration.defaultDirectory = sandbox.files
    configuration.progressInterval = .milliseconds(20)
    return configuration
}

/// Waits (bounded) until `condition` holds. Generous: on a loaded 2-core machine the whole suite runs at once.
func waitFor(_ what: String, timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting for \(what)")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

@Suite struct SessionTests {
    /// An engine nobody shut down (a session a program forgot to close, or a test that failed half-way) releases
    /// its connections when dropped instead of crashing on AsyncHTTPClient's "not shut down" assertion.
    @Test func anEngineDroppedWithoutShutdownReleasesItsConnections() async throws {
        try await withHarness { server, _, sandbox in
            server.serve("/d", Resource(body: TestData.bytes(10_000, seed: 31)))
            var engine: TransferEngine? = TransferEngine(home: sandbox.home)
            weak let dropped = engine
            var options = DownloadOptions(url: try UserInput.url(server.url("/d")), destination: .file(sandbox.path("d")))
            options.segments = 1
            let result = try await engine?.download(options)
            #expect(result?.bytes == 10_000)
            #expect(sandbox.contents("d") == TestData.bytes(10_000, seed: 31))
            engine = nil
            #expect(dropped == nil, "the engine was released (its deinit ran and shut its clients down)")
        }
    }

    @Test func runsEveryTaskWithinTheCapAndReportsEachEndOnce() async throws {
        try await withHarness { server, _, sandbox in
            let bodies = (0..<6).map { TestData.bytes(200_000, seed: UInt64($0 + 1)) }
            for (index, body) in bodies.enumerated() {
                var resource = Resource(body: body, etag: "\"\(index)\"")
                resource.faults.throttleBytesPerSecond = 2_000_000
                server.serve("/f\(index)", resource)
            }
            let session = try await DownloadSession(identifier: "cap", configuration: sessionConfiguration(sandbox, concurrent: 2))
            let log = SessionEventLog(await session.events())
            for index in bodies.indices {
                try await session.add(DownloadRequest(url: try UserInput.url(server.url("/f\(index)"))))
            }
            await session.waitUntilIdle()
            try await waitFor("all-finished") { log.count { $0 == .allFinished } == 1 }
            for (index, body) in bodies.enumerated() { #expect(sandbox.contents("f\(index)") == body) }
            #expect(log.peakRunning == 2)
            let tasks = try await session.tasks()
            #expect(tasks.allSatisfy { $0.state == .finished })
            for task in tasks {
                #expect(log.count { if case .finished(let t) = $0 { return t.id == task.id } else { return false } } == 1)
            }
            #expect(log.count { if case .added = $0 { return true } else { return false } } == 6)
            await session.close()
        }
    }

    @Test func addingTheSameTaskAgainReturnsTheExistingOne() async throws {
        try await withHarness { server, _, sandbox in
            server.serve("/f", Resource(body: [1, 2, 3]))
            var configuration = sessionConfiguration(sandbox)
            configuration.maxConcurrentDownloads = 0
            let session = try await DownloadSession(identifier: "dup", configuration: configuration)
            var request = DownloadRequest(url: try UserInput.url(server.url("/f")), destination: .file(sandbox.path("f")))
            let first = try await session.add(request)
            let again = try await session.add(request)
            request.id = "my-id"
            request.destination = .file(sandbox.path("g"))
            let named = try await session.add(request)
            request.url = try UserInput.url(server.url("/other"))
            let sameID = try await session.add(request)
            #expect(first.id == again.id)
            #expect(named.id == "my-id")
            #expect(sameID.id == "my-id" && sameID.url == server.url("/f"))
            #expect(try await session.tasks().count == 2)
            await session.close()
        }
    }

    @Test func higherPriorityStartsFirst() async throws {
        try await withHarness { server, _, sandbox in
            for name in ["a", "low", "high"] { server.serve("/\(name)", Resource(body: TestData.bytes(50_000), etag: "\"\(name)\"")) }
            var configuration = sessionConfiguration(sandbox, concurrent: 0)
            configuration.maxConcurrentDownloads = 0
            let session = try await DownloadSession(identifier: "prio", configuration: configuration)
            let log = SessionEventLog(await session.events())
            for (name, priority) in [("a", 0), ("low", -1), ("high", 5)] {
                var request = DownloadRequest(url: try UserInput.url(server.url("/\(name)")))
                request.priority = priority
                request.id = name
                try await session.add(request)
            }
            try await session.setMaxConcurrentDownloads(1)
            await session.waitUntilIdle()
            #expect(log.startOrder == ["high", "a", "low"])
            await session.close()
        }
    }

    @Test func pauseKeepsProgressAndResumeFinishesExact() async throws {
        try await withHarness { server, _, sandbox in
            // 20 s at this pace: still running when paused, even when the whole suite starving the process for
            // seconds lets the server's bytes pile up meanwhile.
            let body = TestData.bytes(4_000_000, seed: 9)
            var resource = Resource(body: body, etag: "\"p\"")
            resource.faults.throttleBytesPerSecond = 200_000
            server.serve("/f", resource)
            let session = try await DownloadSession(identifier: "pause", configuration: sessionConfiguration(sandbox))
            let task = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/f")), destination: .file(sandbox.path("f"))))
            try await waitFor("progress") { (try await session.task(task.id)?.bytes ?? 0) > 0 || sandbox.exists("f.haul-part") }
            try await Task.sleep(for: .milliseconds(300))
            try await session.pause([task.id])
            #expect(try await session.task(task.id)?.state == .paused)
            #expect(sandbox.exists("f.haul-part"))
            server.serve("/f", Resource(body: body, etag: "\"p\""))
            try await session.resume([task.id])
            await session.waitUntilIdle()
            #expect(try await session.task(task.id)?.state == .finished)
            #expect(sandbox.contents("f") == body)
            #expect(server.requests("/f").last?.header("Range")?.hasPrefix("bytes=") == true)
            await session.close()
        }
    }

    @Test func cancelDeletesPartialData() async throws {
        try await withHarness { server, _, sandbox in
            var resource = Resource(body: TestData.bytes(1_000_000), etag: "\"c\"")
            resource.faults.throttleBytesPerSecond = 200_000
            server.serve("/f", resource)
            let session = try await DownloadSession(identifier: "cancel", configuration: sessionConfiguration(sandbox))
            let log = SessionEventLog(await session.events())
            let task = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/f")), destination: .file(sandbox.path("f"))))
            try await waitFor("the partial file") { sandbox.exists("f.haul-part") }
            try await session.cancel([task.id])
            #expect(try await session.task(task.id)?.state == .cancelled)
            #expect(!sandbox.exists("f.haul-part"))
            #expect(!sandbox.exists("f"))
            try await waitFor("all-finished") { log.count { $0 == .allFinished } == 1 }
            await session.close()
        }
    }

    @Test func failuresCarryATypedErrorAndRunTheHooks() async throws {
        try await withHarness { server, _, sandbox in
            server.route("/missing") { _ in .text(404, "no") }
            server.serve("/ok", Resource(body: [7, 7, 7]))
            var configuration = sessionConfiguration(sandbox)
            let hookLog = sandbox.root + "/hook.log"
            configuration.completionCommand = "echo \"$HAUL_TASK_ID $HAUL_TASK_STATE $HAUL_TASK_PATH\" >> '\(hookLog)'"
            let callbacks = SessionEventLogBox()
            configuration.onCompletion = { callbacks.add($0) }
            let session = try await DownloadSession(identifier: "fail", configuration: configuration)
            let log = SessionEventLog(await session.events())
            var missing = DownloadRequest(url: try UserInput.url(server.url("/missing")))
            missing.id = "missing"
            var ok = DownloadRequest(url: try UserInput.url(server.url("/ok")))
            ok.id = "ok"
            try await session.add(missing)
            try await session.add(ok)
            await session.waitUntilIdle()
            let failed = try #require(try await session.task("missing"))
            #expect(failed.state == .failed)
            #expect(failed.error?.kind == .httpStatus)
            #expect(log.count { if case .failed(let t) = $0 { return t.id == "missing" && t.error?.kind == .httpStatus } else { return false } } == 1)
            try await waitFor("both hooks") {
                ((try? String(contentsOfFile: hookLog, encoding: .utf8)) ?? "").split(separator: "\n").count == 2
            }
            let lines = try String(contentsOfFile: hookLog, encoding: .utf8)
            #expect(lines.contains("missing failed"))
            #expect(lines.contains("ok finished \(sandbox.path("ok"))"))
            #expect(callbacks.ids.sorted() == ["missing", "ok"])
            // Resumed once the file is there: its old failure is not shown while it runs again, nor after.
            var slow = Resource(body: TestData.bytes(400_000, seed: 12), etag: "\"m\"")
            slow.faults.throttleBytesPerSecond = 200_000
            server.serve("/missing", slow)
            try await session.resume(["missing"])
            let resumed = try #require(try await session.task("missing"))
            #expect(resumed.state != .failed && resumed.error == nil, "\(resumed)")
            await session.waitUntilIdle()
            let finished = try #require(try await session.task("missing"))
            #expect(finished.state == .finished && finished.error == nil, "\(finished)")
            await session.close()
        }
    }

    /// The scheduler reads only the head of a long queue; when hosts at their cap block that head, it must
    /// still find a startable task further back.
    /// A queue many times longer than the window the session holds (pages of 3 here) still starts by priority, then
    /// in the order added, whatever was added, raised or paused while pages were read.
    @Test func aQueueLongerThanItsWindowStartsInOrder() async throws {
        try await withHarness { server, _, sandbox in
            for n in 0..<40 { server.serve("/f\(n)", Resource(body: TestData.bytes(2_000, seed: 3))) }
            var configuration = sessionConfiguration(sandbox, concurrent: 0)
            configuration.waitingPageSize = 3
            let session = try await DownloadSession(identifier: "window", configuration: configuration)
            let log = SessionEventLog(await session.events())
            var expected: [(id: String, priority: Int, order: Int)] = []
            for n in 0..<40 {
                var request = DownloadRequest(url: try UserInput.url(server.url("/f\(n)")))
                request.id = "t\(n)"
                request.priority = [0, 2, -1, 0, 1][n % 5]
                try await session.add(request)
                expected.append((request.id ?? "", request.priority, n))
            }
            // Two raised and one paused while nothing runs: the window learns of them wherever they stand.
            try await session.setPriority(9, for: ["t37"])
            try await session.setPriority(-5, for: ["t1"])
            try await session.pause(["t20"])
            expected = expected.map { task in
                (task.id, task.id == "t37" ? 9 : task.id == "t1" ? -5 : task.priority, task.order)
            }.filter { $0.id != "t20" }
            try await session.setMaxConcurrentDownloads(1)
            await session.waitUntilIdle()
            let order = expected.sorted { $0.priority != $1.priority ? $0.priority > $1.priority : $0.order < $1.order }.map(\.id)
            #expect(log.startOrder == order)
            #expect(try await session.task("t20")?.state == .paused)
            await session.close()
        }
    }

    /// The same with a window of 2 and one download per host: the window grows past the blocked host's tasks.
    @Test func aTaskForAnotherHostBeyondTheWindowStillStarts() async throws {
        try await withHarness { server, _, sandbox in
            var resource = Resource(body: TestData.bytes(400_000, seed: 8), etag: "\"a\"")
            resource.faults.throttleBytesPerSecond = 40_000
            for n in 0..<30 { server.serve("/a\(n)", resource) }
            server.serve("/b", Resource(body: TestData.bytes(1_000, seed: 9)))
            var configuration = sessionConfiguration(sandbox, concurrent: 2)
            configuration.maxDownloadsPerHost = 1
            configuration.waitingPageSize = 2
            let session = try await DownloadSession(identifier: "window-hosts", configuration: configuration)
            var requests = try (0..<30).map { n in
                var request = DownloadRequest(url: try UserInput.url(server.url("/a\(n)")))
                request.id = "a\(n)"
                return request
            }
            var other = DownloadRequest(url: try UserInput.url(server.url("/b").replacingOccurrences(of: "127.0.0.1", with: "localhost")))
            other.id = "b"
            requests.append(other)
            try await session.add(requests)
            try await waitFor("the task for the other host to finish") { try await session.task("b")?.state == .finished }
            #expect(sandbox.contents("b") == TestData.bytes(1_000, seed: 9))
            await session.close()
        }
    }

    @Test func aTaskForAnotherHostBehindALongBlockedQueueStillStarts() async throws {
        try await withHarness { server, _, sandbox in
            var resource = Resource(body: TestData.bytes(400_000, seed: 8), etag: "\"a\"")
            resource.faults.throttleBytesPerSecond = 40_000
            for n in 0..<60 { server.serve("/a\(n)", resource) }
            var configuration = sessionConfiguration(sandbox, concurrent: 2)
            configuration.maxDownloadsPerHost = 1
            let session = try await DownloadSession(identifier: "heads", configuration: configuration)
            var requests = try (0..<60).map { n in
                var request = DownloadRequest(url: try UserInput.url(server.url("/a\(n)")))
                request.id = "a\(n)"
                return request
            }
            // The same server under another name is another host for the per-host cap: its task must start and
            // finish while the 60 before it wait for their host. (No other loopback address: a sandbox may not route
            // 127.0.0.2, and a connection that hangs proves nothing.)
            server.serve("/b", Resource(body: TestData.bytes(1_000, seed: 9)))
            let otherHost = server.url("/b").replacingOccurrences(of: "127.0.0.1", with: "localhost")
            var other = DownloadRequest(url: try UserInput.url(otherHost))
            other.id = "b"
            requests.append(other)
            try await session.add(requests)
            try await waitFor("the task for the other host to finish") { try await session.task("b")?.state == .finished }
            if let b = try await session.task("b"), b.state != .finished {
                Issue.record("b is \(b.state): \(b.note ?? b.error?.message ?? "")")
            }
            #expect(sandbox.contents("b") == TestData.bytes(1_000, seed: 9))
            let states = try await session.tasks().filter { $0.id != "b" }.map(\.state)
            #expect(states.filter { $0 == .running }.count <= 1, "one download per host: \(states)")
            #expect(states.filter { $0 == .waiting }.count >= 58, "the others wait for their host: \(states)")
            await session.close()
        }
    }

    /// The per-host limit holds tasks back while the session has room: its summary says so (a batch's total line
    /// shows it), and stops saying so once every task of that host runs or the host is below its limit.
    @Test func theWaitingSummarySaysWhenThePerHostLimitHoldsTasksBack() async throws {
        try await withHarness { server, _, sandbox in
            var slow = Resource(body: TestData.bytes(400_000, seed: 10), etag: "\"s\"")
            slow.faults.throttleBytesPerSecond = 40_000
            for n in 0..<6 { server.serve("/s\(n)", slow) }
            var configuration = sessionConfiguration(sandbox, concurrent: 4)
            configuration.maxDownloadsPerHost = 2
            let session = try await DownloadSession(identifier: "held-summary", configuration: configuration)
            #expect(await session.waitingSummary() == WaitingSummary(waiting: 0, heldBackPerHost: nil), "nothing waits yet")
            let requests = try (0..<6).map { n in
                var request = DownloadRequest(url: try UserInput.url(server.url("/s\(n)")))
                request.id = "s\(n)"
                return request
            }
            try await session.add(requests)
            var summary: WaitingSummary?
            try await waitFor("two running, four held back by the per-host limit") {
                summary = await session.waitingSummary()
                return try await session.tasks().filter { $0.state == .running }.count == 2 && summary?.heldBackPerHost == 2
            }
            #expect(summary == WaitingSummary(waiting: 4, heldBackPerHost: 2), "\(String(describing: summary))")
            // As many running as the session now allows: its own limit holds the rest, not the per-host one.
            try await session.setMaxConcurrentDownloads(1)
            try await waitFor("the session's own limit, not the host's, holds them") {
                await session.waitingSummary()?.heldBackPerHost == nil
            }
            try await session.cancelAll()
            await session.close()
        }
    }

    /// A running task removed: its partial data goes, and it is announced `removed` once, with no `cancelled` or
    /// `paused` on the way (a client following it would stop at that before the removal came); the other runs on.
    @Test func removingARunningTaskAnnouncesOnlyItsRemoval() async throws {
        try await withHarness { server, _, sandbox in
            var slow = Resource(body: TestData.bytes(400_000, seed: 12), etag: "\"r\"")
            slow.faults.throttleBytesPerSecond = 40_000
            server.serve("/r0", slow)
            server.serve("/r1", slow)
            let session = try await DownloadSession(identifier: "remove-running", configuration: sessionConfiguration(sandbox, concurrent: 2))
            let log = SessionEventLog(await session.events())
            let requests = try (0..<2).map { n in
                var request = DownloadRequest(url: try UserInput.url(server.url("/r\(n)")), destination: .file(sandbox.path("r\(n)")))
                request.id = "r\(n)"
                return request
            }
            try await session.add(requests)
            try await waitFor("both running with bytes") {
                try await session.tasks().filter { $0.state == .running && $0.bytes > 0 }.count == 2
            }
            try await session.remove(["r0"])
            #expect(try await session.task("r0") == nil)
            try await waitFor("the removal announced") { log.count { $0 == .removed(id: "r0") } == 1 }
            let endings = log.events.filter {
                if case .stateChanged(let id, _, let to) = $0 { return id == "r0" && to != .running }
                return false
            }
            #expect(endings.isEmpty, "\(endings)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.path("r0.haul-part")), "its partial data is gone")
            #expect(try await session.task("r1")?.state == .running)
            try await session.cancelAll()
            await session.close()
        }
    }

    @Test func reopeningRestoresTasksAndResumesRunningOnes() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(600_000, seed: 4)
            var resource = Resource(body: body, etag: "\"r\"")
            // Slow enough that the first session is still downloading when it closes, on a busy machine too.
            resource.faults.throttleBytesPerSecond = 100_000
            server.serve("/slow", resource)
            server.serve("/queued", Resource(body: [1, 2, 3, 4]))
            var configuration = sessionConfiguration(sandbox, concurrent: 1)
            var session = try await DownloadSession(identifier: "reopen", configuration: configuration)
            var slow = DownloadRequest(url: try UserInput.url(server.url("/slow")))
            slow.id = "slow"
            var queued = DownloadRequest(url: try UserInput.url(server.url("/queued")))
            queued.id = "queued"
            try await session.add(slow)
            try await session.add(queued)
            try await waitFor("a running download") { sandbox.exists("slow.haul-part") }
            await session.close()

            configuration.resumeRunningTasksOnRelaunch = false
            session = try await DownloadSession(identifier: "reopen", configuration: configuration)
            #expect(try await session.task("slow")?.state == .paused)
            await session.close()

            configuration.resumeRunningTasksOnRelaunch = true
            configuration.maxConcurrentDownloads = 2
            session = try await DownloadSession(identifier: "reopen", configuration: configuration)
            try await session.resume(["slow"])
            await session.waitUntilIdle()
            #expect(sandbox.contents("slow") == body)
            #expect(sandbox.contents("queued") == [1, 2, 3, 4])
            #expect(server.requests("/slow").count >= 2)
            await session.close()
        }
    }

    @Test func bandwidthLimitIsSharedByAllDownloads() async throws {
        try await withHarness { server, _, sandbox in
            server.serve("/a", Resource(body: TestData.bytes(250_000, seed: 1)))
            server.serve("/b", Resource(body: TestData.bytes(250_000, seed: 2)))
            var configuration = sessionConfiguration(sandbox, concurrent: 2)
            configuration.rateLimit = 500_000
            let session = try await DownloadSession(identifier: "limit", configuration: configuration)
            let started = ContinuousClock.now
            try await session.add(DownloadRequest(url: try UserInput.url(server.url("/a"))))
            try await session.add(DownloadRequest(url: try UserInput.url(server.url("/b"))))
            await session.waitUntilIdle()
            // 500 kB together at 500 kB/s: at least 0.95 s, not half of that as two separate limits would allow.
            #expect(ContinuousClock.now - started >= .milliseconds(950))
            #expect(sandbox.contents("a") == TestData.bytes(250_000, seed: 1))
            #expect(sandbox.contents("b") == TestData.bytes(250_000, seed: 2))
            await session.close()
        }
    }

    @Test func aSessionIsOpenInOneProcessAtATime() async throws {
        try await withHarness { _, _, sandbox in
            let session = try await DownloadSession(identifier: "one", configuration: sessionConfiguration(sandbox))
            await #expect(throws: HaulError.self) {
                _ = try await DownloadSession(identifier: "one", configuration: sessionConfiguration(sandbox))
            }
            await session.close()
            await #expect(throws: HaulError.self) {
                _ = try await DownloadSession(identifier: "../evil", configuration: sessionConfiguration(sandbox))
            }
        }
    }
}

final class SessionEventLogBox: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    func add(_ task: TaskSnapshot) { lock.withLock { storage.append(task.id) } }
    var ids: [String] { lock.withLock { storage } }
}
