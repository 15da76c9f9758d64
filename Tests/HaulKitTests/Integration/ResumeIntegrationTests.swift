import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// Downloads through the fault-injecting server, comparing bytes exactly.
@Suite struct ResumeIntegrationTests {
    let body = TestData.bytes(300_000, seed: 7)

    @Test func plainDownloadIsExactAndSecondRunNeedsNoRequest() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: body, etag: "\"a1\""))
            let result = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))))
            #expect(sandbox.contents("f.bin") == body)
            #expect(result.bytes == Int64(body.count))
            #expect(sandbox.listing() == ["f.bin"])
            #expect(sandbox.records().first?.state == .finished)

            let again = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))))
            #expect(again.alreadyComplete)
            #expect(server.requests("/f").count == 1)
        }
    }

    @Test func droppedConnectionResumesWithRangeAndIfRange() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"a1\"")
            resource.faults.dropAfterBytes = 100_000
            resource.faults.dropOnRequests = 1
            server.serve("/f", resource)
            let log = EventLog()
            try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))), events: log.append)
            #expect(sandbox.contents("f.bin") == body)
            let requests = server.requests("/f")
            #expect(requests.count == 2)
            #expect(requests[0].header("Range") == "bytes=0-")
            let range = try #require(requests[1].header("Range"))
            let start = try #require(Int(range.dropFirst("bytes=".count).dropLast()))
            #expect(start > 0 && start <= 100_000)
            #expect(requests[1].header("If-Range") == "\"a1\"")
            #expect(requests[1].bytesSent == body.count - start)
            #expect(log.retries.count == 1)
            #expect(log.restarts.isEmpty)
        }
    }

    @Test func serverIgnoringRangeRestartsFromZeroNeverAppends() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"a1\"")
            resource.faults.dropAfterBytes = 100_000
            resource.faults.dropOnRequests = 1
            resource.faults.ignoreRange = true
            server.serve("/f", resource)
            let log = EventLog()
            try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))), events: log.append)
            #expect(sandbox.contents("f.bin") == body)
            #expect(server.requests("/f")[1].header("Range") != nil)
            #expect(log.restarts.count == 1)
        }
    }

    @Test func changedResourceWithStrongETagIsNeverMixed() async throws {
        try await withHarness { server, engine, sandbox in
            var first = Resource(body: body, etag: "\"v1\"")
            first.faults.dropAfterBytes = 100_000
            first.faults.dropOnRequests = 1
            server.serve("/f", first)
            let changed = TestData.bytes(body.count, seed: 99)
            let log = EventLog { event in
                if case .retrying = event { server.serve("/f", Resource(body: changed, etag: "\"v2\"")) }
            }
            try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))), events: log.append)
            #expect(sandbox.contents("f.bin") == changed)
            #expect(server.requests("/f")[1].header("If-Range") == "\"v1\"")
        }
    }

    @Test(arguments: [nil, "W/\"weak\""] as [String?])
    func changedResourceWithoutStrongValidatorIsCaughtByOverlap(_ etag: String?) async throws {
        try await withHarness { server, engine, sandbox in
            var first = Resource(body: body, etag: etag)
            first.faults.dropAfterBytes = 150_000
            first.faults.dropOnRequests = 1
            server.serve("/f", first)
            let changed = TestData.bytes(body.count, seed: 1234)   // same length, other bytes
            let log = EventLog { event in
                if case .retrying = event { server.serve("/f", Resource(body: changed, etag: etag.map { _ in "W/\"other\"" })) }
            }
            try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))), events: log.append)
            #expect(sandbox.contents("f.bin") == changed)
            #expect(log.restarts.count == 1)
            let second = server.requests("/f")[1]
            #expect(second.header("If-Range") == nil)
            let start = try #require(second.header("Range").flatMap { Int($0.dropFirst("bytes=".count).dropLast()) })
            #expect(start < 150_000)
        }
    }

    @Test func unchangedResourceWithoutValidatorsResumesAfterOverlap() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body)
            resource.faults.dropAfterBytes = 150_000
            resource.faults.dropOnRequests = 1
            server.serve("/f", resource)
            let log = EventLog()
            try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))), events: log.append)
            #expect(sandbox.contents("f.bin") == body)
            #expect(log.restarts.isEmpty)
            let second = server.requests("/f")[1]
            let start = try #require(second.header("Range").flatMap { Int($0.dropFirst("bytes=".count).dropLast()) })
            #expect(second.bytesSent == body.count - start)
            #expect(start + Int(ResumePolicy.overlapLength) <= 150_000)
        }
    }

    @Test func wrongContentRangeStartIsRejectedWithoutWriting() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"a1\"")
            resource.faults.dropAfterBytes = 100_000
            resource.faults.dropOnRequests = 1
            resource.faults.contentRangeStartShift = 10
            server.serve("/f", resource)
            let log = EventLog()
            try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))), events: log.append)
            #expect(sandbox.contents("f.bin") == body)
            #expect(log.restarts.count == 1)
            #expect(server.requests("/f").last?.header("Range") == nil)
        }
    }

    @Test func wrongCompleteLengthIsRejectedWithoutWriting() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"a1\"")
            resource.faults.dropAfterBytes = 100_000
            resource.faults.dropOnRequests = 1
            resource.faults.wrongCompleteLength = body.count + 1
            server.serve("/f", resource)
            let log = EventLog()
            try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))), events: log.append)
            #expect(sandbox.contents("f.bin") == body)
            #expect(log.restarts.count == 1)
        }
    }

    @Test func completePartialIsConfirmedByItsLastBytesWithoutRefetchingTheRest() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: body, etag: "\"a1\""))
            let options = try testOptions(server.url("/f"), .file(sandbox.path("f.bin")))
            try seedPartial(sandbox, options: options, bytes: body, etag: "\"a1\"", total: body.count)
            let result = try await engine.download(options)
            #expect(sandbox.contents("f.bin") == body)
            #expect(result.fetchedBytes == 0)
            let requests = server.requests("/f")
            #expect(requests.count == 1)
            #expect(requests[0].header("Range") == resumeRange(from: body.count))
            #expect(requests[0].bytesSent == Int(ResumePolicy.overlapLength), "only the last bytes held, compared")
        }
    }

    @Test func lengthChangedBehind416Restarts() async throws {
        try await withHarness { server, engine, sandbox in
            let shorter = Array(body.prefix(200_000))
            server.serve("/f", Resource(body: shorter, etag: "\"a1\""))
            let options = try testOptions(server.url("/f"), .file(sandbox.path("f.bin")))
            try seedPartial(sandbox, options: options, bytes: Array(body.prefix(250_000)), etag: "\"a1\"", total: body.count)
            let log = EventLog()
            try await engine.download(options, events: log.append)
            #expect(sandbox.contents("f.bin") == shorter)
            #expect(log.restarts.count == 1)
        }
    }

    @Test func recordOffsetWinsOverLongerPartialFile() async throws {
        // After kill -9 the partial file may hold bytes past the last checkpoint: they are fetched again, not trusted.
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: body, etag: "\"a1\""))
            let options = try testOptions(server.url("/f"), .file(sandbox.path("f.bin")))
            var garbage = Array(body.prefix(120_000))
            for index in 100_000..<120_000 { garbage[index] = 0 }
            try seedPartial(sandbox, options: options, bytes: garbage, etag: "\"a1\"", total: body.count, offset: 100_000)
            try await engine.download(options)
            #expect(sandbox.contents("f.bin") == body)
            #expect(server.requests("/f")[0].header("Range") == resumeRange(from: 100_000))
        }
    }

    @Test func expiredFinalURLIsResolvedAgainFromTheOriginal() async throws {
        try await withHarness { server, engine, sandbox in
            server.route("/expired") { _ in .text(403, "signature expired") }
            server.route("/start") { _ in redirectPlan(to: "/fresh") }
            server.serve("/fresh", Resource(body: body, etag: "\"a1\""))
            let options = try testOptions(server.url("/start"), .file(sandbox.path("f.bin")))
            try seedPartial(sandbox, options: options, bytes: Array(body.prefix(100_000)), etag: "\"a1\"", total: body.count,
                            finalURL: server.url("/expired"))
            let result = try await engine.download(options)
            #expect(sandbox.contents("f.bin") == body)
            #expect(result.fetchedBytes == Int64(body.count - 100_000))
            // A later run starts from the URL given (its redirects may set what the file needs): the final URL an
            // earlier run reached is not asked at all.
            #expect(server.requests("/expired").isEmpty)
            #expect(server.requests("/fresh").first?.header("Range") == resumeRange(from: 100_000))
        }
    }

    /// Writes a partial file and a paused record as an interrupted run would have left them.
    func seedPartial(
        _ sandbox: Sandbox, options: DownloadOptions, bytes: [UInt8], etag: String?, total: Int, offset: Int? = nil,
        finalURL: String? = nil
    ) throws {
        guard case .file(let path) = options.destination else { return }
        FileManager.default.createFile(atPath: path + ".haul-part", contents: Data(bytes))
        let record = TransferRecord(
            url: options.url.absoluteString, finalURL: finalURL ?? options.url.absoluteString, destinationPath: path,
            partialPath: path + ".haul-part", offset: Int64(offset ?? bytes.count), totalLength: Int64(total),
            entityTag: etag, lastModified: nil, state: .paused, adopted: false)
        try TransferRecordStore(home: sandbox.home).save(record)
    }
}
