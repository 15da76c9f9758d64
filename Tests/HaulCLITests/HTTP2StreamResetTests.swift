import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// HTTP/2 servers that reset streams (RST_STREAM, RFC 9113 §7), each as curl answers it:
/// - `REFUSED_STREAM` (Go's and h2o's servers past their stream limits): the server did no work on the request (§8.7),
///   so haul sends it again at once, without spending a retry;
/// - `HTTP_1_1_REQUIRED` (IIS, for authentication HTTP/2 cannot carry): the same request again over HTTP/1.1, at once;
/// - any other code mid-body: a failure retried from the bytes held, said with the code's name, and nothing published.
///
/// No server installed here resets streams on demand, so this one is a few lines of Python's `h2`.
@Suite(.enabled(if: MisbehavingHTTP2Server.enabled, "needs python3 with h2 (python3 -m pip install h2) and openssl"))
struct HTTP2StreamResetTests {
    @Test func aRefusedStreamIsSentAgainWithoutSpendingARetry() async throws {
        try await Sandbox.with { box in
            let server = try await MisbehavingHTTP2Server.start(in: box.path("h2"), .refuseEvery(2))
            defer { server.stop() }
            let bodies = try Self.serve(30, size: 3_000, seed: 3_700, from: server, listIn: box)
            // No retry at all allowed: a refused stream spending one would fail its download.
            _ = try await Self.fetchEveryFile(bodies, from: server, in: box, jobs: 8)
            let refused = server.logged("refused ")
            #expect(refused >= 10, "every second stream was refused: \(refused)")
        }
    }

    /// Files `f0.bin` … of their own bytes in the server's folder, and a list of their URLs at `list.txt`.
    static func serve(_ count: Int, size: Int, seed: UInt64, from server: MisbehavingHTTP2Server, listIn box: Sandbox) throws -> [String: [UInt8]] {
        var bodies: [String: [UInt8]] = [:]
        for index in 0..<count {
            let body = TestData.bytes(size + index * 7, seed: seed + UInt64(index))
            bodies["f\(index).bin"] = body
            try writeBytes(body, to: server.root + "/f\(index).bin")
        }
        try (bodies.keys.sorted().map { server.url("/" + $0) }.joined(separator: "\n") + "\n")
            .write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
        return bodies
    }

    /// `haul get -i list.txt` with no retry allowed, which must end with every file of `bodies` exactly.
    static func fetchEveryFile(_ bodies: [String: [UInt8]], from server: MisbehavingHTTP2Server, in box: Sandbox, jobs: Int) async throws -> HaulResult {
        let result = try await box.run(
            ["get", "-i", box.path("list.txt"), "-j", String(jobs), "--retries", "0", "--dir", "D", "--cacert", server.caCertificate, "--json"],
            timeout: .seconds(120))
        #expect(result.exitCode == 0, "\(result.stderr)")
        for (name, body) in bodies {
            #expect(contentMismatch(box.path("D/" + name), expected: body) == nil, "\(name)")
        }
        return result
    }

    @Test func aStreamTheServerWantsOverHTTP1IsSentAgainOverHTTP1() async throws {
        try await Sandbox.with { box in
            let server = try await MisbehavingHTTP2Server.start(in: box.path("h2"), .requireHTTP1)
            defer { server.stop() }
            let bodies = try Self.serve(12, size: 4_000, seed: 3_800, from: server, listIn: box)
            // No retry allowed: falling back must not spend one.
            let result = try await Self.fetchEveryFile(bodies, from: server, in: box, jobs: 4)
            // Asked over HTTP/2 first, by the downloads that started before the first answer; the later ones ask
            // over HTTP/1.1 at once.
            let refused = server.logged("http1-required ")
            #expect(refused >= 1 && refused <= 4, "\(refused) streams refused")
            #expect(server.logged("http1 ") >= bodies.count, "each file served over HTTP/1.1")
            let protocols = try HTTP2CLITests.finishedProtocols(result)
            #expect(protocols.count == bodies.count && protocols.allSatisfy { $0 == "HTTP/1.1" }, "\(protocols)")
        }
    }

    @Test func aStreamResetMidBodyFailsInWordsAndPublishesNothing() async throws {
        try await Sandbox.with { box in
            let server = try await MisbehavingHTTP2Server.start(in: box.path("h2"), .resetMidBody)
            defer { server.stop() }
            let bodies = try Self.serve(4, size: 6_000, seed: 3_900, from: server, listIn: box)
            let result = try await box.run(
                ["get", "-i", box.path("list.txt"), "-j", "4", "--retries", "1", "--dir", "D", "--cacert", server.caCertificate],
                timeout: .seconds(120))
            #expect(result.exitCode == 3, "\(result.stderr)")
            for name in bodies.keys { #expect(!fileExists(box.path("D/" + name)), "\(name) is never complete") }
            #expect(result.stderr.contains("was not closed cleanly: INTERNAL_ERROR"), "\(result.stderr)")
            #expect(!result.stderr.contains("StreamClosed") && !result.stderr.contains("HTTP2StreamID"), "no library description: \(result.stderr)")
            #expect(server.logged("reset ") >= bodies.count * 2, "each file asked again after its reset")
        }
    }
}
