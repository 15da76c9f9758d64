import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// Downloads from one host share its connections: a small download that starts while a segmented one holds every
/// connection gets one back at once, instead of waiting unseen for a segment to end.
@Suite struct ConnectionSharingTests {
    @Test func aSmallDownloadGetsAConnectionFromASegmentedOneThatHoldsThemAll() async throws {
        try await withHarness { server, engine, sandbox in
            // 8 segments of 2 MiB at 100 KB/s each (20 s: more than socket buffers hold while the test process is
            // starved, as it can be for seconds while the whole suite starts); the small file is 50 KB at that pace.
            let big = TestData.bytes(16 << 20, seed: 61)
            var slow = Resource(body: big, etag: "\"big\"")
            slow.faults.throttleBytesPerSecond = 100_000
            server.serve("/big", slow)
            let small = TestData.bytes(50_000, seed: 62)
            var paced = Resource(body: small, etag: "\"small\"")
            paced.faults.throttleBytesPerSecond = 100_000
            server.serve("/small", paced)

            let bigLog = EventLog()
            var bigOptions = try testOptions(server.url("/big"), .file(sandbox.path("big")))
            bigOptions.segments = 8
            bigOptions.minSegmentSize = 512 * 1024
            bigOptions.progressInterval = .milliseconds(50)
            let bigDownload = Task { try await engine.download(bigOptions, events: bigLog.append) }
            // Every connection busy: eight segment requests arrived.
            try await waitFor("all eight connections of the big download") {
                server.requests("/big").count >= 8
            }

            let smallLog = EventLog()
            var smallOptions = try testOptions(server.url("/small"), .file(sandbox.path("small")))
            smallOptions.segments = 1
            let result = try await engine.download(smallOptions, events: smallLog.append)
            // What the big download had when the small one was done: no segment of it had ended, so the small
            // one's connection came from a segment that gave its connection back, not from one that finished.
            let bigProgress = bigLog.events.compactMap { event -> DownloadProgress? in
                if case .progress(let progress) = event { return progress } else { return nil }
            }.last
            #expect(result.bytes == Int64(small.count))
            #expect(sandbox.contents("small") == small)
            let segments = bigProgress?.segments ?? []
            #expect(!segments.isEmpty)
            #expect(segments.allSatisfy { $0.done < $0.end - $0.start }, "a segment ended first: \(segments)")
            let waited = smallLog.events.contains { if case .waitingForConnection = $0 { return true } else { return false } }
            #expect(waited, "the small download said it waited for a connection")

            // The big one takes its connections back and ends exact.
            _ = try await bigDownload.value
            #expect(sandbox.contents("big") == big)
        }
    }
}
