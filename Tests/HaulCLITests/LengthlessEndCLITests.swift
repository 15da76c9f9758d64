import Foundation
import HaulTestSupport
import Testing

/// A server that never says its file's length: its 206s end in `/*`, and past the end it answers a bare 416 (no
/// `Content-Range`), its plain GET 503. curl `-C -` and wget `-c` finish such a file; so must Haul, fresh or
/// continuing a file of the user's, and never leave that file emptied.
@Suite struct LengthlessEndCLITests {
    static let body = TestData.bytes(200_000, seed: 141)

    func serveWithoutLength(_ server: TestServer) {
        server.route("/f.bin") { request in
            let body = Self.body
            guard let header = request.header("Range"), header.hasPrefix("bytes="),
                  let first = Int(header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false).first ?? "") else {
                return .text(503, "busy")
            }
            guard first < body.count else { return ResponsePlan(status: 416) }
            return ResponsePlan(status: 206, headers: [("Content-Range", "bytes \(first)-\(body.count - 1)/*")], body: Array(body[first...]))
        }
    }

    /// Fresh, and continuing the user's first 100,000 bytes (`-c`): the same complete file, and no other request
    /// than the ranges and the next byte's question.
    @Test(arguments: [false, true])
    func aBare416AfterALengthlessAnswerEndsTheFile(continuing: Bool) async throws {
        try await withTestServer { server in
            serveWithoutLength(server)
            try await Sandbox.with { box in
                let destination = box.path("f")
                if continuing { try Data(Self.body.prefix(100_000)).write(to: URL(fileURLWithPath: destination)) }
                let result = try await box.run(["get", server.url("/f.bin"), "-o", destination, "--retries", "1", "--retry-wait", "0"]
                                               + (continuing ? ["-c"] : []))
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(destination, expected: Self.body) == nil)
                #expect(!fileExists(destination + ".haul-part"))
                let asked = server.requests("/f.bin").map { $0.header("Range") ?? "none" }
                #expect(!asked.contains("none"), "no plain GET: \(asked)")
                #expect(asked.last == "bytes=200000-", "the last question is the next byte's: \(asked)")
            }
        }
    }
}
