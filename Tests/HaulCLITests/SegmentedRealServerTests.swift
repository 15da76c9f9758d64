import Foundation
import HaulTestSupport
import Synchronization
import Testing

/// Segmented downloads against nginx: real Range, If-Range and `limit_rate`.
@Suite(.enabled(if: ExternalTools.nginxTestsEnabled, "needs nginx (apt-get install nginx-light; scripts/test installs it)"))
struct SegmentedNginxTests {
    /// The access log lines for `uri` with `status` (nginx writes a line when a request ends: wait, bounded, for `count`).
    func loggedResponses(_ log: () -> [String], _ uri: String, status: Int, atLeast count: Int) async -> [String] {
        let prefix = "GET \(uri) \(status) "
        try? await eventually("nginx logs \(count) × `\(prefix)…`", timeout: .seconds(5)) {
            log().filter { $0.hasPrefix(prefix) }.count >= count
        }
        return log().filter { $0.hasPrefix(prefix) }
    }

    @Test func eightSegmentsOf32MiBAreExactAndUseRangeRequests() async throws {
        try await withNginx { nginx in
            let body = TestData.bytes(32 << 20, seed: 611)
            try nginx.put("big.bin", body)
            try await Sandbox.with { box in
                let destination = box.path("big.bin")
                let result = try await box.run(["get", nginx.url("/big.bin"), "-o", destination, "--segments", "8", "--quiet"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
                let partials = await loggedResponses(nginx.accessLog, "/big.bin", status: 206, atLeast: 8)
                #expect(partials.count >= 8, "expected ≥ 8 206 responses; log: \(nginx.accessLog())")
                #expect(!nginx.accessLog().contains { $0.hasPrefix("GET /big.bin 200 ") }, "log: \(nginx.accessLog())")
                let ranged = partials.filter { !$0.contains("range=\"bytes=0-\"") }
                #expect(!ranged.isEmpty && ranged.allSatisfy { !$0.contains("if_range=\"\" sent=") },
                        "segment requests carry If-Range: \(ranged)")
            }
        }
    }

    @Test func fourSegmentsThrottledPerConnectionAreExact() async throws {
        try await withNginx(throttledRate: "8m") { nginx in
            let body = TestData.bytes(16 << 20, seed: 612)
            try nginx.put("throttled/file.bin", body)
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let result = try await box.run(
                    ["get", nginx.url("/throttled/file.bin"), "-o", destination, "--segments", "4", "--quiet"],
                    timeout: .seconds(30))
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
                let partials = await loggedResponses(nginx.accessLog, "/throttled/file.bin", status: 206, atLeast: 4)
                #expect(partials.count >= 4, "expected ≥ 4 206 responses; log: \(nginx.accessLog())")
            }
        }
    }
}

