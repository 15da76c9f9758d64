import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A `haul` process killed mid-download (SIGKILL: no chance to clean up; SIGINT: a clean pause) and run
/// again with the same command must end with exactly the server's bytes, fetching only what it lacks.
@Suite struct KillAndResumeTests {
    /// The first run is throttled so it can be killed part-way (8 s of headroom even on a loaded machine);
    /// the rerun is served at full speed.
    static let size = 8 << 20
    static let rate = 1 << 20
    static let etag = "\"v1-8mib\""

    /// Serves `body` at /file.bin, throttled to `rate` unless `throttled` is false.
    func serve(_ server: TestServer, _ body: [UInt8], etag: String?, throttled: Bool = true) {
        var resource = Resource(body: body, etag: etag)
        resource.faults.throttleBytesPerSecond = throttled ? Self.rate : nil
        server.serve("/file.bin", resource)
    }

    /// Starts `args`, waits until ≥ 1 MiB is in the partial file and a checkpoint offset > 0 is recorded
    /// (bytes past the last checkpoint are not durable and are rightly dropped on resume), then SIGKILLs it.
    /// Returns the durable offset held.
    func startAndKill(_ box: Sandbox, _ args: [String], partial: String) async throws -> Int {
        let run = try box.start(args)
        // Polled on a thread of its own: a starved cooperative pool would see the moment too late.
        try await signalWhen(run, SIGKILL, "the partial file holds ≥ 1 MiB and a checkpoint is recorded") {
            (fileSize(partial) ?? 0) >= 1 << 20 && (box.recordedOffset() ?? 0) > 0
        }
        let killed = try await run.wait(timeout: .seconds(10))
        #expect(killed.signalled && killed.exitCode == SIGKILL, "haul was not killed by SIGKILL: \(killed)")
        return try #require(box.recordedOffset())
    }

    /// The response bytes the server sent for request `index`, once it has sent at least `expected` (bounded wait).
    func bytesSent(_ server: TestServer, index: Int, atLeast expected: Int) async throws -> Int {
        try? await eventually("the server has counted \(expected) bytes", timeout: .seconds(5)) {
            server.requests("/file.bin")[index].bytesSent >= expected
        }
        return server.requests("/file.bin")[index].bytesSent
    }

