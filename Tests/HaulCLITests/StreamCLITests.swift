import Foundation
import HaulTestSupport
import Testing

/// A download written to standard output retries by the same rules as one written to a file: a typo fails at once,
/// a dropped connection resumes only when a strong ETag ties the rest to the bytes already written.
@Suite struct StreamCLITests {
    @Test func aTypoFailsAtOnceOnStandardOutputToo() async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let url = "http://127.0.0.1:\(refusing.port)/x"
        try await Sandbox.with { box in
            let result = try await box.run(["get", url, "-o", "-"], timeout: .seconds(20))
            #expect(result.exitCode == 3, "\(result.stderr)")
            // Two quick retries at most, not the whole backoff (5 retries from 1 s, doubling).
            #expect(result.stderr.contains("gave up after 2 retries"), "\(result.stderr)")
            #expect(result.stderr.contains("127.0.0.1:\(refusing.port)"), "\(result.stderr)")
            #expect(result.stdoutBytes.isEmpty)
        }
    }

    /// Ctrl-C (SIGINT) or SIGTERM while a stream runs: exit 130 with one line in words, which does not promise a
    /// resume that a stream cannot do.
    @Test func aStoppedStreamSaysSoInWordsAndExits130() async throws {
        try await withTestServer { server in
            var slow = Resource(body: TestData.bytes(2 << 20, seed: 303), etag: "\"s\"")
            slow.faults.throttleBytesPerSecond = 64 << 10
            server.serve("/slow.bin", slow)
            try await Sandbox.with { box in
                for signal in [SIGINT, SIGTERM] {
                    let run = try box.start(["get", server.url("/slow.bin"), "-o", "-"])
                    try await eventually("the stream runs", timeout: .seconds(30)) { server.requests("/slow.bin").count > (signal == SIGINT ? 0 : 1) }
                    run.signal(signal)
                    let result = try await run.wait()
                    #expect(result.exitCode == 130, "\(signal): \(result.stderr)")
                    #expect(result.stderrLines.last?.hasPrefix("haul: stopped; ") == true && !result.stderr.contains("Error()")
                            && !result.stderr.contains("to resume"), "\(signal): \(result.stderr)")
                }
            }
        }
    }

    @Test func aDroppedStreamResumesWhenAStrongETagTiesTheRest() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(600_000, seed: 301)
            var dropping = Resource(body: body, etag: "\"s\"")
            dropping.faults.dropAfterBytes = 200_000
            dropping.faults.dropOnRequests = 1
            server.serve("/f.bin", dropping)
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "-"])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(result.stdoutBytes == body)
                let ranges = server.requests("/f.bin").map { $0.header("Range") }
                #expect(ranges.first == .some(nil))
                #expect(ranges.count == 2 && ranges.last??.hasPrefix("bytes=") == true, "\(ranges)")
            }
        }
    }

    /// The connection drops and the file is rewritten in place at that moment, keeping its ETag (as nginx's, made of
    /// size and time, is kept): the retry asks for the last bytes written again, finds them changed, and stops with one
    /// line (exit 7) rather than join two versions; what was written is the old version's beginning only.
    @Test func aDroppedStreamWhoseFileChangedKeepingItsETagStopsRatherThanWriteAMix() async throws {
        try await withTestServer { server in
            let old = TestData.bytes(1_500_000, seed: 304), new = TestData.bytes(1_500_000, seed: 305)
            server.route("/f.bin") { request in
                var resource = Resource(body: request.index == 0 ? old : new, etag: "\"same\"")
                if request.index == 0 {
                    resource.faults.dropAfterBytes = 700_000
                }
                return resource.response(to: request)
            }
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "-"])
                #expect(result.exitCode == 7, "\(result.stderr)")
                #expect(result.stderr.contains("no longer matches"), "\(result.stderr)")
                #expect(result.stderrLines.last?.contains("no longer matches") == true, "\(result.stderr)")
                #expect(result.stdoutBytes.count <= 700_000 && result.stdoutBytes == Array(old.prefix(result.stdoutBytes.count)))
                let ranges = server.requests("/f.bin").map { $0.header("Range") }
                #expect(ranges.count == 2, "\(ranges)")
                // From 64 KiB before the last byte written, which is not the last one sent: bytes received and not yet
                // read when the connection closed are lost with it.
                let written = result.stdoutBytes.count
                #expect(ranges.last == .some("bytes=\(max(0, written - 65_536))-"), "\(written) written: \(ranges)")
            }
        }
    }

    @Test func aDroppedStreamWithoutAStrongETagStopsRatherThanWriteAMix() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(600_000, seed: 302)
            var dropping = Resource(body: body, etag: "W/\"w\"")
            dropping.faults.dropAfterBytes = 200_000
            dropping.faults.dropOnRequests = 1
            server.serve("/f.bin", dropping)
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "-"])
                #expect(result.exitCode != 0)
                #expect(result.stderr.contains("no strong ETag to continue a stream safely"), "\(result.stderr)")
                // What was written is the file's beginning, and nothing else.
                #expect(result.stdoutBytes.count < body.count && result.stdoutBytes == Array(body.prefix(result.stdoutBytes.count)))
                #expect(server.requests("/f.bin").count == 1)
            }
        }
    }

    /// `--segments 4 -o -`: standard output is written in order, so one connection fetches it (as curl's `-o -`;
    /// aria2c has no `-o -`). One note on stderr says so instead of a silent single connection or a refusal of a
    /// pipe that works; `-q` says nothing, and without `--segments` there is nothing to explain.
    @Test func segmentsToStandardOutputSayOnceThatOneConnectionWritesItInOrder() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(3 << 20, seed: 306)
            server.serve("/f.bin", Resource(body: body, etag: "\"s\""))
            let note = "using one connection: standard output is written in order, first byte to last"
            try await Sandbox.with { box in
                for (flags, noted) in [(["--segments", "4"], true), (["-s", "4", "-q"], false), ([], false), (["--segments", "1"], false)] {
                    let before = server.requests("/f.bin").count
                    let result = try await box.run(["get", server.url("/f.bin"), "-o", "-", "--min-segment-size", "256K"] + flags)
                    #expect(result.exitCode == 0, "\(flags): \(result.stderr)")
                    #expect(result.stdoutBytes == body, "\(flags)")
                    #expect(result.stderrLines.filter { $0.contains(note) }.count == (noted ? 1 : 0), "\(flags): \(result.stderr)")
                    if flags.contains("-q") { #expect(result.stderr.isEmpty, "\(result.stderr)") }
                    let requests = server.requests("/f.bin").dropFirst(before)
                    #expect(requests.count == 1 && requests.first?.header("Range") == nil, "\(flags): one request for the whole file")
                }
            }
        }
    }
}
