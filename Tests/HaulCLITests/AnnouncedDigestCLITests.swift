import Crypto
import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A script that checks `$?` never gets 0 with bytes that fail a digest: the server's own (RFC 9530), checked on
/// standard output and a FIFO as on a file and on the whole-file 206 servers answer `bytes=0-` with; and
/// `--checksum` beside `-N`, whose kept file must have it too (else it is downloaded again, as aria2c's
/// `--conditional-get --checksum` does), in `haul get` and through the daemon.
@Suite struct AnnouncedDigestCLITests {
    static let body = TestData.bytes(300_000, seed: 91)

    static func field(_ bytes: [UInt8]) -> String {
        "sha-256=:\(Data(SHA256.hash(data: Data(bytes))).base64EncodedString()):"
    }

    static func hex(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: Data(bytes)).map { String(format: "%02x", $0) }.joined()
    }

    /// `body` with `name: digest` on every answer; `ranges: false` answers 200 to any request.
    static func resource(_ name: String, of described: [UInt8], ranges: Bool = true) -> Resource {
        var resource = Resource(body: body, etag: "\"a\"")
        resource.extraHeaders = [(name, field(described))]
        resource.faults.ignoreRange = !ranges
        return resource
    }

    /// Reads `fifo` to its end into `output` in a `cat` of its own, as a reader in a pipeline would.
    static func startReader(_ fifo: String, into output: String) throws -> Process {
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/sh")
        reader.arguments = ["-c", "exec cat \"$0\" > \"$1\"", fifo, output]
        try reader.run()
        return reader
    }

    @Test func aStreamWhoseBytesLackTheAnnouncedDigestEndsWithExit5() async throws {
        try await withTestServer { server in
            let wrong = Array(Self.body.dropLast())
            server.serve("/repr-wrong", Self.resource("Repr-Digest", of: wrong))
            server.serve("/content-wrong", Self.resource("Content-Digest", of: wrong, ranges: false))
            server.serve("/repr-right", Self.resource("Repr-Digest", of: Self.body))
            server.serve("/content-right", Self.resource("Content-Digest", of: Self.body, ranges: false))
            try await Sandbox.with { box in
                let fifo = box.path("pipe")
                #expect(mkfifo(fifo, 0o600) == 0)
                for path in ["/repr-wrong", "/content-wrong", "/repr-right", "/content-right"] {
                    let failing = path.hasSuffix("wrong")
                    // Standard output: every byte written, then the one line and exit 5.
                    let piped = try await box.run(["get", server.url(path), "-o", "-"])
                    #expect(piped.exitCode == (failing ? 5 : 0), "\(path): \(piped.stderr)")
                    #expect(piped.stdoutBytes == Self.body, "\(path)")
                    // A FIFO read by another process.
                    let output = box.path("out\(path.dropFirst())")
                    let reader = try Self.startReader(fifo, into: output)
                    let fed = try await box.run(["get", server.url(path), "-o", fifo])
                    reader.waitUntilExit()
                    #expect(fed.exitCode == (failing ? 5 : 0), "\(path): \(fed.stderr)")
                    #expect(FileManager.default.contents(atPath: output) == Data(Self.body))
                    for (result, target) in [(piped, "standard output"), (fed, fifo)] where failing {
                        // One line (after "downloading … to …"), the last.
                        #expect(result.stderrLines.filter { $0.hasPrefix("haul: ") }.count == 1, "one line: \(result.stderr)")
                        #expect(result.stderrLines.last?.hasPrefix("haul: error: the bytes written to") == true, "\(result.stderr)")
                        #expect(result.stderr.contains("the bytes written to \(target) do not have the digest the server announced (sha256 "), "\(result.stderr)")
                        #expect(result.stderr.contains("cannot be taken back"), "\(result.stderr)")
                    }
                }
                // --checksum on a stream says the same of bytes it cannot take back.
                let checked = try await box.run(["get", server.url("/repr-right"), "-o", "-", "--checksum", "sha256:" + Self.hex(wrong)])
                #expect(checked.exitCode == 5 && checked.stderr.contains("cannot be taken back"), "\(checked.stderr)")
            }
        }
    }

    /// nginx, Apache and S3 answer Haul's `Range: bytes=0-` with a 206 of `bytes 0-(N-1)/N`: the whole file, whose
    /// `Content-Digest` is the file's, as a 200's is.
    @Test func aWholeFileRangesContentDigestBindsTheFile() async throws {
        try await withTestServer { server in
            server.serve("/wrong", Self.resource("Content-Digest", of: Array(Self.body.dropLast())))
            server.serve("/right", Self.resource("Content-Digest", of: Self.body))
            try await Sandbox.with { box in
                let wrong = try await box.run(["get", server.url("/wrong"), "-o", "w.bin"])
                #expect(wrong.exitCode == 5, "\(wrong.stderr)")
                #expect(wrong.stderr.contains("does not have the digest the server announced"), "\(wrong.stderr)")
                #expect(!fileExists(box.path("w.bin")) && box.workContents().isEmpty, "\(box.workContents())")
                #expect(server.requests("/wrong").map { $0.header("Range") } == ["bytes=0-"])
                let right = try await box.run(["get", server.url("/right"), "-o", "r.bin"])
                #expect(right.exitCode == 0, "\(right.stderr)")
                #expect(contentMismatch(box.path("r.bin"), expected: Self.body) == nil)
            }
        }
    }

    /// A file `-N` would keep (newer than the server's copy, of its length) is kept with `--checksum` only when it
    /// has that checksum; one that does not is downloaded again and replaced once the new file has it; a server whose
    /// file does not have it either leaves the old one as it was, with exit 5.
    @Test func dashNWithAChecksumNeverKeepsAFileThatFailsIt() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: Self.body, etag: "\"n\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"))
            let good = "sha256:" + Self.hex(Self.body)
            let mine = TestData.bytes(Self.body.count, seed: 92)
            try await Sandbox.with { box in
                func place(_ bytes: [UInt8], _ name: String) throws {
                    try writeBytes(bytes, to: box.path(name))
                    try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_900_000_000)], ofItemAtPath: box.path(name))
                }
                // Without --checksum the newer local file is kept, as wget keeps it.
                try place(mine, "plain.bin")
                let plain = try await box.run(["get", server.url("/f.bin"), "-N", "-o", "plain.bin"])
                #expect(plain.exitCode == 0 && plain.stderr.contains("is up to date"), "\(plain.stderr)")
                #expect(contentMismatch(box.path("plain.bin"), expected: mine) == nil)

                try place(mine, "f.bin")
                let fetched = try await box.run(["get", server.url("/f.bin"), "-N", "--checksum", good, "-o", "f.bin"])
                #expect(fetched.exitCode == 0, "\(fetched.stderr)")
                #expect(fetched.stderr.contains("does not have the sha256 asked for; downloading it again"), "\(fetched.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: Self.body) == nil, "the server's copy replaced it")

                try place(Self.body, "kept.bin")
                let kept = try await box.run(["get", server.url("/f.bin"), "-N", "--checksum", good, "-o", "kept.bin"])
                #expect(kept.exitCode == 0 && kept.stderr.contains("is up to date") && kept.stderr.contains("sha256 verified"), "\(kept.stderr)")

                try place(mine, "bad.bin")
                let unreachable = try await box.run(["get", server.url("/f.bin"), "-N", "--checksum", "sha256:" + Self.hex([1, 2, 3]), "-o", "bad.bin"])
                #expect(unreachable.exitCode == 5, "\(unreachable.stderr)")
                #expect(contentMismatch(box.path("bad.bin"), expected: mine) == nil, "left as it was")

                // The same through the daemon.
                try place(mine, "d.bin")
                _ = try await startDaemon(box)
                let added = try await box.run(["add", server.url("/f.bin"), "-N", "--checksum", good, "-o", box.path("d.bin"), "--no-autostart"])
                let id = try #require(added.stdoutLines.first, "\(added.stderr)")
                let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                #expect(contentMismatch(box.path("d.bin"), expected: Self.body) == nil)
                try place(mine, "e.bin")
                let failing = try await box.run(["add", server.url("/f.bin"), "-N", "--checksum", "sha256:" + Self.hex([1, 2, 3]), "-o", box.path("e.bin"), "--no-autostart"])
                let failingID = try #require(failing.stdoutLines.first, "\(failing.stderr)")
                let failed = try await box.run(["wait", failingID, "--no-autostart"], timeout: .seconds(60))
                #expect(failed.exitCode == 5, "\(failed.stderr)")
                #expect(contentMismatch(box.path("e.bin"), expected: mine) == nil, "left as it was")
            }
        }
    }
}
