import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One `segments` entry of a resume record or a `--json` progress event: bytes `start..<start + done` are held.
struct SegmentState: Equatable, CustomStringConvertible {
    var start: Int
    var end: Int
    var done: Int

    var next: Int { start + done }
    var isComplete: Bool { next >= end }
    var description: String { "[\(start)..<\(end) done \(done)]" }

    /// The `segments` array of a record or event, sorted by `start`; nil when absent or malformed.
    static func list(_ object: [String: Any]) -> [SegmentState]? {
        guard let raw = object["segments"] as? [[String: Any]] else { return nil }
        var result: [SegmentState] = []
        for entry in raw {
            guard let start = (entry["start"] as? NSNumber)?.intValue, let end = (entry["end"] as? NSNumber)?.intValue,
                  let done = (entry["done"] as? NSNumber)?.intValue else { return nil }
            result.append(SegmentState(start: start, end: end, done: done))
        }
        return result.sorted { $0.start < $1.start }
    }

    static func doneBytes(_ segments: [SegmentState]) -> Int { segments.reduce(0) { $0 + $1.done } }

    /// The closed ranges a resume asks for to compare the last bytes (up to 64 KiB) of each stretch held, before
    /// any segment continues: adjacent done bytes of neighbouring segments form one stretch.
    static func checks(_ segments: [SegmentState]) -> [(first: Int, last: Int)] {
        var runs: [Range<Int>] = []
        for segment in segments where segment.done > 0 {
            if let last = runs.last, last.upperBound == segment.start {
                runs[runs.count - 1] = last.lowerBound..<segment.next
            } else {
                runs.append(segment.start..<segment.next)
            }
        }
        return runs.map { (max($0.lowerBound, $0.upperBound - 65536), $0.upperBound - 1) }
    }

    /// nil when `segments` cover `0..<total` without gaps or overlaps and every `done` fits its segment.
    static func coverageProblem(_ segments: [SegmentState], total: Int) -> String? {
        var expected = 0
        for segment in segments {
            if segment.start != expected { return "gap or overlap at \(expected): \(segments)" }
            if segment.end <= segment.start || segment.done < 0 || segment.done > segment.end - segment.start {
                return "bad segment \(segment) in \(segments)"
            }
            expected = segment.end
        }
        return expected == total ? nil : "segments end at \(expected), not \(total): \(segments)"
    }
}

/// `bytes=a-b` → (a, b); `bytes=a-` → (a, total - 1); nil for anything else.
func byteRange(_ header: String?, total: Int) -> (first: Int, last: Int)? {
    guard let header, header.hasPrefix("bytes=") else { return nil }
    let spec = header.dropFirst("bytes=".count)
    let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
    guard parts.count == 2, let first = Int(parts[0]) else { return nil }
    if parts[1].isEmpty { return (first, total - 1) }
    guard let last = Int(parts[1]) else { return nil }
    return (first, last)
}

/// nil when the bytes that `segments` call done hold exactly `source`'s bytes at the same offsets.
func heldBytesProblem(_ path: String, segments: [SegmentState], source: [UInt8]) -> String? {
    guard let held = readBytes(path) else { return "\(path) does not exist" }
    for segment in segments where segment.done > 0 {
        guard segment.next <= held.count else { return "\(path) is shorter (\(held.count)) than \(segment)" }
        let equal = held.withUnsafeBytes { a in
            source.withUnsafeBytes { b in memcmp(a.baseAddress! + segment.start, b.baseAddress! + segment.start, segment.done) == 0 }
        }
        if !equal { return "the bytes of \(segment) recorded as done differ from the server's" }
    }
    return nil
}

