import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// Segmented downloads through the fault-injecting server, compared byte for byte.
@Suite struct SegmentedIntegrationTests {
    let body = TestData.bytes(4 << 20, seed: 21)

    func segmentedOptions(_ url: String, _ path: String, segments: Int = 4) throws -> DownloadOptions {
        var options = try testOptions(url, .file(path))
        options.segments = segments
        options.minSegmentSize = 128 * 1024
        return options
    }

    /// The first byte asked for by a request's `Range`, if any.
    func rangeStart(_ request: RecordedRequest) -> Int? {
        request.header("Range").flatMap { Int($0.dropFirst("bytes=".count).split(separator: "-").first ?? "") }
    }

    @Test func splitsIntoClosedRangesAndIsExact() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: body, etag: "\"s1\""))
            let log = EventLog()
            let result = try await engine.download(try segmentedOptions(server.url("/f"), sandbox.path("f")), events: log.append)
            #expect(sandbox.contents("f") == body)
            #expect(result.fetchedBytes == Int64(body.count))
            // A connection whose segment is done claims the next at once: its end is no failure to back off from.
            let earlyEnds = log.retries.filter { $0.2.hasPrefix("the server ended") }
            #expect(earlyEnds.isEmpty, "a segment's normal end was taken for an early one: \(earlyEnds)")
            let requests = server.requests("/f")
            #expect(requests.first?.header("Range") == "bytes=0-")
            #expect(requests.count >= 4)
            for request in requests.dropFirst() {
                #expect(request.header("If-Range") == "\"s1\"")
                #expect(request.header("Range")?.hasSuffix("-") == false)
            }
            #expect(sandbox.records().first?.segments == nil)
            #expect(sandbox.records().first?.state == .finished)
        }
    }

    @Test func slowConnectionIsHelpedByWorkStealing() async throws {
        try await withHarness { server, engine, sandbox in
            let resource = Resource(body: body, etag: "\"s2\"")
            server.route("/f") { request in
                var plan = resource.response(to: request)
                // The probe (which keeps the first segment) crawls; the others are fast. At 32 KiB/s its 1 MiB would
                // take 32 s: time enough for the others to finish theirs and take over part of it even on a busy
                // machine (at 64 KiB/s they once had not), while what it keeps after the steals (at most two minimum
                // segments) takes it a few seconds.
                if request.index == 0 { plan.delivery = .throttled(bytesPerSecond: 32 * 1024) }
                return plan
            }
            let log = EventLog()
            try await engine.download(try segmentedOptions(server.url("/f"), sandbox.path("f")), events: log.append)
            #expect(sandbox.contents("f") == body)
            let firstSegmentEnd = body.count / 4
            let requests = server.requests("/f")
            let stolen = requests.dropFirst().compactMap(rangeStart).filter { $0 > 0 && $0 < firstSegmentEnd }
            let why = "requests \(requests.map { "\($0.header("Range") ?? "-") sent \($0.bytesSent)" }), retries \(log.retries.map(\.2))"
            #expect(!stolen.isEmpty, "no connection took over part of the slow first segment: \(why)")
            #expect(requests[0].bytesSent < firstSegmentEnd, "\(why)")
        }
    }

    /// A segment's connection drops: the retry asks for the rest from where the segment stopped, repeating only the
    /// 64 KiB before that point to compare them (BoundaryChecks), never the segment's first byte again.
    ///
    /// Where a segment stops is what its connection wrote, not what the server sent: a client loses the bytes it had
    /// received and not yet read when the connection closes (so a retry may reach before the dropped request's
    /// start, when little was written). The server therefore drops the connection only once the progress shows the
    /// segment holding every byte sent. Those are fewer than `minSegmentSize`, and a takeover leaves a segment at
    /// least that much past where it stands, so the segment does not end before them however it is split meanwhile.
    @Test func droppedSegmentIsRetriedFromWhereItStopped() async throws {
        // A long stall timeout: a stall's retry on a starved machine would make request 2 another kind of request.
        try await withHarness(stallTimeout: .seconds(120)) { server, engine, sandbox in
            let resource = Resource(body: body, etag: "\"s3\"")
            var options = try segmentedOptions(server.url("/f"), sandbox.path("f"))
            options.progressInterval = .milliseconds(10)
            // The 16 KiB asked for before a segment's first byte, then more than the 64 KiB a retry asks for again.
            let boundary = Int(BoundaryChecks.boundaryLength), overlap = Int(ResumePolicy.overlapLength)
            let sent = boundary + overlap + 20_000
            #expect(Int64(sent - boundary) < options.minSegmentSize)
            let drop = DropSignal()
            server.route("/f") { request in
                var plan = resource.response(to: request)
                if request.index == 2 { plan.delivery = .custom(DeliveryOptions(interruption: .dropWhen(afterBytes: sent, signal: drop))) }
                return plan
            }
            let log = EventLog()
            let download = Task { try await engine.download(options, events: log.append) }
            // Whatever happens below, the download is not left waiting on the signal.
            defer {
                drop.fire()
                download.cancel()
            }
            try await waitUntil("request 2 arrives") { server.requests("/f").contains { $0.index == 2 } }
            let droppedStart = try #require(server.requests("/f").first { $0.index == 2 }.flatMap(rangeStart))
            let segmentStart = Int64(droppedStart + boundary), stopped = Int64(droppedStart + sent)
            try await waitUntil("the segment at byte \(segmentStart) holds the bytes sent") {
                log.segments.contains { $0.start == segmentStart && $0.next == stopped }
            }
            drop.fire()
            _ = try await download.value
            #expect(sandbox.contents("f") == body)
            #expect(!log.retries.isEmpty)
            let requests = server.requests("/f")
            let why = "requests \(requests.map { "#\($0.index) \($0.header("Range") ?? "-") sent \($0.bytesSent)" })"
            // The rest, from the 64 KiB before where the segment stopped: past its first byte, since it wrote more.
            let retryStart = Int(stopped) - overlap
            #expect(retryStart > Int(segmentStart))
            #expect(requests.contains { $0.index > 2 && rangeStart($0) == retryStart }, "no retry from byte \(retryStart): \(why)")
            #expect(!requests.contains { $0.index > 2 && rangeStart($0) == droppedStart }, "the segment started over: \(why)")
        }
    }

    @Test func wrongContentRangeOnOneSegmentIsNeverWritten() async throws {
        try await withHarness { server, engine, sandbox in
            let resource = Resource(body: body, etag: "\"s4\"")
            var lying = resource
            lying.faults.contentRangeStartShift = 4096
            let liar = lying
            server.route("/f") { request in
                request.index == 1 ? liar.response(to: request) : resource.response(to: request)
            }
            let log = EventLog()
            try await engine.download(try segmentedOptions(server.url("/f"), sandbox.path("f")), events: log.append)
            #expect(sandbox.contents("f") == body)
            #expect(log.retries.contains { $0.2.contains("unusable partial response") })
        }
    }

    @Test func changedETagMidDownloadRestartsTheWholeFileOnOneConnection() async throws {
        try await withHarness { server, engine, sandbox in
            let changed = TestData.bytes(body.count, seed: 77)
            let old = Resource(body: body, etag: "\"old\"")
            let new = Resource(body: changed, etag: "\"new\"")
            server.route("/f") { request in
                // The file is replaced right after the probe.
                request.index == 0 ? old.response(to: request) : new.response(to: request)
            }
            let log = EventLog()
            try await engine.download(try segmentedOptions(server.url("/f"), sandbox.path("f")), events: log.append)
            #expect(sandbox.contents("f") == changed)
            #expect(log.restarts.count == 1)
            // The segments' answers named another version than the probe's: as behind a load balancer whose backends
            // stamp the file differently, the restart is one plain request on one connection, which says why.
            // (Order is not asserted: a cancelled segment request in flight may arrive after it.)
            let plain = server.requests("/f").filter { $0.header("Range") == nil }
            #expect(plain.count == 1)
            #expect(server.requests("/f").filter { $0.header("Range") == "bytes=0-" }.count == 1, "no second probe")
            let reasons = log.events.compactMap { if case .singleConnection(let why) = $0 { return why } else { return nil } }
            #expect(reasons == ["the server's segments disagree about the file's version"])
        }
    }

    @Test(arguments: ["ignoreRange", "noValidators", "chunked"])
    func unsuitableServersGetOneConnection(_ kind: String) async throws {
        // A long stall timeout: the whole test process can be starved for many seconds while the suite starts (every
        // suite at once on two cores), and a stall's retry would add a request this test does not count.
        try await withHarness(stallTimeout: .seconds(120)) { server, engine, sandbox in
            var resource = Resource(body: body, etag: kind == "noValidators" ? nil : "\"s5\"")
            if kind == "ignoreRange" { resource.faults.ignoreRange = true }
            if kind == "chunked" { resource.faults.chunked = true; resource.faults.ignoreRange = true }
            server.serve("/f", resource)
            let log = EventLog()
            try await engine.download(try segmentedOptions(server.url("/f"), sandbox.path("f")), events: log.append)
            #expect(sandbox.contents("f") == body)
            // One request per attempt, never a segment: a transient failure on a loaded machine (reported as a
            // retry) may add an attempt, which must again take one connection and say why once.
            let retries = log.retries.map(\.2)
            let requests = server.requests("/f")
            #expect(requests.count == 1 + retries.count, "requests \(requests.map { $0.header("Range") ?? "-" }), retries \(retries)")
            #expect(requests.allSatisfy { ($0.header("Range") ?? "bytes=0-").hasSuffix("-") }, "no closed segment range")
            let reasons = log.events.compactMap { if case .singleConnection(let why) = $0 { return why } else { return nil } }
            #expect(reasons.count == requests.count, "\(reasons), retries \(retries)")
        }
    }

    @Test func rateLimitCapsAllConnectionsTogether() async throws {
        try await withHarness { server, engine, sandbox in
            let small = Array(body.prefix(1 << 20))
            server.serve("/f", Resource(body: small, etag: "\"s6\""))
            var options = try segmentedOptions(server.url("/f"), sandbox.path("f"))
            options.rateLimit = 1 << 20
            let started = ContinuousClock.now
            try await engine.download(options)
            // 1 MiB at 1 MiB/s over 4 connections together: at least 0.95 s (within 5% of the limit).
            #expect(ContinuousClock.now - started >= .milliseconds(950))
            #expect(sandbox.contents("f") == small)
        }
    }

    @Test func checksumIsVerifiedOverTheAssembledFile() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: body, etag: "\"s7\""))
            var options = try segmentedOptions(server.url("/f"), sandbox.path("f"))
            options.checksum = Checksum(algorithm: .sha256, hex: sha256Hex(body))
            let result = try await engine.download(options)
            #expect(result.checksum == options.checksum)
            options.checksum = Checksum(algorithm: .sha1, hex: String(repeating: "a", count: 40))
            try FileManager.default.removeItem(atPath: sandbox.path("f"))
            await expectHaulError(.checksum) { _ = try await engine.download(options) }
            #expect(!sandbox.exists("f"))
        }
    }

    @Test func interruptedSegmentsResumeWithoutRefetching() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"s8\"")
            resource.faults.throttleBytesPerSecond = 1 << 20
            server.serve("/f", resource)
            var options = try segmentedOptions(server.url("/f"), sandbox.path("f"))
            options.checkpointInterval = .milliseconds(20)
            options.progressInterval = .milliseconds(20)
            let box = TaskBox()
            let log = EventLog { event in
                if case .progress(let progress) = event, progress.bytes >= 1 << 20 { box.cancel() }
            }
            let first = options
            let task = Task { try await engine.download(first, events: log.append) }
            box.set(task)
            await expectHaulError(.interrupted) { _ = try await task.value }
            let record = try #require(sandbox.records().first)
            let segments = try #require(record.segments)
            #expect(record.state == .paused)
            #expect(POSIX.fileSize(sandbox.path("f") + ".haul-part") == Int64(body.count))
            let before = server.requests("/f").count

            server.serve("/f", Resource(body: body, etag: "\"s8\""))
            try await engine.download(options)
            #expect(sandbox.contents("f") == body)
            let resumed = server.requests("/f").dropFirst(before)
            // The last bytes of each held stretch are asked for once, to compare them; no other request asks for a
            // byte that was recorded as held.
            let checks = Set(ResumePolicy.verificationPlans(for: try #require(SegmentPlan(restoring: segments, total: Int64(body.count), minSegmentSize: options.minSegmentSize)).heldRuns, validators: Validators()).map {
                "bytes=\($0.plan.start)-\($0.point - 1)"
            })
            var checked: Set<String> = []
            for request in resumed {
                let header = try #require(request.header("Range"))
                if checks.contains(header), checked.insert(header).inserted { continue }
                let range = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
                let asked = try #require(Int64(range[0]))
                // A request repeats bytes before its start, only to compare them (BoundaryChecks): the 64 KiB before a
                // held segment's next byte, 16 KiB before a segment's first.
                let continued = segments.first {
                    $0.done > 0 && $0.next - BoundaryChecks.overlap(next: $0.next, segmentStart: $0.start) == asked
                }
                let first = continued?.next ?? (asked == 0 ? 0 : asked + BoundaryChecks.boundaryLength)
                let last = Int64(range[1]) ?? Int64(body.count - 1)
                let overlapping = segments.filter { first < $0.next && last >= $0.start && $0.done > 0 && max(first, $0.start) < $0.next }
                #expect(overlapping.isEmpty, "bytes \(first)-\(last) overlap bytes already held: \(overlapping)")
            }
            #expect(checked == checks, "every held stretch was compared before it continued")
        }
    }

    @Test func emptyFileAnswersTheProbeWith416AndCompletes() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/empty", Resource(body: [], etag: "\"e\""))
            let result = try await engine.download(try testOptions(server.url("/empty"), .file(sandbox.path("empty"))))
            #expect(result.bytes == 0)
            #expect(sandbox.contents("empty") == [])
        }
    }
}
