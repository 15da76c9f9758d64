#if os(Linux)
import Crypto
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// `haul rm` with a real daemon: only a file a task wrote itself goes, while its name still holds that very file, and
/// what was kept, given back or deleted is said, one line each; a file given to `-c` is never deleted, by `rm` or by a
/// checksum that does not match (`haul get -c`), but given back as it was.
@Suite struct RemoveFilesCLITests {
    func tasks(_ box: Sandbox) async throws -> [[String: Any]] {
        let result = try await box.run(["ls", "--json", "--no-autostart"])
        #expect(result.exitCode == 0, "ls: \(result.stderr)")
        return try result.jsonEvents()
    }

    func write(_ text: String, _ path: String) throws { try writeBytes(Array(text.utf8), to: path) }

    @Test func rmDeleteFileDeletesOnlyWhatTheTaskPublishedAndSaysWhatItKept() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(30_000, seed: 71)
            for name in ["pub", "nc", "n", "later", "linked"] {
                var resource = Resource(body: body, etag: "\"\(name)\"")
                resource.lastModified = "Mon, 01 Jan 2001 00:00:00 GMT"
                server.serve("/\(name)", resource)
            }
            try await Sandbox.with { box in
                let daemon = try await DaemonHarness.start(box)
                try write("my thesis", box.path("thesis.pdf"))
                // As long as the server's file and newer: -N keeps it (wget fetches a file of another length).
                try writeBytes([UInt8](repeating: 9, count: body.count), to: box.path("old.iso"))
                #expect(utime(box.path("old.iso"), nil) == 0)
                try FileManager.default.createDirectory(atPath: box.path("sub"), withIntermediateDirectories: true)
                try FileManager.default.createDirectory(atPath: box.path("vdir"), withIntermediateDirectories: true)
                try write("important", box.path("vdir/file"))
                var ids: [String] = []
                for (flags, url, path) in [([], "/pub", "pub.bin"), (["-nc"], "/nc", "thesis.pdf"), (["-N"], "/n", "old.iso"),
                                           ([], "/later", "later.bin"), ([], "/linked", "sub/file")] {
                    let added = try await box.run(["add", "--no-autostart"] + flags + [server.url(url), "-o", box.path(path)])
                    #expect(added.exitCode == 0, "add \(url): \(added.stderr)")
                    ids.append(try #require(added.stdoutLines.first))
                }
                let waited = try await box.run(["wait", "--no-autostart"] + ids)
                #expect(waited.exitCode == 0, "wait: \(waited.stderr)")
                #expect(readBytes(box.path("pub.bin")) == body && readBytes(box.path("sub/file")) == body)
                // The user's own file saved at a task's name; a task's folder swapped for the user's link to another.
                try write("my notes", box.path("later.new"))
                #expect(rename(box.path("later.new"), box.path("later.bin")) == 0)
                #expect(rename(box.path("sub"), box.path("sub.real")) == 0)
                #expect(symlink(box.path("vdir"), box.path("sub")) == 0)

                let removed = try await box.run(["rm", "--all", "--delete-file", "--no-autostart"])
                #expect(removed.exitCode == 0, "rm: \(removed)")
                let lines = Set(removed.stdoutLines)
                #expect(lines == [
                    "deleted \(box.path("pub.bin"))",
                    "kept \(box.path("thesis.pdf")): haul did not write it",
                    "kept \(box.path("old.iso")): haul did not write it",
                    "kept \(box.path("later.bin")): it is no longer the file haul saved",
                    "kept \(box.path("sub/file")): it is no longer the file haul saved",
                ], "\(removed.stdout)")
                #expect(!fileExists(box.path("pub.bin")))
                #expect(readBytes(box.path("thesis.pdf")) == Array("my thesis".utf8))
                #expect(readBytes(box.path("old.iso")) == [UInt8](repeating: 9, count: body.count))
                #expect(readBytes(box.path("later.bin")) == Array("my notes".utf8))
                #expect(readBytes(box.path("vdir/file")) == Array("important".utf8))
                #expect(readBytes(box.path("sub.real/file")) == body)
                #expect(try await tasks(box).isEmpty)
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, box)
            }
        }
    }

    /// `haul add -c` adopts the user's file (it becomes the partial file once checked); `pause` then `rm` gives it back
    /// at its name as it was, and says so. A paused task whose partial file was replaced by the user's keeps that file.
    @Test func rmOfAPausedTaskGivesBackAContinueFileAndKeepsAForeignPartial() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(3_000_000, seed: 72)
            var slow = Resource(body: body, etag: "\"s\"")
            slow.faults.throttleBytesPerSecond = 300_000
            // Never done, however slowly this test looks: each answer stops there (a retry goes on further).
            slow.faults.stallAfterBytes = 1_300_000
            server.serve("/h", slow)
            server.serve("/e", slow)
            try await Sandbox.with { box in
                let daemon = try await DaemonHarness.start(box)
                let mine = Array(body.prefix(1_000_000))
                try writeBytes(mine, to: box.path("h"))
                let continued = try await box.run(["add", "--no-autostart", "-c", server.url("/h"), "-o", box.path("h")])
                let other = try await box.run(["add", "--no-autostart", server.url("/e"), "-o", box.path("e")])
                let h = try #require(continued.stdoutLines.first), e = try #require(other.stdoutLines.first)
                try await eventuallyAsync("both past where they started") {
                    let all = try await tasks(box)
                    let bytes = { (id: String) in (all.first { $0["id"] as? String == id }?["bytes"] as? NSNumber)?.intValue ?? 0 }
                    return bytes(h) > 1_100_000 && bytes(e) > 100_000
                }
                #expect(try await box.run(["pause", h, e, "--no-autostart"]).exitCode == 0)
                try await eventuallyAsync("both paused") { try await tasks(box).allSatisfy { $0["state"] as? String == "paused" } }
                #expect(fileExists(box.path("h.haul-part")) && !fileExists(box.path("h")), "the user's h is the partial file now")
                #expect(unlink(box.path("e.haul-part")) == 0)
                try write("my data", box.path("e.haul-part"))

                let removed = try await box.run(["rm", h, e, "--no-autostart"])
                #expect(removed.exitCode == 0, "rm: \(removed)")
                #expect(Set(removed.stdoutLines) == [
                    "gave back the file given to --continue: \(box.path("h")) is back as it was (1000000 bytes)",
                    "kept \(box.path("e.haul-part")): it is no longer the partial file haul wrote",
                ], "\(removed.stdout)")
                #expect(readBytes(box.path("h")) == mine, "the user's 1,000,000 bytes, as they were")
                #expect(!fileExists(box.path("h.haul-part")))
                #expect(readBytes(box.path("e.haul-part")) == Array("my data".utf8))
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, box)
            }
        }
    }

    /// `haul get -c` whose finished file fails `--checksum` (the user's bytes were wrong before the 64 KiB compared) or
    /// the server's own `Repr-Digest` (the server is wrong): exit 5, and the user's file is back as it was.
    @Test func getContinueWithAMismatchGivesTheFileBack() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(1_500_000, seed: 73)
            server.serve("/f", Resource(body: body, etag: "\"f\""))
            var wrong = Resource(body: body, etag: "\"w\"")
            wrong.extraHeaders = [("Repr-Digest", "sha-256=:\(Data(SHA256.hash(data: [1, 2, 3])).base64EncodedString()):")]
            server.serve("/w", wrong)
            try await Sandbox.with { box in
                for (n, length) in [70_000, 500_000, 1_000_000].enumerated() {
                    var mine = Array(body.prefix(length))
                    mine[100] ^= 0xFF
                    try writeBytes(mine, to: box.path("g\(n)"))
                    let checked = try await box.run(["get", "-q", "-c", "--checksum", "sha256:" + sha256Hex(body), server.url("/f"), "-o", box.path("g\(n)")])
                    #expect(checked.exitCode == 5, "\(checked)")
                    #expect(readBytes(box.path("g\(n)")) == mine, "--checksum, \(length) bytes: the user's file as it was")
                    #expect(checked.stderr.contains("\(box.path("g\(n)")) is back as it was (\(length) bytes)"), "\(checked.stderr)")
                    #expect(checked.stderrLines.count == 1, "\(checked.stderr)")

                    let right = Array(body.prefix(length))
                    try writeBytes(right, to: box.path("r\(n)"))
                    let digest = try await box.run(["get", "-q", "-c", server.url("/w"), "-o", box.path("r\(n)")])
                    #expect(digest.exitCode == 5, "\(digest)")
                    #expect(readBytes(box.path("r\(n)")) == right, "Repr-Digest, \(length) bytes: the user's file as it was")
                    #expect(!fileExists(box.path("r\(n).haul-part")) && !fileExists(box.path("g\(n).haul-part")))
                }
            }
        }
    }
}
#endif
