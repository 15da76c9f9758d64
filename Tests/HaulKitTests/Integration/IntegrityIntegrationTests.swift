import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

#if canImport(Glibc)
import Glibc
#endif

/// No way to a mixed file: segmented resume against servers that ignore If-Range, one owner per partial
/// file, and destinations that are not regular files.
@Suite struct IntegrityIntegrationTests {
    let lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"

    func segmented(_ url: String, _ path: String, retries: Int = 5) throws -> DownloadOptions {
        var options = try testOptions(url, .file(path), retries: retries)
        options.segments = 4
        options.minSegmentSize = 128 * 1024
        return options
    }

    /// Interrupts a segmented download of `first` at `path` (every segment drops part-way, no retries).
    func interruptSegmented(_ server: TestServer, _ engine: TransferEngine, _ sandbox: Sandbox, body: [UInt8], resource: Resource) async throws {
        server.route("/f") { request in
            var plan = resource.response(to: request)
            plan.delivery = .dropAfter(300_000)
            return plan
        }
        await expectHaulError(.network) {
            try await engine.download(try segmented(server.url("/f"), sandbox.path("f"), retries: 0))
        }
        let record = try #require(sandbox.records().first)
        #expect(record.segments != nil)
        #expect(record.offset > 0 && record.offset < Int64(body.count))
    }

    @Test func segmentedResumeCatchesAChangeThatKeepsSizeAndDateOnAServerIgnoringIfRange() async throws {
        try await withHarness { server, engine, sandbox in
            let old = TestData.bytes(2 << 20, seed: 90), new = TestData.bytes(2 << 20, seed: 91)
            var first = Resource(body: old, lastModified: lastModified)
            first.faults.ignoreIfRange = true
            try await interruptSegmented(server, engine, sandbox, body: old, resource: first)
            // The file changes; its size and Last-Modified do not; the server still applies every Range.
            var second = Resource(body: new, lastModified: lastModified)
            second.faults.ignoreIfRange = true
            server.serve("/f", second)
            let log = EventLog()
            try await engine.download(try segmented(server.url("/f"), sandbox.path("f")), events: log.append)
            #expect(sandbox.contents("f") == new, "the file mixes two versions")
            #expect(!log.restarts.isEmpty)
        }
    }

    @Test func segmentedResumeOfAnUnchangedFileContinuesAfterCheckingTheHeldBytes() async throws {
        try await withHarness { server, engine, sandbox in
            let body = TestData.bytes(2 << 20, seed: 92)
            var resource = Resource(body: body, lastModified: lastModified)
            resource.faults.ignoreIfRange = true
            try await interruptSegmented(server, engine, sandbox, body: body, resource: resource)
            let saved = try #require(sandbox.records().first)
            let plan = try #require(SegmentPlan(restoring: saved.segments ?? [], total: Int64(body.count), minSegmentSize: 1))
            server.serve("/f", resource)
            let log = EventLog()
            // Marked, so that a request of the interrupted run that reaches the server late (a connection that claimed
            // a segment just before that run gave up) is not taken for one of this run.
            var options = try segmented(server.url("/f"), sandbox.path("f"))
            options.headers = ["X-Run": "resume"]
            let result = try await engine.download(options, events: log.append)
            #expect(sandbox.contents("f") == body)
            #expect(log.restarts.isEmpty)
            #expect(result.fetchedBytes == Int64(body.count) - saved.offset)
            // Before any segment continued, the last bytes of every held stretch were asked for and compared.
            let expected = ResumePolicy.verificationPlans(for: plan.heldRuns, validators: saved.validators).map { $0.plan.headers["Range"] }
            let resumed = server.requests("/f").filter { $0.header("X-Run") == "resume" }
            let firstRanges = resumed.prefix(expected.count).map { $0.header("Range") }
            #expect(Array(firstRanges) == expected, "\(resumed.map { $0.header("Range") ?? "-" })")
        }
    }

    @Test func aChangedFileRestartsWithEveryConnection() async throws {
        try await withHarness { server, engine, sandbox in
            let old = TestData.bytes(2 << 20, seed: 93), new = TestData.bytes(2 << 20, seed: 94)
            try await interruptSegmented(server, engine, sandbox, body: old, resource: Resource(body: old, etag: "\"a\""))
            server.serve("/f", Resource(body: new, etag: "\"b\""))
            let log = EventLog()
            try await engine.download(try segmented(server.url("/f"), sandbox.path("f")), events: log.append)
            #expect(sandbox.contents("f") == new)
            #expect(!log.restarts.isEmpty)
            // After the restart: a probe from byte 0, then closed ranges from several connections.
            let afterRestart = server.requests("/f").filter { $0.header("If-Range") == "\"b\"" }
            #expect(afterRestart.count >= 3, "the restart used one connection")
        }
    }

