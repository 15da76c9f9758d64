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
}