/// Checks the requests of a resumed segmented download against the segments recorded before it: first one closed
/// check of the last 64 KiB of each stretch held (compared whatever the ETag says); then every unfinished segment is
/// continued exactly at `start + done`, any other request starts inside a range not yet done (a stolen half), no
/// request asks for a byte recorded as done (beyond the bytes before its start that it repeats to compare them), and
/// each carries `If-Range`. Returns the bytes asked for only to be compared: the checks' and those overlaps.
@discardableResult
func expectResumeRequests(
    _ requests: [RecordedRequest], recorded: [SegmentState], total: Int, etag: String,
    sourceLocation: SourceLocation = #_sourceLocation
) -> Int {
    let nexts = Set(recorded.filter { !$0.isComplete }.map(\.next))
    var checks = SegmentState.checks(recorded)
    var checkBytes = checks.reduce(0) { $0 + $1.last - $1.first + 1 }
    var ranges: [(first: Int, last: Int)] = []
    for request in requests {
        guard let range = byteRange(request.header("Range"), total: total) else {
            Issue.record("a resumed request without a usable Range: \(request.headers)", sourceLocation: sourceLocation)
            continue
        }
        #expect(request.header("If-Range") == etag, "If-Range missing or wrong: \(request.headers)", sourceLocation: sourceLocation)
        if let check = checks.firstIndex(where: { $0 == range }) {
            checks.remove(at: check)
            continue
        }
        #expect(range.first <= range.last && range.last < total, "bad range \(range)", sourceLocation: sourceLocation)
        // A request repeats the bytes before its data to compare them: the 64 KiB before a segment's next byte, the
        // 16 KiB before a segment's first.
        let asked = range.first
        let data = dataStart(asked: asked, nexts: nexts)
        let fetched = (first: data, last: range.last)
        checkBytes += data - asked
        ranges.append(fetched)
        let insideUndone = recorded.contains { $0.next < fetched.first && fetched.first < $0.end }
        #expect(nexts.contains(fetched.first) || insideUndone,
                "bytes=\(fetched.first)-\(fetched.last) starts neither at a recorded start+done nor inside a range not done; recorded \(recorded)",
                sourceLocation: sourceLocation)
        for segment in recorded where segment.done > 0 {
            let overlaps = fetched.first < segment.next && fetched.last >= segment.start
            #expect(!overlaps, "bytes=\(fetched.first)-\(fetched.last) asks again for bytes recorded as done in \(segment)",
                    sourceLocation: sourceLocation)
        }
    }
    #expect(checks.isEmpty, "held stretches never compared: \(checks)", sourceLocation: sourceLocation)
    for next in nexts.sorted() {
        #expect(ranges.contains { $0.first == next },
                "no request continued the segment at byte \(next); ranges \(ranges), recorded \(recorded)",
                sourceLocation: sourceLocation)
    }
    return checkBytes
}

/// Where a resumed request asking from `asked` wants its own bytes from: a continuation at a recorded `start + done`
/// repeats the 64 KiB before it, any other request (a segment's first, a stolen half) the 16 KiB before its start.
func dataStart(asked: Int, nexts: Set<Int>) -> Int {
    nexts.first { $0 - min($0, 65536) == asked && $0 > asked } ?? (asked == 0 ? 0 : asked + 16384)
}

/// The requests to `path` from index `index` on, once the bytes the server counted for them reach `atLeast` (bounded
/// wait): the last writes are counted when their completion is seen.
func requestsOnceSent(_ server: TestServer, _ path: String, from index: Int, atLeast expected: Int) async -> [RecordedRequest] {
    func sent() -> Int { server.requests(path).dropFirst(index).reduce(0) { $0 + $1.bytesSent } }
    try? await eventually("the server has counted \(expected) bytes", timeout: .seconds(5)) { sent() >= expected }
    try? await Task.sleep(for: .milliseconds(100))
    return Array(server.requests(path).dropFirst(index))
}

/// The bytes of the file that two of the resumed answers both carried (each answer's body covers `asked ..< asked +
/// bytesSent`, its bytes to compare left out), and those of them not inside a stolen half. A connection whose segment's
/// rest was taken over stops at the new end, but the bytes past it that the server had already sent (in socket buffers,
/// more of them the slower the client reads) were carried twice: that is the cost of taking over, not a refetch. Any
/// other byte carried twice is one.
func bytesCarriedTwice(_ requests: [RecordedRequest], recorded: [SegmentState], total: Int) -> (count: Int, outsideTakeovers: [Range<Int>]) {
    let nexts = Set(recorded.filter { !$0.isComplete }.map(\.next))
    let checks = SegmentState.checks(recorded)
    var carried: [Range<Int>] = [], takeovers: [Range<Int>] = []
    for request in requests {
        guard let range = byteRange(request.header("Range"), total: total), range.first <= range.last,
              !checks.contains(where: { $0 == range }) else { continue }
        let data = dataStart(asked: range.first, nexts: nexts)
        let end = min(range.last + 1, range.first + request.bytesSent)
        if !nexts.contains(data), data <= range.last { takeovers.append(data..<(range.last + 1)) }
        if data < end { carried.append(data..<end) }
    }
    // Sweep the answers' boundaries: a stretch covered by k answers was carried k - 1 times too many.
    let points = Set(carried.flatMap { [$0.lowerBound, $0.upperBound] }).sorted()
    var count = 0
    var outside: [Range<Int>] = []
    for (from, to) in zip(points, points.dropFirst()) {
        let covering = carried.filter { $0.lowerBound <= from && to <= $0.upperBound }.count
        guard covering > 1 else { continue }
        count += (covering - 1) * (to - from)
        if !takeovers.contains(where: { $0.lowerBound <= from && to <= $0.upperBound }) { outside.append(from..<to) }
    }
    return (count, outside)
}

