import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// Segmented downloads from servers that are legal but awkward: ranges answered with less than asked (a cap on range
/// sizes, RFC 9110 §14.4), and load balancers whose backends stamp the file with different ETags. Compared byte for
/// byte.
@Suite struct SegmentedServerQuirksTests {
    let body = TestData.bytes(1 << 20, seed: 41)
    static let disagree = "the server's segments disagree about the file's version"

    func options(_ url: String, _ path: String, segments: Int? = 4) throws -> DownloadOptions {
        var options = try testOptions(url, .file(path))
        options.segments = segments
        options.minSegmentSize = 128 * 1024
        return options
    }

    func singleConnectionReasons(_ log: EventLog) -> [String] {
        log.events.compactMap { if case .singleConnection(let why) = $0 { return why } else { return nil } }
    }

    // MARK: Ranges answered with less than asked

    /// Caps below the 16 KiB asked for before a segment's first byte, below the 64 KiB a continuation asks for
    /// again, and above both, none below the smallest segment allowed (here 2 KiB): every segment completes from
    /// capped answers, over several connections.
    @Test(arguments: [3_000, 10_000, 40_000, 100_000])
    func cappedRangesCompleteSegmented(_ cap: Int) async throws {
        try await withHarness(stallTimeout: .seconds(120)) { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"c\"")
            resource.faults.maxRangeLength = cap
            server.serve("/f", resource)
            let log = EventLog()
            var options = try options(server.url("/f"), sandbox.path("f"))
            options.minSegmentSize = 2_048
            try await engine.download(options, events: log.append)
            #expect(sandbox.contents("f") == body)
            #expect(log.restarts.isEmpty, "\(log.restarts)")
            #expect(singleConnectionReasons(log).isEmpty)
            let requests = server.requests("/f")
            // Split: closed ranges, asked of the segments' starts, each answered with at most the cap.
            let closed = requests.filter { $0.header("Range").map { !$0.hasSuffix("-") } ?? false }
            #expect(closed.count >= body.count / cap, "\(requests.count) requests")
            #expect(requests.allSatisfy { $0.bytesSent <= cap })
            #expect(requests.allSatisfy { $0.header("Range") != nil }, "never fell back to one plain request")
        }
    }

    /// Without a strong ETag (Last-Modified only), the bytes before each request's start are what ties the answers to
    /// one version: a capped answer still compares what came, and the file is exact.
    @Test func cappedRangesWithoutAnETagCompleteExactly() async throws {
        try await withHarness(stallTimeout: .seconds(120)) { server, engine, sandbox in
            var resource = Resource(body: body, lastModified: "Tue, 01 Jan 2030 00:00:00 GMT")
            resource.faults.maxRangeLength = 20_000
            server.serve("/f", resource)
            var options = try options(server.url("/f"), sandbox.path("f"))
            options.minSegmentSize = 2_048
            try await engine.download(options)
            #expect(sandbox.contents("f") == body)
        }
    }

    /// A cap below the smallest segment (the default 1 MiB, or the one asked for), with or without validators, asked
    /// for segments or split by Haul itself: splitting cannot pay, so the download starts over once, on one
    /// connection, with one plain request that no cap limits, and says why. Every request after that one is plain.
    @Test(arguments: [(10_000, 4 as Int?, true), (300_000, 4, false), (10_000, nil, true)])
    func aCapBelowTheSmallestSegmentFetchesTheFileWithOnePlainRequest(_ cap: Int, _ segments: Int?, _ etag: Bool) async throws {
        try await withHarness(stallTimeout: .seconds(120)) { server, engine, sandbox in
            // Haul splits a file of 16 MiB or more by itself.
            let file = segments == nil ? TestData.bytes(16 << 20, seed: 45) : body
            var resource = etag ? Resource(body: file, etag: "\"c\"") : Resource(body: file, lastModified: "Tue, 01 Jan 2030 00:00:00 GMT")
            resource.faults.maxRangeLength = cap
            server.serve("/f", resource)
            let log = EventLog()
            var options = try options(server.url("/f"), sandbox.path("f"), segments: segments)
            options.minSegmentSize = segments == nil ? 1 << 20 : 512 * 1024
            try await engine.download(options, events: log.append)
            #expect(sandbox.contents("f") == file)
            #expect(log.restarts.count == 1 && log.restarts.first?.contains("too little to split") == true, "\(log.restarts) \(singleConnectionReasons(log))")
            #expect(singleConnectionReasons(log).count == 1 && singleConnectionReasons(log).first?.contains("at most") == true)
            let requests = server.requests("/f")
            let plain = requests.filter { $0.header("Range") == nil }
            #expect(plain.count == 1, "\(requests.map { $0.header("Range") ?? "-" })")
            #expect(plain.first?.bytesSent == file.count)
            #expect(sandbox.records().first?.segments == nil)
        }
    }

    // MARK: Backends that disagree about the file's version

    /// Same bytes, different ETags (nginx on two hosts): whether the backends honour `If-Range` (a 200 of the other
    /// version) or not (a 206 with the other ETag), the download starts over once on one connection, says why, and
    /// ends with the right bytes; asked for segments or not.
    @Test(arguments: [(false, 4), (true, 4), (false, nil), (true, nil)] as [(Bool, Int?)])
    func sameBytesDifferentETagsCompleteOverOneConnection(_ ignoresIfRange: Bool, _ segments: Int?) async throws {
        try await withHarness(stallTimeout: .seconds(120)) { server, engine, sandbox in
            // Haul splits a file of 16 MiB or more by itself.
            let file = segments == nil ? TestData.bytes(16 << 20, seed: 44) : body
            var resource = Resource(body: file, etag: "\"a\"")
            resource.faults.backends = [Backend(etag: "\"a\""), Backend(etag: "\"b\"")]
            resource.faults.ignoreIfRange = ignoresIfRange
            server.serve("/f", resource)
            let log = EventLog()
            try await engine.download(try options(server.url("/f"), sandbox.path("f"), segments: segments), events: log.append)
            #expect(sandbox.contents("f") == file)
            #expect(log.restarts.count == 1, "\(log.restarts)")
            #expect(log.restarts.first?.contains("different versions") == true, "\(log.restarts)")
            #expect(singleConnectionReasons(log) == [Self.disagree])
            // One plain request, the one connection's. Not necessarily the last the server logged: a segment's
            // request sent before the segments were stopped may reach it later (its answer is dropped; the
            // segments' task group has ended before the plain request is sent).
            let requests = server.requests("/f")
            #expect(requests.filter { $0.header("Range") == nil }.count == 1, "\(requests.map { $0.header("Range") ?? "-" })")
            #expect(sandbox.records().first?.segments == nil)
        }
    }

    /// Different bytes and different ETags on the two backends: the file is one backend's bytes whole, never a mix.
    @Test(arguments: [false, true])
    func differentBytesAreNeverMixed(_ ignoresIfRange: Bool) async throws {
        try await withHarness(stallTimeout: .seconds(120)) { server, engine, sandbox in
            let other = TestData.bytes(body.count, seed: 42)
            var resource = Resource(body: body, etag: "\"a\"")
            resource.faults.backends = [Backend(etag: "\"a\""), Backend(etag: "\"b\"", body: other)]
            resource.faults.ignoreIfRange = ignoresIfRange
            server.serve("/f", resource)
            let log = EventLog()
            do {
                try await engine.download(try options(server.url("/f"), sandbox.path("f")), events: log.append)
                let got = sandbox.contents("f")
                #expect(got == body || got == other, "a mixed file")
                #expect(singleConnectionReasons(log) == [Self.disagree])
            } catch {
                #expect(!sandbox.exists("f"), "a failed download left a file at the destination: \(error)")
            }
        }
    }

    /// One connection whose response drops, behind backends with different bytes: the bytes of version A are
    /// continued only by a request tied to A (`If-Range`), and an answer of B's is never appended to them.
    @Test(arguments: [false, true])
    func aResumeNeverContinuesOneVersionWithAnother(_ ignoresIfRange: Bool) async throws {
        try await withHarness(stallTimeout: .seconds(120)) { server, engine, sandbox in
            let other = TestData.bytes(body.count, seed: 43)
            var resource = Resource(body: body, etag: "\"a\"")
            resource.faults.backends = [Backend(etag: "\"a\""), Backend(etag: "\"b\"", body: other)]
            resource.faults.ignoreIfRange = ignoresIfRange
            resource.faults.dropAfterBytes = 300_000
            resource.faults.dropOnRequests = 1
            server.serve("/f", resource)
            let log = EventLog()
            try await engine.download(try options(server.url("/f"), sandbox.path("f"), segments: 1), events: log.append)
            let got = sandbox.contents("f")
            #expect(got == body || got == other, "a mixed file")
            let requests = server.requests("/f")
            let resume = try #require(requests.dropFirst().first)
            #expect(resume.header("If-Range") == "\"a\"")
            #expect(resume.header("Range") != nil)
        }
    }
}
