import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A finished file keeps the server's time (its `Last-Modified`), as `curl -R` and wget do; `--no-remote-time`
/// leaves the time of the download.
@Suite struct RemoteTimeCLITests {
    static let lastModified = "Wed, 21 Oct 2015 07:28:00 GMT"
    static let remoteTime = 1_445_412_480

    /// The file's modification time in whole seconds since 1970.
    func modificationTime(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_mtim.tv_sec)
    }

    func serve(_ server: TestServer, _ path: String, size: Int) {
        server.serve(path, Resource(body: TestData.bytes(size, seed: 1401), etag: "\"t\"", lastModified: Self.lastModified))
    }

    @Test func getKeepsTheServersTimeUnlessToldNot() async throws {
        try await withTestServer { server in
            serve(server, "/file.bin", size: 100_000)
            try await Sandbox.with { box in
                let kept = try await box.run(["get", server.url("/file.bin"), "-o", "kept.bin"])
                #expect(kept.exitCode == 0, "\(kept)")
                #expect(modificationTime(box.path("kept.bin")) == Self.remoteTime)
                let local = try await box.run(["get", server.url("/file.bin"), "-o", "local.bin", "--no-remote-time"])
                #expect(local.exitCode == 0, "\(local)")
                let time = try #require(modificationTime(box.path("local.bin")))
                #expect(time > Self.remoteTime + 86_400 * 365, "the time of the download, not the server's: \(time)")
            }
        }
    }

    @Test func aSegmentedDownloadKeepsItToo() async throws {
        try await withTestServer { server in
            serve(server, "/big.bin", size: 4 << 20)
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/big.bin"), "-o", "big.bin", "--segments", "4", "--min-segment-size", "256K"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(server.requests("/big.bin").count > 1, "the file came over several connections")
                #expect(modificationTime(box.path("big.bin")) == Self.remoteTime)
            }
        }
    }

    @Test func theDaemonKeepsItAndNoRemoteTimeTravelsWithTheTask() async throws {
        try await withTestServer { server in
            serve(server, "/file.bin", size: 100_000)
            try await Sandbox.with { box in
                let daemon = try await startDaemon(box)
                let kept = try await box.run(["add", server.url("/file.bin"), "-o", "kept.bin", "--no-autostart"])
                let local = try await box.run(["add", server.url("/file.bin"), "-o", "local.bin", "--no-remote-time", "--no-autostart"])
                let ids = [kept, local].compactMap(\.stdoutLines.first)
                #expect(ids.count == 2, "\(kept) \(local)")
                let waited = try await box.run(["wait"] + ids + ["--no-autostart"])
                #expect(waited.exitCode == 0, "\(waited)")
                #expect(modificationTime(box.path("kept.bin")) == Self.remoteTime)
                #expect((modificationTime(box.path("local.bin")) ?? 0) > Self.remoteTime + 86_400 * 365)
                daemon.signal(SIGTERM)
                try await daemon.wait(timeout: .seconds(10))
            }
        }
    }

    @Test(.enabled(if: ExternalTools.nginxTestsEnabled, "nginx is not installed (in CI this fails: install nginx-light)"))
    func nginxsLastModifiedBecomesTheFilesTime() async throws {
        try await withNginx { nginx in
            try nginx.put("dated.bin", TestData.bytes(300_000, seed: 1402))
            // nginx sends the file's own time as Last-Modified: 2001-09-09 01:46:40 UTC.
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSince1970: 1_000_000_000)], ofItemAtPath: nginx.documentRoot + "/dated.bin")
            try await Sandbox.with { box in
                let result = try await box.run(["get", nginx.url("/dated.bin"), "-o", "dated.bin", "--quiet"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(modificationTime(box.path("dated.bin")) == 1_000_000_000)
            }
        }
    }
}