    @Test func continueSplitsTheRestOverSeveralConnections() async throws {
        try await withHarness { server, engine, sandbox in
            let body = TestData.bytes(4 << 20, seed: 108)
            server.serve("/f", Resource(body: body, etag: "\"c\""))
            sandbox.write(Array(body.prefix(1 << 20)), to: "f")
            var options = try segmented(server.url("/f"), sandbox.path("f"))
            options.continuePartial = true
            let log = EventLog()
            let result = try await engine.download(options, events: log.append)
            #expect(sandbox.contents("f") == body)
            #expect(result.fetchedBytes == Int64(body.count - (1 << 20)))
            let requests = server.requests("/f")
            // The held bytes' last 64 KiB are checked, then the rest goes over several closed ranges.
            #expect(requests.first?.header("Range") == "bytes=\((1 << 20) - 65536)-\((1 << 20) - 1)")
            #expect(requests.dropFirst().filter { $0.header("If-Range") == "\"c\"" }.count >= 3, "\(requests.map { $0.header("Range") ?? "-" })")
            #expect(sandbox.listing() == ["f"])
        }
    }

    @Test func continueOfAFileThatDiffersIsRefusedAndLeftAlone() async throws {
        try await withHarness { server, engine, sandbox in
            let body = TestData.bytes(4 << 20, seed: 109)
            server.serve("/f", Resource(body: body, etag: "\"c\""))
            let other = TestData.bytes(1 << 20, seed: 110)
            sandbox.write(other, to: "f")
            var options = try segmented(server.url("/f"), sandbox.path("f"))
            options.continuePartial = true
            await expectHaulError(.server) { try await engine.download(options) }
            #expect(sandbox.contents("f") == other)
        }
    }

    @Test func aSingleConnectionPartialResumesOverSeveralConnectionsWhenAsked() async throws {
        try await withHarness { server, engine, sandbox in
            let body = TestData.bytes(4 << 20, seed: 111)
            let resource = Resource(body: body, lastModified: lastModified)
            var dropping = resource
            dropping.faults.dropAfterBytes = 1 << 20
            dropping.faults.dropOnRequests = 1
            server.serve("/f", dropping)
            var single = try segmented(server.url("/f"), sandbox.path("f"), retries: 0)
            single.segments = 1
            await expectHaulError(.network) { try await engine.download(single) }
            server.serve("/f", resource)
            let before = server.requests("/f").count
            let result = try await engine.download(try segmented(server.url("/f"), sandbox.path("f")))
            #expect(sandbox.contents("f") == body)
            #expect(result.fetchedBytes < Int64(body.count))
            #expect(server.requests("/f").dropFirst(before).count >= 4, "the rest used one connection")
        }
    }

    // MARK: One owner per partial file

    /// Leaves an interrupted single-connection download of `path` at `destination`.
    func interrupt(_ server: TestServer, _ engine: TransferEngine, path: String, destination: String, resource: Resource) async throws {
        var dropping = resource
        dropping.faults.dropAfterBytes = 400_000
        dropping.faults.dropOnRequests = 1
        server.serve(path, dropping)
        var options = try testOptions(server.url(path), .file(destination), retries: 0)
        options.segments = 1
        await expectHaulError(.network) { try await engine.download(options) }
        server.serve(path, resource)
    }

    @Test func aPartialOfAnotherURLIsRefusedNamingIt() async throws {
        try await withHarness { server, engine, sandbox in
            let a = TestData.bytes(1 << 20, seed: 95), b = TestData.bytes(1 << 20, seed: 96)
            try await interrupt(server, engine, path: "/a", destination: sandbox.path("f"), resource: Resource(body: a, etag: "\"a\""))
            server.serve("/b", Resource(body: b, etag: "\"b\""))
            var options = try testOptions(server.url("/b"), .file(sandbox.path("f")))
            options.segments = 1
            let error = await expectHaulError(.usage) { try await engine.download(options) }
            #expect(error?.message.contains(server.url("/a")) == true, "\(error?.message ?? "")")
            #expect(!sandbox.exists("f"))
            // A's partial is untouched, and A continues it.
            var resumeA = try testOptions(server.url("/a"), .file(sandbox.path("f")))
            resumeA.segments = 1
            let result = try await engine.download(resumeA)
            #expect(sandbox.contents("f") == a)
            #expect(result.fetchedBytes < Int64(a.count))
        }
    }

