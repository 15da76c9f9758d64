import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Integrity from the command line: standard output and special destinations, `--continue` edge cases,
/// one owner per partial, private state and secrets that stay secret.
@Suite struct IntegrityCLITests {
    @Test func dashOStreamsToStandardOutputAndKeepsNoState() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(700_000, seed: 120)
            server.serve("/f.bin", Resource(body: body, etag: "\"o\""))
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "-"])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(result.stdoutBytes == body)
                #expect(box.workContents().isEmpty, "\(box.workContents())")
                #expect(box.records().isEmpty)
            }
        }
    }

    @Test func devNullIsNeitherRefusedNorReplaced() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(200_000, seed: 121), etag: "\"n\""))
            try await Sandbox.with { box in
                for extra in [[], ["--overwrite"]] {
                    let result = try await box.run(["get", server.url("/f.bin"), "-o", "/dev/null"] + extra)
                    #expect(result.exitCode == 0, "\(extra): \(result.stderr)")
                    var info = stat()
                    #expect(lstat("/dev/null", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR, "/dev/null is no longer a device")
                }
                #expect(!fileExists("/dev/null.haul-part"))
            }
        }
    }

    @Test func continueOnAnEmptyFileIsAFreshStart() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(300_000, seed: 122)
            server.serve("/f.bin", Resource(body: body, etag: "\"e\""))
            try await Sandbox.with { box in
                try writeBytes([], to: box.path("f.bin"))
                let result = try await box.run(["get", server.url("/f.bin"), "-o", box.path("f.bin"), "--continue"])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: body) == nil)
            }
        }
    }

    @Test func continueWithoutRangeSupportSaysSo() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(300_000, seed: 123)
            var resource = Resource(body: body, etag: "\"r\"")
            resource.faults.ignoreRange = true
            server.serve("/f.bin", resource)
            try await Sandbox.with { box in
                let prefix = Array(body.prefix(100_000))
                try writeBytes(prefix, to: box.path("f.bin"))
                let result = try await box.run(["get", server.url("/f.bin"), "-o", box.path("f.bin"), "--continue"])
                #expect(result.exitCode != 0)
                #expect(result.stderr.contains("does not support byte ranges"), "\(result.stderr)")
                #expect(!result.stderr.contains("does not match"), "\(result.stderr)")
                #expect(readBytes(box.path("f.bin")) == prefix)
            }
        }
    }

    @Test func aPartialOfAnotherURLExits2NamingIt() async throws {
        try await withTestServer { server in
            let a = TestData.bytes(1 << 20, seed: 124), b = TestData.bytes(1 << 20, seed: 125)
            var dropping = Resource(body: a, etag: "\"a\"")
            dropping.faults.dropAfterBytes = 300_000
            dropping.faults.dropOnRequests = 1
            server.serve("/a.bin", dropping)
            server.serve("/b.bin", Resource(body: b, etag: "\"b\""))
            try await Sandbox.with { box in
                let first = try await box.run(["get", server.url("/a.bin"), "-o", "f.bin", "--retries", "0", "--segments", "1"])
                #expect(first.exitCode == 3, "\(first.stderr)")
                let second = try await box.run(["get", server.url("/b.bin"), "-o", "f.bin"])
                #expect(second.exitCode == 2, "\(second.stderr)")
                #expect(second.stderr.contains(server.url("/a.bin")), "\(second.stderr)")
                #expect(!fileExists(box.path("f.bin")))
                let replaced = try await box.run(["get", server.url("/b.bin"), "-o", "f.bin", "--overwrite"])
                #expect(replaced.exitCode == 0, "\(replaced.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: b) == nil)
            }
        }
    }

    @Test func stateIsPrivateWhateverTheUmaskAndSecretsAreMasked() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(400_000, seed: 126)
            var dropping = Resource(body: body, etag: "\"s\"")
            dropping.faults.dropAfterBytes = 100_000
            dropping.faults.dropOnRequests = 1
            server.serve("/f.bin", dropping)
            try await Sandbox.with { box in
                let secretURL = server.url("/f.bin").replacingOccurrences(of: "http://", with: "http://alice:hunter2@")
                let missing = server.url("/missing").replacingOccurrences(of: "http://", with: "http://alice:hunter2@")
                let haul = try HaulBinary.path()
                // A permissive umask: Haul's state must still be private.
                let script = "umask 000; exec \"$0\" \"$@\""
                let result = try await box.start(
                    ["-c", script, haul, "get", secretURL, "-o", "f.bin", "-H", "Authorization: Bearer topsecret", "--retries", "0", "--segments", "1", "-v"],
                    binary: "/bin/sh").wait()
                #expect(result.exitCode == 3, "\(result.stderr)")
                let failed = try await box.start(["-c", script, haul, "get", missing, "-o", "g.bin", "--json"], binary: "/bin/sh").wait()
                #expect(failed.exitCode == 4)
                for text in [result.stderr, failed.stderr, failed.stdout] {
                    #expect(!text.contains("hunter2"), "\(text)")
                    #expect(!text.contains("topsecret"), "\(text)")
                }
                #expect(failed.stderr.contains("***@"), "\(failed.stderr)")
                var files: [String] = []
                let enumerator = FileManager.default.enumerator(atPath: box.home)
                while let name = enumerator?.nextObject() as? String { files.append(name) }
                #expect(!files.isEmpty)
                for name in [""] + files {
                    var info = stat()
                    let path = box.home + (name.isEmpty ? "" : "/" + name)
                    guard lstat(path, &info) == 0 else { continue }
                    let mode = info.st_mode & 0o777
                    if (info.st_mode & S_IFMT) == S_IFDIR {
                        #expect(mode == 0o700, "\(path) is \(String(mode, radix: 8))")
                    } else if (info.st_mode & S_IFMT) == S_IFREG {
                        #expect(mode == 0o600, "\(path) is \(String(mode, radix: 8))")
                    }
                }
                // The partial beside the destination is private until it is published, whatever the umask.
                var partial = stat()
                #expect(lstat(box.path("f.bin.haul-part"), &partial) == 0 && partial.st_mode & 0o777 == 0o600)
            }
        }
    }

    @Test(arguments: ["http://127.0.0.1:99999/x", "http://[::1]:99999/x"])
    func aRedirectToAPortAbove65535IsAnHTTPErrorNotACrash(_ location: String) async throws {
        try await withTestServer { server in
            server.route("/r") { _ in redirectPlan(to: location) }
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/r"), "-o", "f.bin"])
                #expect(!result.signalled, "haul crashed: \(result.stderr)")
                #expect(result.exitCode == 4, "\(result.stderr)")
                #expect(result.stderrLines.count == 1, "\(result.stderr)")
            }
        }
    }

    @Test func theDaemonsStateIsPrivateWhateverTheUmaskAndKeepsSecretsOutOfItsLog() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(300_000, seed: 127)
            server.serve("/f.bin", Resource(body: body, etag: "\"d\""))
            try await Sandbox.with { box in
                let haul = try HaulBinary.path()
                let daemon = try box.start(["-c", "umask 000; exec \"$0\" \"$@\" 2>\"$HAUL_HOME/daemon-stderr.log\"", haul, "daemon"], binary: "/bin/sh")
                try await eventually("the daemon listens") {
                    guard daemon.isRunning else { throw HarnessError("haul daemon exited") }
                    return (try? String(contentsOfFile: box.home + "/daemon-stderr.log", encoding: .utf8))?.contains("listening on") == true
                }
                let secretURL = server.url("/f.bin").replacingOccurrences(of: "http://", with: "http://alice:hunter2@")
                let added = try await box.run(["add", secretURL, "-o", "f.bin", "-H", "Authorization: Bearer topsecret", "--no-autostart"])
                #expect(added.exitCode == 0, "\(added.stderr)")
                let id = try #require(added.stdoutLines.first)
                let waited = try await box.run(["wait", id, "--no-autostart"])
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: body) == nil)
                let listed = try await box.run(["ls", "--json", "--no-autostart"])
                let plain = try await box.run(["ls", "--no-autostart"])
                daemon.signal(SIGTERM)
                _ = try await daemon.wait(timeout: .seconds(10))
                let log = (try? String(contentsOfFile: box.home + "/daemon-stderr.log", encoding: .utf8)) ?? ""
                for text in [listed.stdout, plain.stdout, log, added.stderr, waited.stderr] {
                    #expect(!text.contains("hunter2") && !text.contains("topsecret"), "\(text)")
                }
                var checked = 0
                let enumerator = FileManager.default.enumerator(atPath: box.home)
                while let name = enumerator?.nextObject() as? String {
                    // The test's own capture of the daemon's stderr was made by the shell, not by Haul.
                    if name == "daemon-stderr.log" { continue }
                    var info = stat()
                    let path = box.home + "/" + name
                    guard lstat(path, &info) == 0 else { continue }
                    let mode = info.st_mode & 0o777
                    switch info.st_mode & S_IFMT {
                    case S_IFDIR: #expect(mode == 0o700, "\(name) is \(String(mode, radix: 8))")
                    case S_IFREG: #expect(mode == 0o600, "\(name) is \(String(mode, radix: 8))")
                    default: break
                    }
                    checked += 1
                }
                #expect(checked >= 5, "the daemon's state was not found under HAUL_HOME")
            }
        }
    }

    @Test func dashUAndNetrcAuthenticateAndAnOpenNetrcIsRefused() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(40_000, seed: 128)
            server.serve("/f.bin", Resource(body: body, etag: "\"a\""))
            try await Sandbox.with { box in
                let expected = "Basic " + Data("bob:pa:ss".utf8).base64EncodedString()
                let withUser = try await box.run(["get", server.url("/f.bin"), "-o", "a.bin", "-u", "bob:pa:ss"])
                #expect(withUser.exitCode == 0, "\(withUser.stderr)")
                #expect(server.requests("/f.bin").last?.header("Authorization") == expected)
                let netrc = box.path("netrc")
                try writeBytes(Array("machine 127.0.0.1 login bob password pa:ss\n".utf8), to: netrc)
                #expect(chmod(netrc, 0o644) == 0)
                let open = try await box.run(["get", server.url("/f.bin"), "-o", "b.bin", "--netrc-file", netrc])
                #expect(open.exitCode == 2, "\(open.stderr)")
                #expect(open.stderr.contains("chmod 600"), "\(open.stderr)")
                #expect(chmod(netrc, 0o600) == 0)
                let count = server.requests("/f.bin").count
                let closed = try await box.run(["get", server.url("/f.bin"), "-o", "b.bin", "--netrc-file", netrc])
                #expect(closed.exitCode == 0, "\(closed.stderr)")
                #expect(server.requests("/f.bin").dropFirst(count).first?.header("Authorization") == expected)
                for result in [withUser, open, closed] { #expect(!result.stderr.contains("pa:ss")) }
            }
        }
    }

    /// A download discarded for its checksum leaves nothing that blocks the next run: run again (the file deleted or
    /// never there), it fails the same way (exit 5), never as "another haul process is already downloading" (exit
    /// 8); with the right checksum it finishes. Segmented and whole, into a folder (whose chosen name is remembered)
    /// and to a path.
    @Test(arguments: [["--dir", "out"], ["-o", "out/f.bin"]], [400_000, 3_000_000])
    func aChecksumMismatchIsExit5AgainOnEveryRerun(destination: [String], size: Int) async throws {
        try await withTestServer { server in
            let body = TestData.bytes(size, seed: 131)
            server.serve("/f.bin", Resource(body: body, etag: "\"c\""))
            try await Sandbox.with { box in
                let wrong = "sha256:" + String(repeating: "0", count: 64)
                let args = ["get", server.url("/f.bin"), "--checksum", wrong, "--segments", size > 1_000_000 ? "4" : "1",
                            "--min-segment-size", "256K"] + destination
                for run in 1...3 {
                    let result = try await box.run(args)
                    #expect(result.exitCode == 5, "run \(run): \(result.stderr)")
                    #expect(result.stderr.contains("checksum mismatch"), "run \(run): \(result.stderr)")
                    #expect(!fileExists(box.path("out/f.bin")), "run \(run) left the file")
                    try? FileManager.default.removeItem(atPath: box.path("out/f.bin"))
                }
                var right = args
                right[3] = "sha256:" + sha256Hex(body)
                let good = try await box.run(right)
                #expect(good.exitCode == 0, "\(good.stderr)")
                #expect(contentMismatch(box.path("out/f.bin"), expected: body) == nil)
            }
        }
    }
}
