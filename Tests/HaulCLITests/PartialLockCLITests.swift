import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Two `haul` processes of one user whose HAUL_HOMEs differ share no destination locks. When both download to one
/// path, the second must say the download is already running (exit 8) and leave the first's partial file alone:
/// it used to remove it as a stale file of another program and succeed, and the first, having fetched everything,
/// then failed ("was replaced by another program").
@Suite struct PartialLockCLITests {
    @Test func aSecondHomesDownloadToTheSamePathIsBusyAndLeavesTheFirstsWork() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(3 << 20, seed: 7_601)
            var stalling = Resource(body: body, etag: "\"g\"")
            // The first request stops after 512 KiB and holds its connection: the first download waits for as long
            // as the test needs, its partial file open.
            stalling.faults.stallAfterBytes = 512 << 10
            stalling.faults.stallOnRequests = 1
            server.serve("/g.bin", stalling)
            try await Sandbox.with { box in
                let url = server.url("/g.bin"), other = box.root + "/other-home"
                try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
                let first = try box.start(["get", url, "-o", "g.bin", "--stall-timeout", "300"])
                try await eventually("the first download writes g.bin.haul-part", timeout: .seconds(60)) {
                    guard first.isRunning else { throw HarnessError("the first haul ended: \(first.stderrSoFar())") }
                    return (fileSize(box.path("g.bin.haul-part")) ?? 0) >= 512 << 10
                }
                let held = readBytes(box.path("g.bin.haul-part"))
                let attempts: [[String]] = [
                    ["get", url, "-o", "g.bin"],
                    ["get", url, "-o", "g.bin", "--overwrite"],
                    ["get", url, "-o", "g.bin", "--segments", "4", "--min-segment-size", "256K"],
                    ["get", server.url("/g.bin?again"), "-o", "g.bin"],
                ]
                for arguments in attempts {
                    let second = try await box.start(arguments, environment: ["HAUL_HOME": other]).wait()
                    #expect(second.exitCode == 8, "\(arguments): \(second.stderr)")
                    #expect(second.stderrLines.count == 1 && second.stderr.contains("already"), "\(arguments): \(second.stderr)")
                }
                #expect(first.isRunning, "the first download goes on")
                #expect(readBytes(box.path("g.bin.haul-part")) == held, "its partial file is untouched")
                #expect(box.workContents() == ["g.bin.haul-part"])
                let otherRecords = (try? FileManager.default.contentsOfDirectory(atPath: other + "/transfers")) ?? []
                #expect(otherRecords.filter { $0.hasSuffix(".json") }.isEmpty, "the second home keeps no record: \(otherRecords)")
                #expect(server.requests("/g.bin").count == 1, "the second download sent no request")

                // The first one's work is intact: stopped and run again, it continues from its bytes.
                first.signal(SIGTERM)
                #expect(try await first.wait().exitCode == 130)
                let again = try await box.run(["get", url, "-o", "g.bin"], timeout: .seconds(60))
                #expect(again.exitCode == 0, "\(again.stderr)")
                #expect(contentMismatch(box.path("g.bin"), expected: body) == nil)
                let resumed = server.requests("/g.bin").last?.header("Range")
                #expect(resumed != nil && resumed != "bytes=0-", "continued, not started over: \(resumed ?? "no Range")")
            }
        }
    }
}
