import Crypto
import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// The server's own digest (RFC 9530) binds what a download delivers wherever `--checksum` does: a file before it is
/// published, and the bytes a stream wrote (standard output, a FIFO, a device) once they are all written. A
/// `Repr-Digest` is the whole file's on any answer; a `Content-Digest` only on an answer whose content is the whole
/// file (a 200, or a 206 of `bytes 0-(N-1)/N`), never on a part, whose content is only that part.
@Suite struct AnnouncedDigestTests {
    enum Field: String, CaseIterable, Sendable { case repr = "Repr-Digest", content = "Content-Digest" }

    /// How the server answers: a 200 (it ignores ranges); the whole file as a 206 (nginx, Apache, S3 to `bytes=0-`);
    /// that answer dropped part-way and the rest asked for (a 206 of a part); the file split over four connections.
    enum Answers: String, CaseIterable, Sendable { case twoHundred, wholeRange, resumed, segmented }

    /// Which digests are right: all; the whole file's wrong (every Repr-Digest, the Content-Digest of whole answers);
    /// only the Content-Digests of parts wrong (they are never compared with the file).
    enum Digests: String, CaseIterable, Sendable { case right, wrongForTheFile, wrongOnlyOnParts }

    static let body = TestData.bytes(300_000, seed: 77)

    static func field(_ bytes: ArraySlice<UInt8>) -> String {
        "sha-256=:\(Data(SHA256.hash(data: Data(bytes))).base64EncodedString()):"
    }

    /// Serves `body` at `path` with `field` on each answer as `digests` say.
    static func serve(_ server: TestServer, _ path: String, _ field: Field, _ answers: Answers, _ digests: Digests) {
        server.route(path) { request in
            var resource = Resource(body: body, etag: "\"d\"")
            if answers == .twoHundred { resource.faults.ignoreRange = true }
            if answers == .resumed, request.index == 0 { resource.faults.dropAfterBytes = 200_000 }
            // The bytes this answer carries, as the responder will pick them.
            var first = 0, last = body.count - 1
            if answers != .twoHundred, let range = request.header("Range")?.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false),
               range.count == 2, let start = Int(range[0]) {
                first = start
                last = min(Int(range[1]) ?? last, last)
            }
            let whole = first == 0 && last == body.count - 1
            var described = field == .repr ? body[...] : body[first...last]
            let wrong = digests == .wrongForTheFile && (field == .repr || whole) || digests == .wrongOnlyOnParts && field == .content && !whole
            if wrong { described = described.dropLast() }
            resource.extraHeaders = [(field.rawValue, Self.field(described))]
            return resource.response(to: request)
        }
    }

    static func options(_ url: String, _ destination: DownloadOptions.Destination, _ answers: Answers) throws -> DownloadOptions {
        var options = try testOptions(url, destination)
        if answers == .segmented {
            options.segments = 4
            options.minSegmentSize = 64 * 1024
        }
        return options
    }

    @Test(arguments: Field.allCases, Answers.allCases)
    func aFileIsPublishedOnlyWithTheDigestTheServerAnnounced(_ field: Field, _ answers: Answers) async throws {
        try await withHarness { server, engine, sandbox in
            for digests in Digests.allCases where !(field == .repr && digests == .wrongOnlyOnParts) {
                let path = "/\(digests)", name = "\(digests).bin"
                Self.serve(server, path, field, answers, digests)
                let options = try Self.options(server.url(path), .file(sandbox.path(name)), answers)
                if digests == .wrongForTheFile {
                    let error = await expectHaulError(.checksum) { _ = try await engine.download(options) }
                    #expect(error?.message.contains("does not have the digest the server announced") == true, "\(digests): \(error?.message ?? "")")
                    #expect(!sandbox.exists(name) && !sandbox.exists(name + ".haul-part"), "\(digests): nothing published or kept")
                } else {
                    try await engine.download(options)
                    #expect(sandbox.contents(name) == Self.body, "\(digests)")
                }
                let ranges = server.requests(path).map { $0.header("Range") }
                switch answers {
                case .wholeRange: #expect(ranges == ["bytes=0-"], "\(ranges)")
                // The rest asked for: a part, as a rule. Under load the first answer's bytes may all still be unread
                // when its connection drops (they are then lost with it), and the second asks from 0 again.
                case .resumed: #expect(ranges.count == 2 && ranges.last??.hasPrefix("bytes=") == true, "\(ranges)")
                case .segmented: #expect(ranges.count > 1, "\(ranges)")
                case .twoHundred: break
                }
            }
        }
    }

    /// A stream (here `/dev/null`; standard output and a FIFO from the command line) is checked at its end: exit 5,
    /// in words that say the bytes could not be taken back. `--checksum` beside it is checked too.
    @Test(arguments: Field.allCases, [Answers.twoHundred, .resumed])
    func aStreamEndsWithAChecksumErrorWhenItsBytesLackTheAnnouncedDigest(_ field: Field, _ answers: Answers) async throws {
        try await withHarness { server, engine, sandbox in
            for digests in Digests.allCases where !(field == .repr && digests == .wrongOnlyOnParts) {
                for withChecksum in [false, true] {
                    let path = "/\(digests)-\(withChecksum)"
                    Self.serve(server, path, field, answers, digests)
                    var options = try Self.options(server.url(path), .file("/dev/null"), answers)
                    if withChecksum { options.checksum = try Checksum(parsing: "sha256:" + sha256Hex(Self.body)) }
                    let log = EventLog()
                    if digests == .wrongForTheFile {
                        let error = await expectHaulError(.checksum) { _ = try await engine.download(options, events: log.append) }
                        #expect(error?.message.contains("the bytes written to /dev/null do not have the digest the server announced") == true, "\(error?.message ?? "")")
                        #expect(error?.message.contains("cannot be taken back") == true, "\(error?.message ?? "")")
                    } else {
                        let result = try await engine.download(options, events: log.append)
                        #expect(result.bytes == Int64(Self.body.count), "\(digests)")
                    }
                    let requests = server.requests(path)
                    #expect(requests.count == (answers == .resumed ? 2 : 1), "\(requests.map { $0.header("Range") })")
                    #expect(sandbox.records().isEmpty)
                }
            }
        }
    }
}