/// Segmented downloads (`--segments N`) as a user runs them: killed, paused, watched through `--json`.
@Suite struct SegmentedCLITests {
    static let etag = "\"seg-v1\""

    func serve(_ server: TestServer, _ body: [UInt8], perConnection rate: Int) {
        var resource = Resource(body: body, etag: Self.etag)
        resource.faults.throttleBytesPerSecond = rate
        server.serve("/file.bin", resource)
    }

    /// Starts `args` and sends `signal` (bounded wait) once the resume record lists segments with ≥ `minimum` bytes done.
    func startSegmented(_ box: Sandbox, _ args: [String], minimum: Int, thenSend signal: Int32) async throws -> HaulRun {
        let run = try box.start(args)
        try await signalWhen(run, signal, "the record lists segments with ≥ \(minimum) bytes done") {
            guard let record = box.records().first, let segments = SegmentState.list(record) else { return false }
            return SegmentState.doneBytes(segments) >= minimum
        }
        return run
    }

    @Test func sigkillThenSameCommandResumesEverySegmentWithoutRefetching() async throws {
        let total = 12 << 20
        try await withTestServer { server in
            let source = TestData.bytes(total, seed: 601)
            serve(server, source, perConnection: 3 << 19)  // 1.5 MiB/s per connection: ~2 s for the whole file
            try await Sandbox.with { box in
                let destination = box.path("file.bin"), partial = destination + ".haul-part"
                let args = ["get", server.url("/file.bin"), "-o", destination,
                            "--segments", "4", "--min-segment-size", "256K", "--quiet"]
                let first = try await startSegmented(box, args, minimum: 2 << 20, thenSend: SIGKILL)
                let killed = try await first.wait(timeout: .seconds(10))
                #expect(killed.signalled && killed.exitCode == SIGKILL, "haul was not killed by SIGKILL: \(killed)")

                #expect(!fileExists(destination), "the destination must not appear before the download is complete")
                #expect(fileSize(partial) == total, "the partial file is preallocated to the full length")
                // The record as the kill left it: what the rerun starts from.
                let records = box.records()
                #expect(records.count == 1)
                let record = try #require(records.first)
                let recorded = try #require(SegmentState.list(record), "record: \(record)")
                let held = SegmentState.doneBytes(recorded)
                #expect(SegmentState.coverageProblem(recorded, total: total) == nil)
                #expect(recorded.count >= 4, "4 segments were asked for: \(recorded)")
                #expect(held >= 2 << 20 && held < total)
                #expect((record["offset"] as? NSNumber)?.intValue == held, "offset is the sum of done: \(record)")
                #expect(heldBytesProblem(partial, segments: recorded, source: source) == nil)

                let before = server.requests("/file.bin").count
                let second = try await box.run(args, timeout: .seconds(30))
                #expect(second.exitCode == 0 && !second.signalled, "rerun failed: \(second)")
                #expect(contentMismatch(destination, expected: source) == nil)
                #expect(!fileExists(partial))

                let resumed = Array(server.requests("/file.bin").dropFirst(before))
                let checked = expectResumeRequests(resumed, recorded: recorded, total: total, etag: Self.etag)
                // Bytes the server sent: the ones not done, those to compare, and those a segment's answer carried past
                // the point where another connection took its rest over (in flight when it stopped); nothing more.
                let needed = total - held + checked
                let answered = await requestsOnceSent(server, "/file.bin", from: before, atLeast: needed)
                let sent = answered.reduce(0) { $0 + $1.bytesSent }
                let twice = bytesCarriedTwice(answered, recorded: recorded, total: total)
                let ranges = answered.map { "\($0.header("Range") ?? "-") sent \($0.bytesSent)" }
                #expect(twice.outsideTakeovers.isEmpty, "bytes carried twice outside any stolen half: \(twice.outsideTakeovers); \(ranges)")
                #expect(sent <= needed + twice.count,
                        "the rerun fetched \(sent) bytes; only the \(needed) not done (with those to compare) were needed, and \(twice.count) were carried twice past a takeover; \(ranges)")
            }
        }
    }

    @Test func sigintPausesWithSegmentsAndSameCommandFinishes() async throws {
        let total = 8 << 20
        try await withTestServer { server in
            let source = TestData.bytes(total, seed: 602)
            serve(server, source, perConnection: 1 << 20)
            try await Sandbox.with { box in
                let destination = box.path("file.bin"), partial = destination + ".haul-part"
                let args = ["get", server.url("/file.bin"), "-o", destination,
                            "--segments", "4", "--min-segment-size", "256K", "--quiet"]
                let first = try await startSegmented(box, args, minimum: 1, thenSend: SIGINT)
                let paused = try await first.wait(timeout: .seconds(10))
                #expect(paused.exitCode == 130 && !paused.signalled, "SIGINT must exit 130: \(paused)")
                #expect(paused.stderr.contains("paused at"), "stderr: \(paused.stderr)")
                #expect(!fileExists(destination))
                #expect(fileSize(partial) == total)

                let records = box.records()
                #expect(records.count == 1)
                let record = try #require(records.first)
                #expect(record["state"] as? String == "paused", "record: \(record)")
                let recorded = try #require(SegmentState.list(record), "a paused segmented download keeps its segments: \(record)")
                let held = SegmentState.doneBytes(recorded)
                #expect(SegmentState.coverageProblem(recorded, total: total) == nil)
                #expect(held > 0 && held < total)
                #expect((record["offset"] as? NSNumber)?.intValue == held, "offset is the sum of done: \(record)")
                #expect(heldBytesProblem(partial, segments: recorded, source: source) == nil)

                let before = server.requests("/file.bin").count
                let second = try await box.run(args, timeout: .seconds(30))
                #expect(second.exitCode == 0, "rerun failed: \(second)")
                #expect(contentMismatch(destination, expected: source) == nil)
                expectResumeRequests(Array(server.requests("/file.bin").dropFirst(before)), recorded: recorded, total: total, etag: Self.etag)
                let finished = box.records().first
                #expect(finished?["state"] as? String == "finished", "record: \(String(describing: finished))")
            }
        }
    }

    @Test func jsonProgressCarriesSegmentsThatAddUpToBytes() async throws {
        let total = 4 << 20
        try await withTestServer { server in
            let source = TestData.bytes(total, seed: 603)
            serve(server, source, perConnection: 1 << 20)  // ~1 s: several progress events
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let result = try await box.run(["get", server.url("/file.bin"), "-o", destination,
                                                "--segments", "4", "--min-segment-size", "256K", "--json"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: source) == nil)
                let events = try result.jsonEvents()
                let names = events.map { $0["type"] as? String ?? "?" }
                #expect(!names.contains("singleConnection"), "events: \(names)")
                let segmented = events.filter { $0["type"] as? String == "progress" && $0["segments"] != nil }
                #expect(!segmented.isEmpty, "no progress event carried segments: \(result.stdout)")
                for event in segmented {
                    let segments = try #require(SegmentState.list(event), "malformed segments: \(event)")
                    let bytes = (event["bytes"] as? NSNumber)?.intValue
                    #expect(bytes == SegmentState.doneBytes(segments), "done values must add up to bytes: \(event)")
                    #expect((event["total"] as? NSNumber)?.intValue == total)
                    #expect(SegmentState.coverageProblem(segments, total: total) == nil)
                }
                let last = try #require(events.last)
                #expect(last["type"] as? String == "finished", "last event: \(last)")
                #expect(((last["task"] as? [String: Any])?["bytes"] as? NSNumber)?.intValue == total)
            }
        }
    }
}

