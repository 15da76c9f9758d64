import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Whatever is at the name of a download's partial file (`DEST.haul-part`) when no record of this download knows
/// it: bytes someone may need are never removed without a word; what holds no bytes is replaced as before.
@Suite struct UnknownPartialFileCLITests {
    static let body = TestData.bytes(300_000, seed: 151)

    /// What was at `out.bin.haul-part` before the download.
    enum Found: String, CaseIterable, Sendable {
        /// A file of the user's that happens to have the name.
        case usersFile
        /// A download of another HAUL_HOME (same user), paused.
        case otherHomesPausedDownload
        /// An empty file: no bytes of anyone's.
        case emptyFile
        /// A link to a file of the user's elsewhere: the link goes, the file it names stays.
        case linkToAFile

        var holdsBytes: Bool { self == .usersFile || self == .otherHomesPausedDownload }
    }

    @Test(arguments: Found.allCases)
    func bytesAtThePartialNameAreNeverRemovedWithoutAWord(_ found: Found) async throws {
        try await withTestServer { server in
            var resource = Resource(body: Self.body, etag: "\"p1\"")
            if found == .otherHomesPausedDownload { resource.faults.throttleBytesPerSecond = 100_000 }
            server.serve("/f.bin", resource)
            try await Sandbox.with { box in
                let destination = box.path("out.bin"), partial = destination + ".haul-part"
                let mine = Array("notes of mine\n".utf8), elsewhere = box.path("elsewhere.txt")
                switch found {
                case .usersFile:
                    try Data(mine).write(to: URL(fileURLWithPath: partial))
                case .emptyFile:
                    try Data().write(to: URL(fileURLWithPath: partial))
                case .linkToAFile:
                    try Data(mine).write(to: URL(fileURLWithPath: elsewhere))
                    try FileManager.default.createSymbolicLink(atPath: partial, withDestinationPath: elsewhere)
                case .otherHomesPausedDownload:
                    let other = try box.start(["get", server.url("/f.bin"), "-o", destination, "--quiet"],
                                              environment: ["HAUL_HOME": box.path("other-home")])
                    try await signalWhen(other, SIGINT, "the other home's partial file holds bytes") { (fileSize(partial) ?? 0) >= 50_000 }
                    _ = try await other.wait(timeout: .seconds(10))
                    server.serve("/f.bin", Resource(body: Self.body, etag: "\"p1\""))
                }
                let before = (try? Data(contentsOf: URL(fileURLWithPath: partial))) ?? Data()
                let requests = server.requests("/f.bin").count
                let result = try await box.run(["get", server.url("/f.bin"), "-o", destination])
                if found.holdsBytes {
                    #expect(result.exitCode == 2, "\(result)")
                    #expect(result.stderr.contains("\(partial) is already there, and no download of this URL in this HAUL_HOME knows it"), "\(result.stderr)")
                    #expect(result.stderr.contains("move \(partial) away"), "\(result.stderr)")
                    #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
                    #expect((try? Data(contentsOf: URL(fileURLWithPath: partial))) == before, "the bytes at \(partial) are as they were")
                    #expect(!fileExists(destination))
                    #expect(server.requests("/f.bin").count == requests, "refused before any request")
                } else {
                    #expect(result.exitCode == 0, "\(result)")
                    #expect(contentMismatch(destination, expected: Self.body) == nil)
                    #expect(!fileExists(partial))
                    if found == .linkToAFile { #expect(contentMismatch(elsewhere, expected: mine) == nil, "the file the link named is untouched") }
                }
                if found == .otherHomesPausedDownload {
                    // The other home's download is still there to finish.
                    let resumed = try await box.start(["get", server.url("/f.bin"), "-o", destination, "--quiet"],
                                                      environment: ["HAUL_HOME": box.path("other-home")]).wait(timeout: .seconds(40))
                    #expect(resumed.exitCode == 0, "\(resumed)")
                    #expect(contentMismatch(destination, expected: Self.body) == nil)
                }
            }
        }
    }

    /// A destination named like a partial file, on the command line or in a list: refused before any request.
    @Test(arguments: ["x.haul-part", "X.HAUL-PART"])
    func aDestinationNamedLikeAPartialFileIsRefused(_ name: String) async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: Self.body, etag: "\"p2\""))
            try await Sandbox.with { box in
                let single = try await box.run(["get", server.url("/f.bin"), "-o", name])
                #expect(single.exitCode == 2, "\(single)")
                #expect(single.stderr.contains("the name Haul gives a download until it is complete"), "\(single.stderr)")
                let list = box.path("list.txt")
                try Data("\(server.url("/f.bin"))\n  out=\(name)\n\(server.url("/f.bin"))?b\n".utf8).write(to: URL(fileURLWithPath: list))
                let batch = try await box.run(["get", "-i", list, "--dir", box.path("d")])
                #expect(batch.exitCode == 2, "\(batch)")
                #expect(batch.stderr.contains("the name Haul gives a download until it is complete"), "\(batch.stderr)")
                #expect(server.requests("/f.bin").isEmpty)
                #expect(!fileExists(box.path(name)) && !fileExists(box.path("d/" + name)))
            }
        }
    }
}