    @Test func overwriteDiscardsAnotherURLsPartial() async throws {
        try await withHarness { server, engine, sandbox in
            let a = TestData.bytes(1 << 20, seed: 97), b = TestData.bytes(1 << 20, seed: 98)
            try await interrupt(server, engine, path: "/a", destination: sandbox.path("f"), resource: Resource(body: a, etag: "\"a\""))
            server.serve("/b", Resource(body: b, etag: "\"b\""))
            var options = try testOptions(server.url("/b"), .file(sandbox.path("f")))
            options.overwrite = true
            try await engine.download(options)
            #expect(sandbox.contents("f") == b)
            #expect(sandbox.records().count == 1)
            #expect(sandbox.records().first?.url == server.url("/b"))
        }
    }

    @Test func aReSignedURLOfTheSameFileContinuesTheHeldBytes() async throws {
        try await withHarness { server, engine, sandbox in
            let body = TestData.bytes(1 << 20, seed: 99)
            let resource = Resource(body: body, etag: "\"same\"")
            try await interrupt(server, engine, path: "/obj", destination: sandbox.path("f"), resource: resource)
            // The same object under a new signature: another URL, the same representation.
            let resigned = server.url("/obj") + "?X-Signature=new"
            var options = try testOptions(resigned, .file(sandbox.path("f")))
            options.segments = 1
            let result = try await engine.download(options)
            #expect(sandbox.contents("f") == body)
            #expect(result.fetchedBytes < Int64(body.count), "started over instead of continuing")
            #expect(sandbox.records().count == 1)
            #expect(sandbox.records().first?.url == resigned)
        }
    }

    @Test func aFinishedFileOfAnotherURLIsNotAlreadyComplete() async throws {
        try await withHarness { server, engine, sandbox in
            let a = TestData.bytes(100_000, seed: 100), b = TestData.bytes(100_000, seed: 101)
            server.serve("/a", Resource(body: a, etag: "\"a\""))
            server.serve("/b", Resource(body: b, etag: "\"b\""))
            try await engine.download(try testOptions(server.url("/a"), .file(sandbox.path("f"))))
            await expectHaulError(.usage) {
                try await engine.download(try testOptions(server.url("/b"), .file(sandbox.path("f"))))
            }
            #expect(sandbox.contents("f") == a)
            var replace = try testOptions(server.url("/b"), .file(sandbox.path("f")))
            replace.overwrite = true
            let result = try await engine.download(replace)
            #expect(!result.alreadyComplete)
            #expect(sandbox.contents("f") == b)
        }
    }

    @Test func twoDownloadsIntoOneDestinationAtOnceAreRefused() async throws {
        try await withHarness { server, engine, sandbox in
            let a = TestData.bytes(1 << 20, seed: 102), b = TestData.bytes(1 << 20, seed: 103)
            var slow = Resource(body: a, etag: "\"a\"")
            slow.faults.throttleBytesPerSecond = 256 * 1024
            server.serve("/a", slow)
            server.serve("/b", Resource(body: b, etag: "\"b\""))
            let first = Task { try await engine.download(try testOptions(server.url("/a"), .file(sandbox.path("f")))) }
            try await eventuallyTrue { sandbox.exists("f.haul-part") }
            await expectHaulError(.busy) {
                try await engine.download(try testOptions(server.url("/b"), .file(sandbox.path("f"))))
            }
            _ = try await first.value
            #expect(sandbox.contents("f") == a)
        }
    }

    @Test func aDirDownloadAndTheSamePathGivenWithDashOShareOneRecord() async throws {
        try await withHarness { server, engine, sandbox in
            let body = TestData.bytes(1 << 20, seed: 104)
            var dropping = Resource(body: body, etag: "\"d\"")
            dropping.faults.dropAfterBytes = 300_000
            dropping.faults.dropOnRequests = 1
            server.serve("/named.bin", dropping)
            var byDirectory = try testOptions(server.url("/named.bin"), .directory(sandbox.files), retries: 0)
            byDirectory.segments = 1
            await expectHaulError(.network) { try await engine.download(byDirectory) }
            #expect(sandbox.exists("named.bin.haul-part"))
            var byPath = try testOptions(server.url("/named.bin"), .file(sandbox.path("named.bin")))
            byPath.segments = 1
            let result = try await engine.download(byPath)
            #expect(result.fetchedBytes < Int64(body.count))
            #expect(sandbox.contents("named.bin") == body)
            #expect(sandbox.records().count == 1)
            // And the --dir download now finds its file complete.
            let again = try await engine.download(try testOptions(server.url("/named.bin"), .directory(sandbox.files)))
            #expect(again.alreadyComplete)
        }
    }

