import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `-i LIST` with aria2c's `out=` lines run again: after Ctrl-C the finished file counts as done and the other
/// resumes; a finished list is done; a file the list did not save is not taken over; two lines naming one file are
/// refused before anything is fetched.
@Suite struct ListOutNamesCLITests {
    @Test func aListWithOutNamesResumesAfterSIGINTAndARerunOfTheFinishedListIsDone() async throws {
        try await withTestServer { server in
            let small = TestData.bytes(50_000, seed: 9_101)
            let slow = TestData.bytes(400 * 1024, seed: 9_102)
            server.serve("/a.bin", Resource(body: small, etag: "\"a\""))
            var crawling = Resource(body: slow, etag: "\"slow\"")
            crawling.faults.throttleBytesPerSecond = 64 * 1024
            server.serve("/slow.bin", crawling)
            try await Sandbox.with { box in
                let list = box.path("l.txt")
                try "\(server.url("/a.bin"))\n  out=one.bin\n\(server.url("/slow.bin"))\n  out=two.bin\n"
                    .write(toFile: list, atomically: true, encoding: .utf8)
                let folder = box.path("d")
                let args = ["get", "-i", list, "--dir", folder]
                let first = try box.start(args)
                try await signalWhen(first, SIGINT, "one.bin saved and two.bin under way", timeout: .seconds(20)) {
                    FileManager.default.fileExists(atPath: folder + "/one.bin") && (fileSize(folder + "/two.bin.haul-part") ?? 0) >= 64 * 1024
                }
                let paused = try await first.wait(timeout: .seconds(10))
                #expect(paused.exitCode == 130, "\(paused.stderr)")
                #expect(paused.stderr.contains("run the same command again to resume"), "\(paused.stderr)")

                server.serve("/slow.bin", Resource(body: slow, etag: "\"slow\""))
                let requestsOfA = server.requests("/a.bin").count
                let again = try await box.run(args, timeout: .seconds(30))
                #expect(again.exitCode == 0, "the rerun resumes: \(again.stderr)")
                #expect(!again.stderr.contains("already exists"), "\(again.stderr)")
                #expect(contentMismatch(folder + "/one.bin", expected: small) == nil)
                #expect(contentMismatch(folder + "/two.bin", expected: slow) == nil)
                #expect(server.requests("/a.bin").count == requestsOfA, "one.bin was done and not asked for again")
                let resumedAt = server.requests("/slow.bin").last?.header("Range") ?? ""
                #expect(resumedAt.hasPrefix("bytes=") && !resumedAt.hasPrefix("bytes=0-"), "two.bin resumed: \(resumedAt)")

                // The finished list, run once more: done, nothing fetched.
                let counts = (server.requests("/a.bin").count, server.requests("/slow.bin").count)
                let done = try await box.run(args, timeout: .seconds(30))
                #expect(done.exitCode == 0, "\(done.stderr)")
                #expect(server.requests("/a.bin").count == counts.0 && server.requests("/slow.bin").count == counts.1)
            }
        }
    }

    @Test func aFileAtAnOutNameThatTheListDidNotSaveIsLeftAlone() async throws {
        try await withTestServer { server in
            server.serve("/a.bin", Resource(body: TestData.bytes(20_000, seed: 9_103), etag: "\"a\""))
            try await Sandbox.with { box in
                let list = box.path("l.txt")
                try "\(server.url("/a.bin"))\n  out=mine.txt\n".write(toFile: list, atomically: true, encoding: .utf8)
                try "my own notes\n".write(toFile: box.path("mine.txt"), atomically: true, encoding: .utf8)
                let result = try await box.run(["get", "-i", list])
                #expect(result.exitCode == 2, "\(result.stderr)")
                #expect(result.stderr.contains("mine.txt already exists") && result.stderr.contains("--overwrite"), "\(result.stderr)")
                #expect((try? String(contentsOfFile: box.path("mine.txt"), encoding: .utf8)) == "my own notes\n")
            }
        }
    }

    @Test func twoLinesNamingOneFileAreRefusedBeforeAnyDownload() async throws {
        try await withTestServer { server in
            server.serve("/a.bin", Resource(body: TestData.bytes(20_000, seed: 9_104), etag: "\"a\""))
            server.serve("/b.bin", Resource(body: TestData.bytes(20_000, seed: 9_105), etag: "\"b\""))
            try await Sandbox.with { box in
                let list = box.path("l.txt")
                try "\(server.url("/a.bin"))\n  out=same.bin\n# a comment\n\(server.url("/b.bin"))\n  out=same.bin\n"
                    .write(toFile: list, atomically: true, encoding: .utf8)
                let result = try await box.run(["get", "-i", list, "--dir", box.path("d")])
                #expect(result.exitCode == 2, "\(result.stderr)")
                #expect(result.stderrLines.count == 1, "\(result.stderr)")
                #expect(result.stderr.contains("lines 1 and 4 of the URL list both save to \(box.path("d"))/same.bin"), "\(result.stderr)")
                #expect(!result.stderr.contains("another download"), "\(result.stderr)")
                #expect(server.requests("/a.bin").isEmpty && server.requests("/b.bin").isEmpty)
                // Another folder (dir=, inside --dir) makes another file: taken as it is.
                try "\(server.url("/a.bin"))\n  out=same.bin\n\(server.url("/b.bin"))\n  dir=e\n  out=same.bin\n"
                    .write(toFile: list, atomically: true, encoding: .utf8)
                let apart = try await box.run(["get", "-i", list, "--dir", box.path("d")])
                #expect(apart.exitCode == 0, "\(apart.stderr)")
                #expect(fileExists(box.path("d/same.bin")) && fileExists(box.path("d/e/same.bin")))
            }
        }
    }
}