extension SegmentedCLITests {
    /// The resource changes while segments are being fetched: the third request (a segment's) finds version B, so its
    /// `If-Range: "a"` fails and it is answered 200 with the whole of B. That must stop every connection and start
    /// the file over at once: no connection may go on to claim more ranges of version A.
    @Test func resourceChangedMidDownloadRestartsTheWholeFileAtOnce() async throws {
        let total = 4 << 20
        let old = TestData.bytes(total, seed: 605), new = TestData.bytes(total, seed: 606)
        try await withTestServer { server in
            server.route("/file.bin") { request in
                let changed = request.index >= 2
                let (body, etag) = changed ? (new, "\"b\"") : (old, "\"a\"")
                let headers = [("ETag", etag), ("Accept-Ranges", "bytes")]
                let ifRange = request.header("If-Range")
                guard let range = byteRange(request.header("Range"), total: total), ifRange == nil || ifRange == etag else {
                    return ResponsePlan(status: 200, headers: headers, body: body)
                }
                // Version A is slow (2 s per 1 MiB segment), so its connections are still busy when B shows up.
                return ResponsePlan(
                    status: 206, headers: headers + [("Content-Range", "bytes \(range.first)-\(range.last)/\(total)")],
                    body: Array(body[range.first...range.last]), delivery: .throttled(bytesPerSecond: 512 << 10))
            }
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let result = try await box.run(["get", server.url("/file.bin"), "-o", destination,
                                                "--segments", "4", "--min-segment-size", "256K", "--json"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: new) == nil, "must hold version B only, never a mix")
                let names = try result.jsonEvents().map { $0["type"] as? String ?? "?" }
                #expect(names.contains("restarted"), "events: \(names)")

                let requests = server.requests("/file.bin")
                // Version A's requests: the first probe and the segments sent with its ETag.
                let ofA = requests.filter { $0.index == 0 || $0.header("If-Range") == "\"a\"" }
                let ranged = ofA.compactMap { $0.header("Range") }
                // Each segment but the first also asks for the 16 KiB before its start, to compare them.
                let planned = Set((0..<4).map { "bytes=\(max(0, $0 * total / 4 - 16384))-" })
                let starts = ranged.map { String($0.prefix { $0 != "-" }) + "-" }
                #expect(Set(starts).count == starts.count && Set(starts).isSubset(of: planned),
                        "after the 200 no connection may claim or steal more ranges of the old version; ranged requests: \(ranged)")
                // A segment's answer named another version than the probe's (as a load balancer's backends with
                // different ETags do): the restart is one plain request for B on one connection, which says why.
                // (A segment request already under way may still reach the server after it.)
                let probes = requests.filter { $0.header("Range") == "bytes=0-" && $0.header("If-Range") == nil }
                #expect(probes.count == 1, "one probe, for A: \(requests.map { $0.headers })")
                #expect(requests.filter { $0.header("Range") == nil }.count == 1, "\(requests.map { $0.headers })")
                let reasons = try result.jsonEvents().filter { $0["type"] as? String == "singleConnection" }
                #expect(reasons.count == 1, "\(result.stdout)")
            }
        }
    }
}