    // MARK: Destinations that are not regular files

    @Test func devNullIsWrittenThroughAndKept() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: TestData.bytes(300_000, seed: 105), etag: "\"n\""))
            var options = try testOptions(server.url("/f"), .file("/dev/null"))
            options.overwrite = true
            let result = try await engine.download(options)
            #expect(result.bytes == 300_000)
            var info = stat()
            #expect(lstat("/dev/null", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR)
            #expect(sandbox.records().isEmpty)
            #expect(!FileManager.default.fileExists(atPath: "/dev/null.haul-part"))
        }
    }

    @Test func aFIFOIsWrittenThrough() async throws {
        try await withHarness { server, engine, sandbox in
            let body = TestData.bytes(500_000, seed: 106)
            server.serve("/f", Resource(body: body, etag: "\"p\""))
            let fifo = sandbox.path("pipe")
            #expect(mkfifo(fifo, 0o600) == 0)
            let reader = Task.detached { () -> [UInt8] in
                let fd = open(fifo, O_RDONLY)
                guard fd >= 0 else { return [] }
                defer { close(fd) }
                var all: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65536)
                for _ in 0..<10_000 {
                    let n = read(fd, &buffer, buffer.count)
                    if n <= 0 { break }
                    all += buffer[0..<n]
                }
                return all
            }
            let result = try await engine.download(try testOptions(server.url("/f"), .file(fifo)))
            #expect(result.bytes == Int64(body.count))
            #expect(await reader.value == body)
            var info = stat()
            #expect(lstat(fifo, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO)
            #expect(sandbox.listing() == ["pipe"])
        }
    }

    /// Another user's FIFO (or socket) at the `-o` path, with that user reading it: haul sends it nothing, in one line.
    @Test(.enabled(if: geteuid() == 0, "needs root to give a FIFO to another user"))
    func anotherUsersFIFOIsNeverWrittenTo() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: TestData.bytes(50_000, seed: 108), etag: "\"q\""))
            let fifo = sandbox.path("secret.tar")
            #expect(mkfifo(fifo, 0o666) == 0 && chown(fifo, 65534, 65534) == 0)
            // A reader that would take whatever comes, as the other user's `cat` would.
            let reader = Task.detached { () -> Int in
                let fd = open(fifo, O_RDONLY | O_NONBLOCK)
                guard fd >= 0 else { return -1 }
                defer { close(fd) }
                var total = 0
                var buffer = [UInt8](repeating: 0, count: 65536)
                for _ in 0..<40 {
                    let n = read(fd, &buffer, buffer.count)
                    if n > 0 { total += n }
                    usleep(25_000)
                }
                return total
            }
            let refused = await expectHaulError(.usage) {
                _ = try await engine.download(try testOptions(server.url("/f"), .file(fifo)))
            }
            #expect(refused?.message.contains("another user's FIFO") == true, "\(String(describing: refused))")
            #expect(await reader.value == 0)
            #expect(server.requests("/f").isEmpty)
        }
    }

    // MARK: Private state

    @Test func stateUnderHaulHomeIsPrivate() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: TestData.bytes(100_000, seed: 107), etag: "\"m\""))
            var options = try testOptions(server.url("/f"), .file(sandbox.path("f")))
            options.headers = HTTPFields([HTTPFields.Field(name: "Authorization", value: "Bearer secret")])
            try await engine.download(options)
            for path in [sandbox.home.path, sandbox.home.transfersPath] {
                var info = stat()
                #expect(stat(path, &info) == 0)
                #expect(info.st_mode & 0o777 == 0o700, "\(path) is \(String(info.st_mode & 0o777, radix: 8))")
            }
            let names = try FileManager.default.contentsOfDirectory(atPath: sandbox.home.transfersPath)
            #expect(!names.isEmpty)
            for name in names {
                var info = stat()
                #expect(stat(sandbox.home.transfersPath + "/" + name, &info) == 0)
                #expect(info.st_mode & 0o777 == 0o600, "\(name) is \(String(info.st_mode & 0o777, radix: 8))")
            }
        }
    }
}

/// Waits (bounded: 10 s, 1,000 looks) until `condition` holds.
func eventuallyTrue(_ condition: () -> Bool) async throws {
    for _ in 0..<1000 {
        if condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("the condition did not become true within 10 s")
}
