import Foundation
import HaulTestSupport
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
/// segment's first one, a takeover of part of a slow segment), while the requests already answered go on with the
/// old file. The boundaries' overlaps differ: the download starts over, and what is published is one version.
@Suite(.enabled(if: ExternalTools.nginxTestsEnabled, "needs nginx (apt-get install nginx-light; scripts/test installs it)"))
struct SegmentedReplacedFileTests {
    @Test func aFileReplacedKeepingItsETagIsNeverPublishedMixed() async throws {
        let size: Int64 = 8 << 20, quarter = size / 4, window = Int64(16 << 10)
        // The last two segments crawl (whether they ask for the bytes before their start or not); the first two finish
        // first and take over halves of them.
        let slow = [2 * quarter, 3 * quarter, 2 * quarter - window, 3 * quarter - window]
        try await withNginx(slowRate: "96k", throttledRate: "2m", slowStarts: slow) { nginx in
            let date = Date(timeIntervalSince1970: 1_709_424_000)
            let old = TestData.bytes(Int(size), seed: 621), new = TestData.bytes(Int(size), seed: 622)
            let served = nginx.documentRoot + "/ranges/v.bin"
            try nginx.put("ranges/v.bin", old)
            try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: served)
            try await Sandbox.with { box in
                let destination = box.path("v.bin")
                let run = try box.start(["get", nginx.url("/ranges/v.bin"), "-o", destination, "--segments", "4",
                                         "--min-segment-size", "256K", "--json"])
                // The file is split and its segments run: replace it as `cp alt tmp; touch -d; mv tmp` does. The slow
                // segments (2 MiB at 96 KiB/s) are far from done, so later requests see the new version.
                try await eventually("the download is split", timeout: .seconds(30)) {
                    run.stdoutSoFar().contains("\"segments\"")
                }
                try nginx.put("ranges/v.tmp", new)
                try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: nginx.documentRoot + "/ranges/v.tmp")
                #expect(rename(nginx.documentRoot + "/ranges/v.tmp", served) == 0)
                let result = try await run.wait(timeout: .seconds(120))
                #expect(result.exitCode == 0, "\(result.stderr)")
                let published = (try? Data(contentsOf: URL(fileURLWithPath: destination))).map { Array($0) }
                let restarts = try result.jsonEvents().filter { $0["type"] as? String == "restarted" }
                // Compared as a word, not as 8 MiB of bytes: a failure printed the whole array.
                let version = published == new ? "new" : published == old ? "old" : published.map { Self.versions($0, old, new) } ?? "nothing published"
                if version == "old" {
                    // On a starved machine every request (takeovers included) was answered before the replacement:
                    // the old version whole is right, and the case was not reached.
                    #expect(restarts.isEmpty, "\(result.stdout)")
                } else {
                    #expect(version == "new", "never a mix of the two versions: \(version)")
                    #expect(restarts.count >= 1, "\(result.stdout)")
                }
            }
        }
    }

    /// Which version each MiB of `bytes` is: `o` old, `n` new, `?` a mix.
    static func versions(_ bytes: [UInt8], _ old: [UInt8], _ new: [UInt8]) -> String {
        stride(from: 0, to: bytes.count, by: 1 << 20).map { start -> String in
            let end = min(bytes.count, start + (1 << 20))
            if end <= old.count, bytes[start..<end].elementsEqual(old[start..<end]) { return "o" }
            if end <= new.count, bytes[start..<end].elementsEqual(new[start..<end]) { return "n" }
            return "?"
        }.joined()
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
