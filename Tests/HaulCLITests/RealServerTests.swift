import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Starts `args`, waits for ≥ 1 MiB in `partial` and a recorded checkpoint, SIGKILLs the process; returns the offset held.
private func killMidDownload(_ box: Sandbox, _ args: [String], partial: String) async throws -> Int {
    let run = try box.start(args)
    // Polled on a thread of its own: a starved cooperative pool would see the moment too late.
    try await signalWhen(run, SIGKILL, "the partial file holds ≥ 1 MiB and a checkpoint is recorded") {
        (fileSize(partial) ?? 0) >= 1 << 20 && (box.recordedOffset() ?? 0) > 0
    }
    let killed = try await run.wait(timeout: .seconds(10))
    #expect(killed.signalled, "haul was not killed: \(killed)")
    return try #require(box.recordedOffset())
}

/// Runs `/bin/sh -c script` (bounded).
private func shell(_ script: String) async throws {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", script]
    try process.run()
    try await eventually("`\(script)` finishes", timeout: .seconds(10)) { !process.isRunning }
    guard process.terminationStatus == 0 else { throw HarnessError("`\(script)` exited \(process.terminationStatus)") }
}

/// Against nginx: real Range, If-Range, ETag and `limit_rate` behaviour.
@Suite(.enabled(if: ExternalTools.nginxTestsEnabled, "needs nginx (apt-get install nginx-light; scripts/test installs it)"))
struct NginxTests {
    @Test func plainDownloadIsExact() async throws {
        try await withNginx { nginx in
            let body = TestData.bytes(3 << 20, seed: 21)
            try nginx.put("file.bin", body)
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let result = try await box.run(["get", nginx.url("/file.bin"), "-o", destination, "--quiet"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
            }
        }
    }

    @Test func continueForeignPartialCompletesWithRangeRequest() async throws {
        try await withNginx { nginx in
            let body = TestData.bytes(2 << 20, seed: 22)
            try nginx.put("file.bin", body)
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let held = (1 << 20) + 1234
                try await shell("head -c \(held) '\(nginx.documentRoot)/file.bin' > '\(destination)'")
                #expect(fileSize(destination) == held)
                let result = try await box.run(["get", nginx.url("/file.bin"), "-o", destination, "--continue", "--quiet"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
                #expect(!fileExists(destination + ".haul-part"))
                let expected = "GET /file.bin 206 range=\"bytes=\(held - 65536)-\""
                try await eventually("nginx logs `\(expected)…`; log: \(nginx.accessLog())", timeout: .seconds(5)) {
                    nginx.accessLog().contains { $0.hasPrefix(expected) }
                }
                #expect(!nginx.accessLog().contains { $0.hasPrefix("GET /file.bin 200") }, "log: \(nginx.accessLog())")
            }
        }
    }

    @Test func mismatchingForeignPartialExits7AndIsLeftAlone() async throws {
        try await withNginx { nginx in
            try nginx.put("file.bin", TestData.bytes(2 << 20, seed: 23))
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let foreign = TestData.bytes(1 << 20, seed: 99)
                try writeBytes(foreign, to: destination)
                let result = try await box.run(["get", nginx.url("/file.bin"), "-o", destination, "--continue", "--quiet"])
                #expect(result.exitCode == 7, "\(result)")
                #expect(result.stderr.contains("does not match"), "stderr: \(result.stderr)")
                #expect(contentMismatch(destination, expected: foreign) == nil, "the foreign file must be left unchanged")
                #expect(box.workContents() == ["file.bin"], "nothing else may be left: \(box.workContents())")
            }
        }
    }

    @Test func sigkillDuringRateLimitedDownloadThenRerunIsExact() async throws {
        try await withNginx(slowRate: "1m") { nginx in
            let body = TestData.bytes(8 << 20, seed: 24)
            try nginx.put("slow/file.bin", body)
            try await Sandbox.with { box in
                let destination = box.path("file.bin"), partial = destination + ".haul-part"
                let args = ["get", nginx.url("/slow/file.bin"), "-o", destination, "--quiet", "--segments", "1"]
                let held = try await killMidDownload(box, args, partial: partial)
                #expect(!fileExists(destination))
                let etag = try #require(box.records().first?["entityTag"] as? String, "nginx sends an ETag")

                let result = try await box.run(args)
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
                let expected = "GET /slow/file.bin 206 range=\"bytes=\(resumeStart(held))-\" if_range=\"\(etag)\" sent=\(body.count - resumeStart(held))"
                try await eventually("nginx logs `\(expected)`; log: \(nginx.accessLog())", timeout: .seconds(5)) {
                    nginx.accessLog().contains { $0 == expected }
                }
            }
        }
    }
}

/// Against Python's http.server, which ignores Range: a resume must start over from byte 0.
@Suite(.enabled(if: ExternalTools.pythonTestsEnabled, "needs python3 (apt-get install python3; scripts/test installs it)"))
struct PythonHTTPServerTests {
    @Test func plainDownloadIsExact() async throws {
        try await withPythonServer { python in
            let body = TestData.bytes(3 << 20, seed: 31)
            try python.put("file.bin", body)
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let result = try await box.run(["get", python.url("/file.bin"), "-o", destination, "--quiet"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
            }
        }
    }

    @Test func sigkillThenRerunRestartsFromZeroAndIsExact() async throws {
        try await withPythonServer { python in
            let body = TestData.bytes(64 << 20, seed: 32)
            try python.put("big.bin", body)
            try await Sandbox.with { box in
                let destination = box.path("big.bin"), partial = destination + ".haul-part"
                let url = python.url("/big.bin")
                // Loopback is fast: slow haul down so it can be killed part-way.
                let held = try await killMidDownload(box, ["get", url, "-o", destination, "--limit-rate", "4M", "--json"], partial: partial)
                #expect(held > 0 && held < body.count)
                #expect(!fileExists(destination))

                // The same download (the resume record is keyed by URL and destination), now at full speed.
                let result = try await box.run(["get", url, "-o", destination, "--json"])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(destination, expected: body) == nil)
                let names = try result.jsonEvents().map { $0["type"] as? String ?? "?" }
                #expect(names.contains("restarted"), "a 200 to a Range request means starting over: \(names)")
                #expect(names.last == "finished")
            }
        }
    }
}
