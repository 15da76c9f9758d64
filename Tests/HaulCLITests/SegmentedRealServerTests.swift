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
