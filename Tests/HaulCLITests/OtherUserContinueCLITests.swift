#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// No other user can change the bytes Haul publishes: a file of theirs given to `--continue` is refused (`haul get`
/// and `haul add` alike), and Haul's own partial file cannot be opened by them while it downloads, whatever the umask.
/// A second local account plays the other user, in a shared sticky folder as `/tmp` is.
@Suite struct OtherUserContinueCLITests {
    static let needs: Bool = LocalUser.available && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")

    /// A folder every user may write, sticky (as `/tmp`), under the sandbox's root (opened to all for the walk).
    static func sharedFolder(_ box: Sandbox) throws -> String {
        #expect(chmod(box.root, 0o755) == 0)
        let shared = box.root + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        #expect(chmod(shared, 0o1777) == 0)
        return shared
    }

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// The probe's case: mallory writes the start of the file into the shared folder, and keeps a hard link to it.
    /// `-c` must not take it (she could change its bytes while Haul continues it, after Haul checked them).
    @Test(.enabled(if: needs, "needs root, useradd and runuser to act as a second user"))
    func aFileAnotherUserOwnsIsNeverContinued() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(2 << 20, seed: 7_501)
            server.serve("/big.bin", Resource(body: body, etag: "\"b\""))
            try await LocalUser.with { mallory in
                try await Sandbox.with { box in
                    let shared = try Self.sharedFolder(box), start = box.root + "/start"
                    try writeBytes(Array(body.prefix(500_000)), to: start)
                    #expect(chmod(start, 0o644) == 0)
                    try mallory.shell("cat '\(start)' > '\(shared)/f' && ln '\(shared)/f' '\(shared)/keep'")
                    let before = readBytes(shared + "/f")
                    let url = server.url("/big.bin"), checksum = "sha256:" + sha256Hex(body)
                    _ = try await startDaemon(box)
                    for command in [["get", "-c"], ["get", "--continue", "--segments", "4"], ["add", "-c"]] {
                        let result = try await box.run(command + [url, "-o", shared + "/f", "--checksum", checksum])
                        #expect(result.exitCode == 2, "\(command): \(result.stdout) \(result.stderr)")
                        #expect(result.stderrLines.count == 1, "\(command): \(result.stderr)")
                        #expect(result.stderr.contains("\(shared)/f belongs to another user (uid \(mallory.uid))") && result.stderr.contains("copy it"),
                                "\(command): \(result.stderr)")
                    }
                    #expect(readBytes(shared + "/f") == before, "her file is left as it was")
                    let names = try FileManager.default.contentsOfDirectory(atPath: shared).sorted()
                    #expect(names == ["f", "keep"], "nothing renamed or created: \(names)")
                    #expect(server.requests("/big.bin").isEmpty, "refused before any request")
                    #expect(box.records().isEmpty)
                    _ = try await box.run(["daemon", "stop"])
                }
            }
        }
    }

    /// Under a umask of 000 Haul's files used to be 0666 from their creation: any user could open the partial file
    /// and write into it after Haul had hashed those bytes. Now it is 0600 until it is renamed into place, then
    /// 0666 as the umask says; one connection, several, a batch and the daemon.
    @Test(.enabled(if: needs, "needs root, useradd and runuser to act as a second user"),
          arguments: ["single", "segmented", "batch", "daemon"])
    func anotherUserCannotWriteAPartialFileWhileItDownloads(_ kind: String) async throws {
        try await withTestServer { server in
            let body = TestData.bytes(3 << 20, seed: 7_502)
            var stalling = Resource(body: body, etag: "\"p\"")
            // Every response stops after 256 KiB and holds its connection: the download waits, writing nothing more,
            // for as long as the test looks at its partial file.
            stalling.faults.stallAfterBytes = 256 << 10
            server.serve("/p.bin", stalling)
            server.serve("/q.bin", Resource(body: TestData.bytes(10_000, seed: 7_503), etag: "\"q\""))
            try await LocalUser.with { mallory in
                try await Sandbox.with { box in
                    let shared = try Self.sharedFolder(box), haul = try HaulBinary.path()
                    let umask000 = "umask 000; exec \"$0\" \"$@\""
                    let url = server.url("/p.bin"), checksum = "sha256:" + sha256Hex(body)
                    let destination = kind == "batch" ? shared + "/B/p.bin" : shared + "/p.bin"
                    var arguments = ["get", url, "--stall-timeout", "300"]
                    arguments += kind == "batch" ? [server.url("/q.bin"), "--dir", shared + "/B"] : ["-o", destination, "--checksum", checksum]
                    if kind == "segmented" { arguments += ["--segments", "4", "--min-segment-size", "256K"] }
                    var run: HaulRun?
                    var id = ""
                    if kind == "daemon" {
                        _ = try box.start(["-c", umask000, haul, "daemon"], binary: "/bin/sh")
                        try await eventuallyAsync("the daemon answers") { try await box.run(["ls", "--no-autostart"]).exitCode == 0 }
                        let added = try await box.run(["add", url, "-o", destination, "--checksum", checksum, "--no-autostart"])
                        id = try #require(added.stdoutLines.first, "add failed: \(added.stderr)")
                    } else {
                        run = try box.start(["-c", umask000, haul] + arguments, binary: "/bin/sh")
                    }
                    let partial = destination + ".haul-part"
                    try await eventually("the download writes \(partial)", timeout: .seconds(60)) {
                        if let run, !run.isRunning { throw HarnessError("haul ended early: \(run.stderrSoFar())") }
                        return (fileSize(partial) ?? 0) >= 256 << 10
                    }
                    #expect(Self.mode(partial) == 0o600, "\(kind): \(String(Self.mode(partial) ?? 0, radix: 8))")
                    #expect(throws: (any Error).self, "\(kind): she cannot open the partial file to write into it") {
                        try mallory.shell("printf EVIL | dd of='\(partial)' bs=1 seek=1000 conv=notrunc 2>/dev/null")
                    }
                    // Let the download end: the server stops stalling, and the download resumes from its bytes.
                    server.serve("/p.bin", Resource(body: body, etag: "\"p\""))
                    if let run {
                        run.signal(SIGTERM)
                        #expect(try await run.wait().exitCode == 130)
                        let rerun = try await box.start(["-c", umask000, haul] + arguments, binary: "/bin/sh").wait(timeout: .seconds(60))
                        #expect(rerun.exitCode == 0, "\(kind): \(rerun.stderr)")
                    } else {
                        #expect(try await box.run(["pause", id]).exitCode == 0)
                        #expect(try await box.run(["resume", id]).exitCode == 0)
                        let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                        #expect(waited.exitCode == 0, "\(waited.stderr)")
                        _ = try await box.run(["daemon", "stop"])
                    }
                    #expect(contentMismatch(destination, expected: body) == nil, "\(kind)")
                    #expect(Self.mode(destination) == 0o666, "\(kind): published with the umask's mode, \(String(Self.mode(destination) ?? 0, radix: 8))")
                }
            }
        }
    }
}
#endif
