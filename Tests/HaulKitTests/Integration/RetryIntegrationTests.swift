import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// Retries, status codes, stalls, redirects and interruption through the fault-injecting server.
@Suite struct RetryIntegrationTests {
    let body = TestData.bytes(200_000, seed: 3)

    @Test func serviceUnavailableHonoursRetryAfter() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"a\"")
            resource.faults.statusForFirstRequests = (503, 1, "1")
            server.serve("/f", resource)
            let log = EventLog()
            let started = ContinuousClock.now
            try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f"))), events: log.append)
            #expect(sandbox.contents("f") == body)
            #expect(log.retries.count == 1)
            #expect(log.retries.first?.1 == .seconds(1))
            #expect(ContinuousClock.now - started >= .milliseconds(900))
        }
    }

    @Test(arguments: [408, 429, 500, 502])
    func transientStatusesAreRetried(_ status: Int) async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body)
            resource.faults.statusForFirstRequests = (status, 2, nil)
            server.serve("/f", resource)
            try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f"))))
            #expect(sandbox.contents("f") == body)
            #expect(server.requests("/f").count == 3)
        }
    }

    @Test func retriesRunOutWithAClearError() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body)
            resource.faults.statusForFirstRequests = (500, 100, nil)
            server.serve("/f", resource)
            let error = await expectHaulError(.httpStatus) {
                _ = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f")), retries: 2))
            }
            #expect(error?.message.contains("500") == true)
            #expect(server.requests("/f").count == 3)
            #expect(!sandbox.exists("f"))
        }
    }

    @Test(arguments: [400, 403, 404, 410])
    func clientErrorsFailAtOnce(_ status: Int) async throws {
        try await withHarness { server, engine, sandbox in
            server.route("/f") { _ in .text(status, "no") }
            let error = await expectHaulError(.httpStatus) {
                _ = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f"))))
            }
            #expect(error?.message.contains("\(status)") == true)
            #expect(server.requests("/f").count == 1)
            #expect(sandbox.listing().isEmpty)
        }
    }

    @Test func connectionRefusedIsANetworkError() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        // A port held bound and never listening: refused, and no other test's server can be given it meanwhile (a port
        // freed by a server's shutdown sometimes was, under the whole suite's load).
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let url = "http://127.0.0.1:\(refusing.port)/f"
        let engine = TransferEngine(home: sandbox.home)
        await expectHaulError(.network) {
            _ = try await engine.download(try testOptions(url, .file(sandbox.path("f")), retries: 1))
        }
        try await engine.shutdown()
    }

    @Test func stalledTransferIsRetriedAndResumed() async throws {
        try await withHarness(stallTimeout: .milliseconds(500)) { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"s\"")
            resource.faults.stallAfterBytes = 50_000
            resource.faults.stallOnRequests = 1
            server.serve("/f", resource)
            let log = EventLog()
            try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f"))), events: log.append)
            #expect(sandbox.contents("f") == body)
            #expect(log.retries.first?.2.contains("stalled") == true)
            #expect(server.requests("/f")[1].header("Range") != nil)
        }
    }

    @Test func chunkedResponseWithoutLengthCompletes() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body)
            resource.faults.chunked = true
            server.serve("/f", resource)
            let result = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f"))))
            #expect(sandbox.contents("f") == body)
            #expect(result.bytes == Int64(body.count))
        }
    }

    @Test func cancellationPausesAndTheNextRunResumes() async throws {
        try await withHarness { server, engine, sandbox in
            let body = TestData.bytes(1_000_000, seed: 8)
            var resource = Resource(body: body, etag: "\"t\"")
            resource.faults.throttleBytesPerSecond = 400_000
            server.serve("/f", resource)
            var options = try testOptions(server.url("/f"), .file(sandbox.path("f")))
            options.progressInterval = .milliseconds(10)
            let box = TaskBox()
            let log = EventLog { event in
                if case .progress(let progress) = event, progress.bytes >= 80_000 { box.cancel() }
            }
            let first = options
            let task = Task { try await engine.download(first, events: log.append) }
            box.set(task)
            let error = await expectHaulError(.interrupted) { _ = try await task.value }
            // The library says what happened; the next step (run the command again, resume the task) is the front end's.
            #expect(error?.reason == .interrupted)
            #expect(error?.message.contains("paused at") == true)
            let record = try #require(sandbox.records().first)
            #expect(record.state == .paused)
            #expect(record.offset >= 80_000)
            #expect(!sandbox.exists("f"))

            try await engine.download(options)
            #expect(sandbox.contents("f") == body)
            #expect(server.requests("/f").last?.header("Range") == resumeRange(from: record.offset))
        }
    }

    @Test func rateLimitSlowsTheTransfer() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: body))
            var options = try testOptions(server.url("/f"), .file(sandbox.path("f")))
            options.rateLimit = 400_000
            let started = ContinuousClock.now
            try await engine.download(options)
            // 200 kB at 400 kB/s is 0.5 s: never more than 5% faster than the limit.
            #expect(ContinuousClock.now - started >= .milliseconds(475))
            #expect(sandbox.contents("f") == body)
        }
    }

    @Test func checksumIsVerifiedAcrossAResume() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"c\"")
            resource.faults.dropAfterBytes = 90_000
            resource.faults.dropOnRequests = 1
            server.serve("/f", resource)
            var options = try testOptions(server.url("/f"), .file(sandbox.path("f")))
            options.checksum = Checksum(algorithm: .sha256, hex: sha256Hex(body))
            let result = try await engine.download(options)
            #expect(result.checksum == options.checksum)
            #expect(sandbox.contents("f") == body)
        }
    }

    @Test func checksumMismatchLeavesNothingBehind() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: body))
            var options = try testOptions(server.url("/f"), .file(sandbox.path("f")))
            options.checksum = Checksum(algorithm: .md5, hex: String(repeating: "0", count: 32))
            let error = await expectHaulError(.checksum) { _ = try await engine.download(options) }
            #expect(error?.message.contains("md5") == true)
            #expect(sandbox.listing().isEmpty)
            #expect(sandbox.records().isEmpty)
        }
    }
}

/// Holds a task so an event handler can cancel it.
final class TaskBox: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<DownloadResult, any Error>?
    private var cancelled = false

    func set(_ task: Task<DownloadResult, any Error>) {
        lock.lock()
        self.task = task
        let cancelNow = cancelled
        lock.unlock()
        if cancelNow { task.cancel() }
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let task = self.task
        lock.unlock()
        task?.cancel()
    }
}
