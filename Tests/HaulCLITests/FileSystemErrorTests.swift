import Foundation
import HaulTestSupport
import Testing

@Suite(.enabled(if: Tmpfs.available, "needs permission to mount a tmpfs (root)"))
struct FileSystemErrorTests {
    @Test func fullDiskKeepsStateAndTheSameCommandContinues() async throws {
        let body = TestData.bytes(3 << 20, seed: 11)
        try await withTestServer { server in
            server.serve("/f", Resource(body: body, etag: "\"disk\""))
            try await Sandbox.with { sandbox in
                let disk = sandbox.path("small")
                try #require(Tmpfs.mount(disk, size: "1m"))
                defer { Tmpfs.unmount(disk) }
                let target = disk + "/f.bin"
                let arguments = ["get", server.url("/f"), "-o", target, "--retries", "0", "--quiet"]

                let full = try await sandbox.run(arguments)
                #expect(full.exitCode == 6)
                #expect(full.stderrLines.count == 1)
                #expect(full.stderr.contains("no space left"))
                #expect(full.stderr.contains(target))
                #expect(!fileExists(target))
                let held = try #require(fileSize(target + ".haul-part"))
                let offset = try #require(sandbox.recordedOffset())
                #expect(offset > 0 && offset <= held)

                try #require(Tmpfs.remount(disk, options: "size=8m"))
                let again = try await sandbox.run(arguments)
                #expect(again.exitCode == 0, "\(again.stderr)")
                #expect(readBytes(target) == body)
                #expect(server.requests("/f").last?.header("Range") == "bytes=\(resumeStart(Int(offset)))-")
            }
        }
    }

    @Test func readOnlyDestinationFailsWithOneLineNamingThePath() async throws {
        try await withTestServer { server in
            server.serve("/f", Resource(body: TestData.bytes(10_000), etag: "\"ro\""))
            try await Sandbox.with { sandbox in
                let disk = sandbox.path("readonly")
                try #require(Tmpfs.mount(disk, size: "1m"))
                defer { Tmpfs.unmount(disk) }
                try #require(Tmpfs.remount(disk, options: "ro"))
                let result = try await sandbox.run(["get", server.url("/f"), "-o", disk + "/f.bin", "--quiet"])
                #expect(result.exitCode == 6)
                #expect(result.stderrLines.count == 1)
                #expect(result.stderr.contains(disk + "/f.bin"))
                #expect(result.stderr.contains("permission denied"))
            }
        }
    }
}