    @Test func sigkillThenSameCommandResumesWithRangeAndIfRange() async throws {
        try await withTestServer { server in
            let source = TestData.bytes(Self.size, seed: 101)
            serve(server, source, etag: Self.etag)
            try await Sandbox.with { box in
                let destination = box.path("file.bin"), partial = destination + ".haul-part"
                let args = ["get", server.url("/file.bin"), "-o", destination, "--quiet"]
                let held = try await startAndKill(box, args, partial: partial)
                #expect(!fileExists(destination), "the destination must not appear before the download is complete")
                #expect((fileSize(partial) ?? 0) >= held, "the partial file must hold the recorded bytes")
                #expect(held > 0 && held < Self.size)
                serve(server, source, etag: Self.etag, throttled: false)

                let before = server.requests("/file.bin").count
                let second = try await box.run(args)
                #expect(second.exitCode == 0 && !second.signalled, "rerun failed: \(second.stderr)")
                #expect(contentMismatch(destination, expected: source) == nil)
                #expect(!fileExists(partial))

                let resumes = Array(server.requests("/file.bin").dropFirst(before))
                #expect(resumes.count == 1, "expected one resume request, got \(resumes.map { $0.headers })")
                let resume = try #require(resumes.first)
                #expect(resume.header("Range") == "bytes=\(resumeStart(held))-")
                #expect(resume.header("If-Range") == Self.etag)
                let rest = Self.size - resumeStart(held)
                #expect(try await bytesSent(server, index: before, atLeast: rest) == rest,
                        "the resume must fetch only the remaining bytes and the last 64 KiB held, to compare them")
            }
        }
    }

    /// Ctrl-C, a `kill`, or the terminal closing (SIGHUP, which ended the process without a save before): the same
    /// clean pause.
    @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
    func aSignalPausesWithExit130AndSameCommandFinishes(_ number: Int32) async throws {
        try await withTestServer { server in
            let source = TestData.bytes(Self.size, seed: 202)
            serve(server, source, etag: Self.etag)
            try await Sandbox.with { box in
                let destination = box.path("file.bin"), partial = destination + ".haul-part"
                let args = ["get", server.url("/file.bin"), "-o", destination, "--quiet"]
                let first = try box.start(args)
                try await signalWhen(first, number, "the partial file holds ≥ 1 MiB") { (fileSize(partial) ?? 0) >= 1 << 20 }
                let paused = try await first.wait(timeout: .seconds(10))
                #expect(paused.exitCode == 130 && !paused.signalled, "signal \(number) must exit 130: \(paused)")
                #expect(paused.stderr.contains("paused at"), "stderr: \(paused.stderr)")
                #expect(paused.stderr.contains("run the same command again"), "stderr: \(paused.stderr)")
                #expect(!fileExists(destination))
                let records = box.records()
                #expect(records.count == 1)
                #expect(records.first?["state"] as? String == "paused", "record: \(records)")
                let held = try #require(box.recordedOffset())
                #expect(held >= 1 << 20 && held < Self.size)
                #expect(fileSize(partial) == held, "a clean pause records exactly the bytes in the partial file")
                serve(server, source, etag: Self.etag, throttled: false)

                let before = server.requests("/file.bin").count
                let second = try await box.run(args)
                #expect(second.exitCode == 0, "rerun failed: \(second.stderr)")
                #expect(contentMismatch(destination, expected: source) == nil)
                let resume = try #require(server.requests("/file.bin").dropFirst(before).first)
                #expect(resume.header("Range") == "bytes=\(resumeStart(held))-")
                #expect(resume.header("If-Range") == Self.etag)
                let rest = Self.size - resumeStart(held)
                #expect(try await bytesSent(server, index: before, atLeast: rest) == rest)
                #expect(box.records().first?["state"] as? String == "finished")
            }
        }
    }

    @Test func noValidatorsResumeOverlapsTheLast64KiB() async throws {
        try await withTestServer { server in
            let source = TestData.bytes(Self.size, seed: 303)
            serve(server, source, etag: nil)
            try await Sandbox.with { box in
                let destination = box.path("file.bin"), partial = destination + ".haul-part"
                let args = ["get", server.url("/file.bin"), "-o", destination, "--quiet"]
                let held = try await startAndKill(box, args, partial: partial)
                #expect(!fileExists(destination))
                #expect(held > 65536)
                serve(server, source, etag: nil, throttled: false)

                let before = server.requests("/file.bin").count
                let second = try await box.run(args)
                #expect(second.exitCode == 0, "rerun failed: \(second.stderr)")
                #expect(contentMismatch(destination, expected: source) == nil)
                let resumes = Array(server.requests("/file.bin").dropFirst(before))
                #expect(resumes.count == 1, "expected one resume request, got \(resumes.map { $0.headers })")
                let resume = try #require(resumes.first)
                let start = held - 65536
                #expect(resume.header("Range") == "bytes=\(start)-", "without validators the resume re-reads 64 KiB held")
                #expect(resume.header("If-Range") == nil)
                #expect(try await bytesSent(server, index: before, atLeast: Self.size - start) == Self.size - start)
            }
        }
    }

    @Test func resourceChangedWhileKilledEndsWithExactlyTheNewBytes() async throws {
        try await withTestServer { server in
            let old = TestData.bytes(Self.size, seed: 404)
            let new = TestData.bytes(Self.size, seed: 405)
            serve(server, old, etag: nil)
            try await Sandbox.with { box in
                let destination = box.path("file.bin"), partial = destination + ".haul-part"
                let args = ["get", server.url("/file.bin"), "-o", destination, "--quiet"]
                let held = try await startAndKill(box, args, partial: partial)
                serve(server, new, etag: nil, throttled: false)

                let before = server.requests("/file.bin").count
                let second = try await box.run(args)
                #expect(second.exitCode == 0, "rerun failed: \(second.stderr)")
                #expect(contentMismatch(destination, expected: new) == nil, "must hold the new version only, never a mix")
                let later = Array(server.requests("/file.bin").dropFirst(before))
                #expect(later.first?.header("Range") == "bytes=\(held - 65536)-")
                // A fresh start probes ranges from byte 0 (and would split the file if it could).
                #expect(later.count >= 2 && later.last?.header("Range") == "bytes=0-",
                        "after the overlap mismatch the whole file must be fetched again: \(later.map { $0.headers })")
            }
        }
    }
}
