import Foundation
import HaulTestSupport
import Testing

/// Where Haul keeps its state, as a person sets it: a relative `HAUL_HOME` means the folder below the current one
/// for `haul get`, `haul add` and the daemon `haul add` starts (which runs in `/`); and the folder is private
/// (0700) from the moment anything of Haul's makes it, a daemon started by hand included.
@Suite struct HaulHomeCLITests {
    /// A relative name, `./name` and a nested one.
    static let relativeHomes = ["state", "./dot-state", "a/b/state"]

    @Test(arguments: relativeHomes)
    func aRelativeHomeIsTheFolderBelowTheCurrentOne(_ home: String) async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(5_000, seed: 281), etag: "\"h\""))
            try await Sandbox.with { box in
                let relative = ["HAUL_HOME": home]
                let fetched = try await box.start(["get", server.url("/f.bin"), "-o", "got.bin"], environment: relative).wait(timeout: .seconds(40))
                #expect(fetched.exitCode == 0, "\(fetched.stderr)")
                let expected = box.path(String(home.drop { $0 == "." || $0 == "/" }))
                var mode = stat()
                #expect(stat(expected, &mode) == 0 && mode.st_mode & 0o777 == 0o700, "HAUL_HOME is \(expected), private")

                let added = try await box.start(["add", server.url("/f.bin"), "-o", "added.bin"], environment: relative).wait(timeout: .seconds(40))
                let id = try #require(added.stdoutLines.first, "add failed: \(added.stderr)")
                let waited = try await box.start(["wait", id], environment: relative).wait(timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                #expect(contentMismatch(box.path("added.bin"), expected: TestData.bytes(5_000, seed: 281)) == nil)
                #expect(FileManager.default.fileExists(atPath: expected + "/daemon.log"), "the daemon kept its state where the client looks")
                let stopped = try await box.start(["daemon", "stop"], environment: relative).wait(timeout: .seconds(40))
                #expect(stopped.exitCode == 0, "\(stopped.stderr)")
                #expect(!FileManager.default.fileExists(atPath: "/" + String(home.drop { $0 == "." || $0 == "/" })), "nothing made at the root")
            }
        }
    }

    @Test func aDaemonStartedByHandMakesItsHomePrivate() async throws {
        try await Sandbox.with { box in
            let home = box.path("fresh-home")
            let daemon = try box.start(["daemon"], environment: ["HAUL_HOME": home])
            try await eventually("the daemon listens") {
                guard daemon.isRunning else { throw HarnessError("haul daemon exited: \(daemon.stderrSoFar())") }
                return daemon.stderrSoFar().contains("listening on")
            }
            var info = stat()
            #expect(stat(home, &info) == 0 && info.st_mode & 0o777 == 0o700, "mode \(String(info.st_mode & 0o777, radix: 8))")
            _ = try await box.start(["daemon", "stop"], environment: ["HAUL_HOME": home]).wait(timeout: .seconds(40))
            _ = try await daemon.wait(timeout: .seconds(20))
        }
    }
}