/// A file replaced on nginx while a segmented download runs, with the same size and modification time, so the same
/// ETag (`"mtime-size"`): `If-Range` lets the new version through to every request sent after the replacement (a
/// takeover of part of a slow segment, or a segment's first request not yet answered), while the requests already
/// answered go on with the old file. The boundaries' overlaps differ: the download starts over, and what is
/// published is one version.
@Suite(.enabled(if: ExternalTools.nginxTestsEnabled, "needs nginx (apt-get install nginx-light; scripts/test installs it)"))
struct SegmentedReplacedFileTests {
    @Test func aFileReplacedKeepingItsETagIsNeverPublishedMixed() async throws {
        let size: Int64 = 8 << 20, quarter = size / 4, window = Int64(16 << 10)
        // The last two segments crawl (whether they ask for the bytes before their start or not); the first two (2 MiB
        // at 1 MiB/s) finish first and only then take over halves of them.
        let slow = [2 * quarter, 3 * quarter, 2 * quarter - window, 3 * quarter - window]
        try await withNginx(slowRate: "96k", throttledRate: "1m", slowStarts: slow) { nginx in
            let date = Date(timeIntervalSince1970: 1_709_424_000)
            let old = TestData.bytes(Int(size), seed: 621), new = TestData.bytes(Int(size), seed: 622)
            let served = nginx.documentRoot + "/ranges/v.bin", staged = nginx.documentRoot + "/ranges/v.tmp"
            try nginx.put("ranges/v.bin", old)
            try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: served)
            // The new version is staged as `cp alt tmp; touch -d` does, so the replacement is one rename (`mv tmp`).
            try nginx.put("ranges/v.tmp", new)
            try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: staged)
            try await Sandbox.with { box in
                let destination = box.path("v.bin")
                let run = try box.start(["get", nginx.url("/ranges/v.bin"), "-o", destination, "--segments", "4",
                                         "--min-segment-size", "256K", "--json"])
                // Replaced (on a thread of its own: a starved pool would see the moment late) once a progress event
                // shows every segment's first answer under way and none complete: no connection has taken over part
                // of another yet, so every takeover (and any request still unanswered) is sent after the replacement
                // and finds the new version.
                let renamed = Mutex<Int32?>(nil)
                try await actWhen(run, "the four segments hold bytes and none is complete", timeout: .seconds(60), {
                    guard let segments = Self.lastProgressSegments(run.stdoutSoFar()) else { return false }
                    return segments.count == 4 && segments.allSatisfy { $0.done > 0 && !$0.isComplete }
                }) {
                    let result = rename(staged, served)
                    renamed.withLock { $0 = result == 0 ? 0 : errno }
                }
                #expect(renamed.withLock { $0 } == 0, "rename failed: errno \(String(describing: renamed.withLock { $0 }))")
                let result = try await run.wait(timeout: .seconds(120))
                #expect(result.exitCode == 0, "\(result.stderr)")
                let published = (try? Data(contentsOf: URL(fileURLWithPath: destination))).map { Array($0) }
                // Compared outside #expect (which would print both operands: 8 MiB each) and described in words.
                let isNew = published == new
                #expect(isNew, "never a mix of the two versions, and the new one once replaced: \(Self.describe(published, old: old, new: new)); nginx: \(nginx.accessLog())")
                let restarts = try result.jsonEvents().filter { $0["type"] as? String == "restarted" }
                #expect(restarts.count >= 1, "requests answered after the replacement found other bytes at the boundaries: \(result.stdout.suffix(2000))")
            }
        }
    }

    /// The segments of the last progress event in `stdout` (`--json` lines) that carries them.
    static func lastProgressSegments(_ stdout: String) -> [SegmentState]? {
        for line in stdout.split(separator: "\n").reversed() where line.contains("\"segments\"") {
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                  object["type"] as? String == "progress" else { continue }
            return SegmentState.list(object)
        }
        return nil
    }

    /// What `bytes` are, in a line: their size, the first offset where they differ from each version, and which
    /// version each stretch of 64 KiB matches (`old`, `new`, `both`, `neither`), runs merged.
    static func describe(_ bytes: [UInt8]?, old: [UInt8], new: [UInt8]) -> String {
        guard let bytes else { return "nothing published" }
        func firstDifference(_ other: [UInt8]) -> String {
            let common = min(bytes.count, other.count)
            let index = bytes.withUnsafeBufferPointer { a in
                other.withUnsafeBufferPointer { b in (0..<common).first { a[$0] != b[$0] } }
            }
            return index.map { "at byte \($0)" } ?? (bytes.count == other.count ? "nowhere" : "past byte \(common) (length)")
        }
        let block = 64 << 10
        var runs: [(kind: String, start: Int, end: Int)] = []
        for start in stride(from: 0, to: bytes.count, by: block) {
            let end = min(bytes.count, start + block)
            let isOld = end <= old.count && bytes[start..<end].elementsEqual(old[start..<end])
            let isNew = end <= new.count && bytes[start..<end].elementsEqual(new[start..<end])
            let kind = isOld && isNew ? "both" : isOld ? "old" : isNew ? "new" : "neither"
            if let last = runs.last, last.kind == kind {
                runs[runs.count - 1].end = end
            } else {
                runs.append((kind, start, end))
            }
        }
        let shown = runs.prefix(12).map { "\($0.start)..<\($0.end) \($0.kind)" }.joined(separator: ", ")
        let more = runs.count > 12 ? ", and \(runs.count - 12) more stretches" : ""
        return "\(bytes.count) bytes published (each version \(old.count)); differs from new \(firstDifference(new)), "
            + "from old \(firstDifference(old)); by 64 KiB: \(shown)\(more)"
    }
}

/// Python's http.server ignores Range: `--segments` falls back to one connection and says so.
@Suite(.enabled(if: ExternalTools.pythonTestsEnabled, "needs python3 (apt-get install python3; scripts/test installs it)"))
struct SegmentedPythonTests {
    @Test func noRangeSupportFallsBackToOneConnectionAndSaysSo() async throws {
        try await withPythonServer { python in
            let body = TestData.bytes(8 << 20, seed: 613)
            try python.put("file.bin", body)
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let result = try await box.run(["get", python.url("/file.bin"), "-o", destination, "--segments", "4", "--json"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
                let events = try result.jsonEvents()
                let single = events.filter { $0["type"] as? String == "singleConnection" }
                #expect(single.count == 1, "events: \(result.stdout)")
                let reason = single.first?["reason"] as? String ?? ""
                #expect(reason.contains("range"), "the reason names the missing range support: \(reason)")
                #expect(!events.contains { $0["segments"] != nil }, "no segments without range support")
                #expect(events.last?["type"] as? String == "finished", "events: \(result.stdout)")
                #expect(!fileExists(destination + ".haul-part"))
            }
        }
    }
}
