import Crypto
import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// A file replaced on the server while it is fetched, keeping its ETag (nginx's is made of size and modification
/// time): the requests after the change get the new version, the ones before the old. Two versions are never joined
/// in one published file, whichever request saw the change.
@Suite struct ChangedVersionTests {
    static let old = TestData.bytes(400_000, seed: 41)
    static let new = TestData.bytes(400_000, seed: 42)

    /// Serves `old` to the requests before `changeAt`, `new` to the others, all with one ETag; request 1 (the second
    /// segment's) crawls, so that the first connection finishes first and takes over half of what is left of it.
    static func serveChanging(_ server: TestServer, _ path: String, changeAt: Int) {
        server.route(path) { request in
            let resource = Resource(body: request.index < changeAt ? old : new, etag: "\"same\"")
            var plan = resource.response(to: request)
            if request.index == 1 { plan.delivery = .throttled(bytesPerSecond: 150_000) }
            return plan
        }
    }

    /// `changeAt` 1: the second segment's own first request sees the new version; 2: the takeover of half of the second
    /// segment does. Either way the boundary's overlap differs, and the download starts over (exactly the new version).
    @Test(arguments: [1, 2])
    func segmentsOfTwoVersionsAreNeverJoined(changeAt: Int) async throws {
        try await withHarness { server, engine, sandbox in
            Self.serveChanging(server, "/v", changeAt: changeAt)
            var options = try testOptions(server.url("/v"), .file(sandbox.path("v.bin")))
            options.segments = 2
            options.minSegmentSize = 16 * 1024
            let log = EventLog()
            try await engine.download(options, events: log.append)
            let published = sandbox.contents("v.bin")
            #expect(published == Self.new, "published \(published.map { Self.describe($0) } ?? "nothing")")
            #expect(log.restarts.count == 1, "\(log.restarts)")
            // Every request after the probe that starts past byte 0 asked for bytes before its start as well.
            let starts = server.requests("/v").dropFirst().compactMap { $0.header("Range") }
            #expect(starts.allSatisfy { !$0.hasPrefix("bytes=200000-") && !$0.hasPrefix("bytes=300000-") }, "\(starts)")
        }
    }

    /// Which version each 10,000 bytes of `bytes` are: `o` old, `n` new, `?` neither.
    static func describe(_ bytes: [UInt8]) -> String {
        stride(from: 0, to: bytes.count, by: 10_000).map { start -> String in
            let end = min(bytes.count, start + 10_000)
            if bytes[start..<end].elementsEqual(old[start..<min(end, old.count)]) { return "o" }
            if bytes[start..<end].elementsEqual(new[start..<min(end, new.count)]) { return "n" }
            return "?"
        }.joined()
    }

    /// The held bytes were fetched with one `Repr-Digest`; the server now announces another for the same ETag (the
    /// change lies before the overlap the resume compares): a changed representation, so the download starts over
    /// at once rather than finishing and failing the digest check.
    @Test func aResumedAnswerWithAnotherDigestStartsOver() async throws {
        try await withHarness { server, engine, sandbox in
            let first = TestData.bytes(600_000, seed: 43)
            var second = first
            second[10] ^= 0xFF
            var resource = Resource(body: first, etag: "\"d\"")
            resource.extraHeaders = [("Repr-Digest", Self.digestField(first))]
            resource.faults.throttleBytesPerSecond = 1 << 20
            server.serve("/d", resource)
            var options = try testOptions(server.url("/d"), .file(sandbox.path("d.bin")))
            options.progressInterval = .milliseconds(10)
            options.checkpointInterval = .milliseconds(10)
            let box = TaskBox()
            let cut = EventLog { event in
                if case .progress(let progress) = event, progress.bytes >= 200_000 { box.cancel() }
            }
            let interrupted = options
            let task = Task { try await engine.download(interrupted, events: cut.append) }
            box.set(task)
            await expectHaulError(.interrupted) { _ = try await task.value }
            #expect(sandbox.records().first?.reprDigest == "sha256:" + sha256Hex(first))

            var changed = Resource(body: second, etag: "\"d\"")
            changed.extraHeaders = [("Repr-Digest", Self.digestField(second))]
            server.serve("/d", changed)
            let log = EventLog()
            try await engine.download(options, events: log.append)
            #expect(sandbox.contents("d.bin") == second)
            #expect(log.restarts.count == 1, "\(log.restarts)")
        }
    }

    static func digestField(_ body: [UInt8]) -> String {
        "sha-256=:\(Data(SHA256.hash(data: body)).base64EncodedString()):"
    }
}