/// A full disk found by preallocation, before any byte is fetched. Needs root to mount a tmpfs.
@Suite(.enabled(if: Tmpfs.available, "needs permission to mount a tmpfs (root)"))
struct SegmentedFullDiskTests {
    @Test func preallocationOnAFullDiskExits6AndTheSameCommandFinishesWithRoom() async throws {
        let body = TestData.bytes(4 << 20, seed: 604)
        try await withTestServer { server in
            server.serve("/f", Resource(body: body, etag: "\"disk-seg\""))
            try await Sandbox.with { box in
                let disk = box.path("small")
                try #require(Tmpfs.mount(disk, size: "1m"))
                defer { Tmpfs.unmount(disk) }
                let target = disk + "/f.bin"
                let args = ["get", server.url("/f"), "-o", target, "--segments", "4", "--min-segment-size", "256K", "--quiet"]

                let full = try await box.run(args)
                #expect(full.exitCode == 6, "\(full)")
                #expect(full.stderrLines.count == 1, "exactly one line: \(full.stderr)")
                #expect(full.stderr.contains("not enough space"), "stderr: \(full.stderr)")
                #expect(!fileExists(target))
                #expect(box.records().count == 1, "the state is kept: \(box.records())")

                try #require(Tmpfs.remount(disk, size: "16m"))
                let again = try await box.run(args)
                #expect(again.exitCode == 0, "\(again)")
                #expect(contentMismatch(target, expected: body) == nil)
                #expect(!fileExists(target + ".haul-part"))
            }
        }
    }
}
