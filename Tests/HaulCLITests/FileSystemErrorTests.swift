import Foundation
import HaulTestSupport
import Testing

/// A small tmpfs: a real full disk and a real read-only file system. Needs root (CI runs as root).
private enum SmallDisk {
    static func run(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    static func mount(_ directory: String, size: String) -> Bool {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return run(["mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory])
    }

    static func remount(_ directory: String, options: String) -> Bool {
        run(["mount", "-o", "remount,\(options)", directory])
    }

    static func unmount(_ directory: String) { _ = run(["umount", "-l", directory]) }

    /// Whether this machine lets the tests mount a tmpfs.
    static let available: Bool = {
        let probe = NSTemporaryDirectory() + "haul-probe-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: probe) }
        guard mount(probe, size: "64k") else { return false }
        unmount(probe)
        return true
    }()
}

@Suite(.enabled(if: SmallDisk.available, "needs permission to mount a tmpfs (root)"))
struct FileSystemErrorTests {
    @Test func fullDiskKeepsStateAndTheSameCommandContinues() async throws {
        let body = TestData.bytes(3 << 20, seed: 11)
        try await withTestServer { server in
            server.serve("/f", Resource(body: body, etag: "\"disk\""))
            try await Sandbox.with { sandbox in
                let disk = sandbox.path("small")
                try #require(SmallDisk.mount(disk, size: "1m"))
                defer { SmallDisk.unmount(disk) }
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

                try #require(SmallDisk.remount(disk, options: "size=8m"))
                let again = try await sandbox.run(arguments)
                #expect(again.exitCode == 0, "\(again.stderr)")
                #expect(readBytes(target) == body)
                #expect(server.requests("/f").last?.header("Range") == "bytes=\(offset)-")
            }
        }
    }

    @Test func readOnlyDestinationFailsWithOneLineNamingThePath() async throws {
        try await withTestServer { server in
            server.serve("/f", Resource(body: TestData.bytes(10_000), etag: "\"ro\""))
            try await Sandbox.with { sandbox in
                let disk = sandbox.path("readonly")
                try #require(SmallDisk.mount(disk, size: "1m"))
                defer { SmallDisk.unmount(disk) }
                try #require(SmallDisk.remount(disk, options: "ro"))
                let result = try await sandbox.run(["get", server.url("/f"), "-o", disk + "/f.bin", "--quiet"])
                #expect(result.exitCode == 6)
                #expect(result.stderrLines.count == 1)
                #expect(result.stderr.contains(disk + "/f.bin"))
                #expect(result.stderr.contains("permission denied"))
            }
        }
    }
}
