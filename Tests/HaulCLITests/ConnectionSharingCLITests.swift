import Foundation
import HaulTestSupport
import Testing

/// `haul get -j 2` with a large segmented download and a small one from the same throttled nginx: the small one
/// gets a connection of its own at once and finishes in about the time it needs alone, instead of waiting for a
/// segment of the large one to end.
@Suite(.enabled(if: ExternalTools.nginxTestsEnabled, "nginx is not installed (in CI this fails: install nginx-light)"))
struct ConnectionSharingCLITests {
    @Test func aSmallDownloadIsNotStarvedByALargeSegmentedOneFromTheSameHost() async throws {
        // Each connection gets 256 KB/s: 8 segments of 1 MiB take 4 s each, the small file a tenth of that.
        try await withNginx(throttledRate: "256k") { nginx in
            let big = TestData.bytes(8 << 20, seed: 71)
            let small = TestData.bytes(100_000, seed: 72)
            try nginx.put("throttled/big.bin", big)
            try nginx.put("throttled/small.bin", small)
            try await Sandbox.with { box in
                let out = box.path("out")
                let bigURL = nginx.url("/throttled/big.bin"), smallURL = nginx.url("/throttled/small.bin")
                let result = try await box.run(
                    ["get", bigURL, smallURL, "-j", "2", "--segments", "8", "--dir", out, "--json"], timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(out + "/big.bin", expected: big) == nil)
                #expect(contentMismatch(out + "/small.bin", expected: small) == nil)

                let events = try result.jsonEvents()
                var idOf: [String: String] = [:]
                for event in events where event["type"] as? String == "added" {
                    let task = event["task"] as? [String: Any]
                    if let id = task?["id"] as? String, let url = task?["url"] as? String { idOf[url] = id }
                }
                let bigID = try #require(idOf[bigURL]), smallID = try #require(idOf[smallURL])
                // Where the large download was when the small one finished: far from done (before the fix, the
                // small one waited for a segment to end, which at one pace for all is when the large one is done).
                var bigBytes = 0
                var bigAtSmallEnd: Int?
                for event in events {
                    let id = event["id"] as? String ?? (event["task"] as? [String: Any])?["id"] as? String
                    if id == bigID, event["type"] as? String == "progress", let bytes = (event["bytes"] as? NSNumber)?.intValue {
                        bigBytes = bytes
                    }
                    if id == smallID, event["type"] as? String == "finished" { bigAtSmallEnd = bigBytes }
                }
                let atEnd = try #require(bigAtSmallEnd, "the small download's finished event: \(result.stdout)")
                #expect(atEnd < big.count / 2, "the large download had \(atEnd) of \(big.count) bytes when the small one finished")
                // nginx writes a log line when a response ends: every segment of the large file was a 206.
                try? await eventually("nginx logs the segments", timeout: .seconds(5)) {
                    nginx.accessLog().filter { $0.hasPrefix("GET /throttled/big.bin 206 ") }.count >= 8
                }
                let partials = nginx.accessLog().filter { $0.hasPrefix("GET /throttled/big.bin 206 ") }
                #expect(partials.count >= 8, "the large download used several connections: \(nginx.accessLog())")
            }
        }
    }

    /// The same in the daemon: a small task added while a large segmented one holds every connection to the host
    /// ends while the large one is far from done.
    @Test func aDaemonSessionSharesTheHostsConnectionsToo() async throws {
        // 32 KiB/s per connection: a segment of 1 MiB takes 32 s, longer than the test process may be starved while
        // the whole suite starts, so no segment can end whole before the small task has even been added.
        try await withNginx(throttledRate: "32k") { nginx in
            let big = TestData.bytes(8 << 20, seed: 73)
            let small = TestData.bytes(100_000, seed: 74)
            try nginx.put("throttled/big.bin", big)
            try nginx.put("throttled/small.bin", small)
            try await Sandbox.with { box in
                let first = try await box.run(["add", nginx.url("/throttled/big.bin"), "-o", "big.bin", "--segments", "8"])
                #expect(first.exitCode == 0, "\(first)")
                let bigID = try #require(first.stdoutLines.first)
                // The large download has split the file (its segment requests are out) before the small one comes.
                try await eventuallyAsync("the large task to run with bytes", timeout: .seconds(30)) {
                    let tasks = try await box.run(["ls", "--json", "--no-autostart"]).jsonEvents()
                    let task = tasks.first { $0["id"] as? String == bigID }
                    return ((task?["bytes"] as? NSNumber)?.intValue ?? 0) > 0
                }
                let second = try await box.run(["add", nginx.url("/throttled/small.bin"), "-o", "small.bin"])
                #expect(second.exitCode == 0, "\(second)")
                let smallID = try #require(second.stdoutLines.first)
                let waitedSmall = try await box.run(["wait", smallID, "--no-autostart"], timeout: .seconds(60))
                #expect(waitedSmall.exitCode == 0, "\(waitedSmall)")
                #expect(contentMismatch(box.path("small.bin"), expected: small) == nil)
                let waited = try await box.run(["wait", bigID, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited)")
                #expect(contentMismatch(box.path("big.bin"), expected: big) == nil)
                // nginx logs each response as it ends. Before the small file's response ended, no segment of the
                // large one had ended whole: its connection came from a segment that gave one back (logged with
                // fewer bytes than its range), not from one that finished. Independent of how loaded the machine is.
                try? await eventually("nginx logs both files", timeout: .seconds(5)) {
                    nginx.accessLog().contains { $0.hasPrefix("GET /throttled/small.bin ") }
                }
                let log = nginx.accessLog()
                let smallEnd = try #require(log.firstIndex { $0.hasPrefix("GET /throttled/small.bin ") }, "\(log)")
                let wholeSegments = log[..<smallEnd].filter { line in
                    guard line.hasPrefix("GET /throttled/big.bin 206 "), let range = Self.closedRange(line),
                          let sent = Self.sent(line) else { return false }
                    return sent == range.upperBound - range.lowerBound + 1
                }
                #expect(wholeSegments.isEmpty, "segments that ended whole before the small file: \(wholeSegments)")
            }
        }
    }

    /// `a...b` of a log line's `range="bytes=a-b"`, when the range is closed.
    static func closedRange(_ line: String) -> ClosedRange<Int>? {
        guard let start = line.range(of: "range=\"bytes=") else { return nil }
        let rest = line[start.upperBound...].prefix { $0 != "\"" }
        let parts = rest.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = Int(parts[0]), let last = Int(parts[1]), first <= last else { return nil }
        return first...last
    }

    /// The body bytes a log line says were sent.
    static func sent(_ line: String) -> Int? {
        guard let start = line.range(of: "sent=") else { return nil }
        return Int(line[start.upperBound...].prefix { $0.isNumber })
    }
}
