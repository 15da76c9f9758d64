import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A batch's file interrupted over HTTP/2 (a real nginx, by ALPN) and then made stale before the same command runs
/// again: the file changed on the server, or the bytes held changed on disk. Over HTTP/2 as over HTTP/1.1, the rerun
/// ends with exactly the server's bytes and never a mix: the changed file's `If-Range` gets its whole new body, bytes
/// held that no longer match the server's are found by the overlap and fetched again, and a change below the overlap
/// (which no resume reads again) is refused by the list's checksum instead of published.
@Suite(.enabled(if: HTTPSNginx.enabled, "needs nginx and openssl (apt-get install nginx-light openssl)"))
struct HTTP2StaleResumeTests {
    /// How the interrupted download is made stale before the rerun.
    enum Staleness: CustomTestStringConvertible, Sendable {
        /// The server's file replaced by other bytes of the same length (a new ETag and date).
        case replacedOnServer
        /// One byte of the partial file flipped, this far (1…65,536) below the recorded offset: inside the overlap
        /// that a resume asks for again.
        case flippedInOverlap(below: Int)
        /// One byte of the partial file flipped this far below the overlap: bytes no resume reads again, which the
        /// server's validators vouch for; the list gives the file's checksum.
        case flippedBeforeOverlap(below: Int)

        var testDescription: String {
            switch self {
            case .replacedOnServer: "replaced on the server"
            case .flippedInOverlap(let below): "a byte flipped \(below) below the recorded offset"
            case .flippedBeforeOverlap(let below): "a byte flipped \(below) below the overlap"
            }
        }
    }

    /// Cases drawn at random (a fresh seed each run, printed on failure through the case's name).
    static let cases: [Staleness] = {
        var generator = SystemRandomNumberGenerator()
        return [
            .replacedOnServer,
            .flippedInOverlap(below: Int.random(in: 1...65_536, using: &generator)),
            .flippedInOverlap(below: 1),
            .flippedBeforeOverlap(below: Int.random(in: 1...(256 << 10), using: &generator)),
        ]
    }()

    @Test(arguments: cases)
    func aStaleInterruptedStreamEndsWithExactlyTheServersBytes(_ staleness: Staleness) async throws {
        try await HTTPSNginx.with(fileSize: 1 << 20) { nginx in
            let old = TestData.bytes(3 << 20, seed: 2500)
            try nginx.put("slow/big.bin", old)
            let small = try HTTP2CLITests.put(nginx, "small", count: 3, size: 10_000, seed: 2510)
            try await Sandbox.with { box in
                // An -i list, as aria2c's: the big file's checksum line only where the case needs it.
                var list = nginx.url("/slow/big.bin") + "\n"
                if case .flippedBeforeOverlap = staleness { list += "  checksum=sha-256=\(sha256Hex(old))\n" }
                list += small.keys.sorted().map { nginx.url($0) + "\n" }.joined()
                try list.write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let args = ["get", "-i", "list.txt", "-j", "4", "--dir", "D", "--cacert", nginx.certificates.caCertificate, "--json"]
                // Past 512 KiB, so that the overlap and the bytes before it are both whole.
                let held = try await killOnceRecorded(box, args, destinationSuffix: "/D/big.bin", atLeast: 512 << 10)
                let partial = box.path("D/big.bin.haul-part")
                #expect(!fileExists(box.path("D/big.bin")))

                var expected = old
                switch staleness {
                case .replacedOnServer:
                    expected = TestData.bytes(old.count, seed: 2501)
                    try nginx.put("slow/big.bin", expected)
                    // Another second for nginx's ETag (modification time and length) and Last-Modified.
                    let later = Date().addingTimeInterval(120)
                    try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: nginx.documentRoot + "/slow/big.bin")
                case .flippedInOverlap(let below):
                    try Self.flipByte(in: partial, at: held - below)
                case .flippedBeforeOverlap(let below):
                    try Self.flipByte(in: partial, at: resumeStart(held) - below)
                }
                // nginx logs the killed run's request once it notices the connection closed: wait for it.
                _ = await nginx.loggedRequests(.valid, uri: "/slow/big.bin")
                let before = nginx.accessLog().count
                let again = try await box.run(args, timeout: .seconds(60))
                let later = nginx.accessLog().dropFirst(before).filter { $0.uri == "/slow/big.bin" }
                #expect(!later.isEmpty && later.allSatisfy { $0.protocolVersion == "HTTP/2.0" }, "over HTTP/2: \(later)")
                for (path, body) in small {
                    #expect(contentMismatch(box.path("D/" + (path as NSString).lastPathComponent), expected: body) == nil)
                }
                let resume = later.first
                #expect(resume?.range == "bytes=\(resumeStart(held))-" && resume?.ifRange.isEmpty == false,
                        "the rest asked for with If-Range, from 64 KiB before the \(held) bytes held: \(later)")
                switch staleness {
                case .replacedOnServer:
                    // The validator no longer matches: the server sends the whole new file, and that is what is kept.
                    #expect(again.exitCode == 0, "\(again.stderr)")
                    #expect(resume?.status == 200, "\(later)")
                    #expect(contentMismatch(box.path("D/big.bin"), expected: expected) == nil, "must hold the new version only, never a mix")
                case .flippedInOverlap:
                    // The overlap differs from what is held: nothing held is kept, the whole file is fetched again.
                    #expect(again.exitCode == 0, "\(again.stderr)")
                    #expect(later.count >= 2 && later.dropFirst().contains { $0.range.isEmpty || $0.range == "bytes=0-" }, "\(later)")
                    #expect(contentMismatch(box.path("D/big.bin"), expected: expected) == nil, "exactly the server's bytes")
                case .flippedBeforeOverlap:
                    // The server vouches (206 to If-Range) that its file is unchanged and the overlap agrees, so the held
                    // bytes are continued, as curl -C -, wget -c and aria2c do; the checksum then finds the change, and
                    // the download is discarded, not published. The same command then fetches it whole.
                    #expect(resume?.status == 206, "\(later)")
                    #expect(again.exitCode == 5, "a checksum mismatch: \(again.exitCode) \(again.stderr)")
                    #expect(!fileExists(box.path("D/big.bin")) && !fileExists(partial))
                    let third = try await box.run(args, timeout: .seconds(60))
                    #expect(third.exitCode == 0, "\(third.stderr)")
                    #expect(contentMismatch(box.path("D/big.bin"), expected: expected) == nil, "exactly the server's bytes")
                }
            }
        }
    }

    /// Flips the bits of the byte at `offset` of the file at `path`, in place.
    static func flipByte(in path: String, at offset: Int) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: [~byte])
    }
}
