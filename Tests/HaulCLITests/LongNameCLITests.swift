import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `-o NAME` with a name of up to 255 bytes, the most a file system takes: saved, as curl's `-o` and wget's `-O` save
/// it, though `NAME.haul-part` would not fit; and a download stopped under such a name is continued by a rerun.
@Suite struct LongNameCLITests {
    static let body = TestData.bytes(3 << 20, seed: 177)

    /// Names of 246 to 255 bytes (where `.haul-part` no longer fits), ASCII and with characters of several bytes.
    static let names: [String] = [
        String(repeating: "a", count: 246),
        String(repeating: "b", count: 250) + ".bin",
        String(repeating: "c", count: 255),
        String(repeating: "é", count: 120) + String(repeating: "x", count: 14),
        String(repeating: "日", count: 85),
    ]

    @Test(arguments: names)
    func aNameOfUpTo255BytesIsSaved(_ name: String) async throws {
        #expect(name.utf8.count <= 255 && name.utf8.count + ".haul-part".utf8.count > 255)
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: Array(Self.body.prefix(100_000)), etag: "\"l1\""))
            try await Sandbox.with { box in
                let destination = box.path(name)
                let result = try await box.run(["get", server.url("/f.bin"), "-o", destination])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(destination, expected: Array(Self.body.prefix(100_000))) == nil)
                let left = try FileManager.default.contentsOfDirectory(atPath: box.path("")).filter { $0.hasSuffix(".haul-part") }
                #expect(left.isEmpty, "\(left)")
            }
        }
    }

    /// A folder that takes no new file (`/proc`): the one line names the file asked for, whatever its partial
    /// file's name (shortened, for a long name), never the partial file.
    @Test(arguments: ["short.bin", String(repeating: "p", count: 250)])
    func aFolderThatTakesNoFileIsSaidOfTheNameAskedFor(_ name: String) async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: Array(Self.body.prefix(1_000)), etag: "\"l3\""))
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "/proc/" + name])
                #expect(result.exitCode != 0)
                #expect(result.stderr.contains("cannot save /proc/\(name): /proc takes no new files"), "\(result.stderr)")
                #expect(!result.stderr.contains("haul-part") && !result.stderr.contains("~"), "\(result.stderr)")
            }
        }
    }

    @Test func aStoppedDownloadUnderALongNameIsContinued() async throws {
        try await withTestServer { server in
            var resource = Resource(body: Self.body, etag: "\"l2\"")
            resource.faults.throttleBytesPerSecond = 1 << 20
            server.serve("/f.bin", resource)
            try await Sandbox.with { box in
                let destination = box.path(String(repeating: "n", count: 250))
                let args = ["get", server.url("/f.bin"), "-o", destination, "--quiet"]
                let partialFiles = { @Sendable in (try? FileManager.default.contentsOfDirectory(atPath: box.path(""))) ?? [] }
                let first = try box.start(args)
                try await signalWhen(first, SIGKILL, "a partial file holds bytes and a checkpoint is recorded") {
                    partialFiles().contains { $0.hasSuffix(".haul-part") } && (box.recordedOffset() ?? 0) > 0
                }
                _ = try await first.wait(timeout: .seconds(10))
                let partial = try #require(partialFiles().first { $0.hasSuffix(".haul-part") })
                #expect(partial.utf8.count <= 255, "\(partial)")
                #expect(!fileExists(destination))
                server.serve("/f.bin", Resource(body: Self.body, etag: "\"l2\""))
                let before = server.requests("/f.bin").count
                let second = try await box.run(args)
                #expect(second.exitCode == 0, "\(second.stderr)")
                #expect(contentMismatch(destination, expected: Self.body) == nil)
                let resumed = Array(server.requests("/f.bin").dropFirst(before))
                #expect(resumed.first?.header("Range")?.hasPrefix("bytes=") == true, "continued, not fetched again: \(resumed.map(\.headers))")
                #expect(resumed.first?.header("If-Range") == "\"l2\"")
                #expect(!partialFiles().contains { $0.hasSuffix(".haul-part") })
            }
        }
    }
}
