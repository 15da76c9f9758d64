import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// How `haul get` names the files of a batch (`-i LIST`, several URLs), decided on the batch's first reading so that
/// the outcome never depends on where a line is: an `out=` name wins over a `--dir` download's name wherever the two
/// lines are; two entries saving to one file are refused before any request; an entry repeating another is said.
@Suite struct BatchNamingCLITests {
    /// Where the `out=` line naming another URL's own file name goes: after `fillers` other entries, or first. With
    /// `-j 1` the first part added holds two entries: the later positions are added after `f1.bin` was saved.
    struct Placement: Sendable, CustomTestStringConvertible {
        var fillers: Int
        var outLineFirst: Bool
        var testDescription: String { outLineFirst ? "out= line first, then \(fillers) others" : "out= line after \(fillers) others" }
    }

    @Test(arguments: [
        Placement(fillers: 0, outLineFirst: false), Placement(fillers: 3, outLineFirst: false),
        Placement(fillers: 300, outLineFirst: false), Placement(fillers: 0, outLineFirst: true),
        Placement(fillers: 300, outLineFirst: true),
    ])
    func anOutNameWinsOverADirDownloadsNameWhereverItsLineIs(_ placement: Placement) async throws {
        try await withTestServer { server in
            let one = TestData.bytes(20_000, seed: 9_301), two = TestData.bytes(30_000, seed: 9_302)
            let filler = TestData.bytes(100, seed: 9_303)
            server.serve("/files/f1.bin", Resource(body: one, etag: "\"1\""))
            server.serve("/files/f2.bin", Resource(body: two, etag: "\"2\""))
            server.serve("/filler.bin", Resource(body: filler, etag: "\"f\""))
            try await Sandbox.with { box in
                let plain = "\(server.url("/files/f1.bin"))\n"
                let named = "\(server.url("/files/f2.bin"))\n  out=f1.bin\n"
                let fillers = (0..<placement.fillers).map { "\(server.url("/filler.bin"))\n  out=u\($0).bin\n" }.joined()
                let text = placement.outLineFirst ? named + fillers + plain : plain + fillers + named
                try text.write(toFile: box.path("l.txt"), atomically: true, encoding: .utf8)
                let result = try await box.run(["get", "-q", "-i", box.path("l.txt"), "-j", "1", "--dir", box.path("d")], timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(!result.stderr.contains("already exists"), "\(result.stderr)")
                #expect(contentMismatch(box.path("d/f1.bin"), expected: two) == nil, "the out= line's file is named f1.bin")
                #expect(contentMismatch(box.path("d/f1 (1).bin"), expected: one) == nil, "the --dir download steps aside")
                let names = try FileManager.default.contentsOfDirectory(atPath: box.path("d"))
                #expect(names.count == placement.fillers + 2, "\(names.filter { !$0.hasPrefix("u") })")
            }
        }
    }

    /// Under `-N`, `-c` and `--overwrite` every entry's file is known before any request (the URL names it): two
    /// entries that save to one file are refused in one line naming both, wherever they are, and nothing is fetched.
    /// (Under `-nc` the second finds the name taken and fetches nothing, as wget's: HabitGapsCLITests.)
    @Test(arguments: ["-N", "-c", "--overwrite"])
    func twoEntriesSavingToOneFileAreRefusedBeforeAnyRequest(_ flag: String) async throws {
        try await withTestServer { server in
            server.serve("/a/same.bin", Resource(body: TestData.bytes(1_000, seed: 9_311), etag: "\"a\""))
            server.serve("/b/same.bin", Resource(body: TestData.bytes(1_000, seed: 9_312), etag: "\"b\""))
            server.serve("/files/f1.bin", Resource(body: TestData.bytes(1_000, seed: 9_313), etag: "\"1\""))
            server.serve("/files/f2.bin", Resource(body: TestData.bytes(1_000, seed: 9_314), etag: "\"2\""))
            try await Sandbox.with { box in
                let folder = box.path("d")
                let fillers = (0..<300).map { "\(server.url("/a/same.bin"))\n  out=u\($0).bin\n" }.joined()
                try ("\(server.url("/files/f1.bin"))\n" + fillers + "\(server.url("/files/f2.bin"))\n  out=f1.bin\n")
                    .write(toFile: box.path("l.txt"), atomically: true, encoding: .utf8)
                let listed = try await box.run(["get", flag, "-i", box.path("l.txt"), "--dir", folder])
                #expect(listed.exitCode == 2, "\(listed.stderr)")
                #expect(listed.stderrLines == ["haul: error: lines 1 and 602 of the URL list both save to \(folder)/f1.bin; give each URL a file of its own (out=NAME)"],
                        "\(listed.stderr)")

                let given = try await box.run(["get", flag, server.url("/a/same.bin"), server.url("/b/same.bin"), "--dir", folder])
                #expect(given.exitCode == 2, "\(given.stderr)")
                #expect(given.stderrLines.count == 1 && given.stderr.contains("URLs 1 and 2 of the command line both save to \(folder)/same.bin"),
                        "\(given.stderr)")
                for path in ["/a/same.bin", "/b/same.bin", "/files/f1.bin", "/files/f2.bin"] {
                    #expect(server.requests(path).isEmpty, "\(path) was asked for")
                }
                #expect(!fileExists(folder + "/f1.bin") && !fileExists(folder + "/same.bin"))
            }
        }
    }

    /// An entry repeating an earlier one's URL and destination is the same download: fetched once, as wget2 does,
    /// and said in one note naming how many and the first (wget and aria2c fetch a second copy beside the first).
    struct Repeats: Sendable, CustomTestStringConvertible {
        /// The entries: paths on the server, each with its `dir=` if any.
        var entries: [(path: String, dir: String?)]
        /// Given as arguments instead of in a list.
        var asArguments = false
        var quiet = false
        /// The note expected (after "haul: note: "), or none.
        var note: String?
        var finished: Int
        var testDescription: String { note ?? "no note" }
    }

    @Test(arguments: [
        Repeats(entries: [("/f1.bin", nil), ("/f1.bin", nil), ("/a/same.txt", nil), ("/b/same.txt", nil)],
                note: "line 2 of the URL list repeats an earlier URL for the same place; it is downloaded once", finished: 3),
        Repeats(entries: [("/a/same.txt", nil), ("/f1.bin", nil), ("/f1.bin", nil), ("/a/same.txt", nil), ("/f1.bin", nil)],
                note: "3 entries repeat an earlier URL for the same place (the first: line 3 of the URL list); each URL is downloaded once",
                finished: 2),
        Repeats(entries: [("/f1.bin", nil), ("/f1.bin", nil)], asArguments: true,
                note: "URL 2 of the command line repeats an earlier URL for the same place; it is downloaded once", finished: 1),
        Repeats(entries: [("/f1.bin", nil), ("/f1.bin", nil)], quiet: true, note: nil, finished: 1),
        Repeats(entries: [("/f1.bin", nil), ("/f1.bin", "e")], note: nil, finished: 2),
    ])
    func anEntryRepeatingAnotherIsFetchedOnceAndSaidSo(_ repeats: Repeats) async throws {
        try await withTestServer { server in
            server.serve("/f1.bin", Resource(body: TestData.bytes(5_000, seed: 9_321), etag: "\"1\""))
            server.serve("/a/same.txt", Resource(body: Array("from a\n".utf8), etag: "\"a\""))
            server.serve("/b/same.txt", Resource(body: Array("from b\n".utf8), etag: "\"b\""))
            try await Sandbox.with { box in
                var args = ["get", "--dir", box.path("d")] + (repeats.quiet ? ["-q"] : [])
                if repeats.asArguments {
                    args += repeats.entries.map { server.url($0.path) }
                } else {
                    let text = repeats.entries.map { "\(server.url($0.path))\n" + ($0.dir.map { "  dir=\($0)\n" } ?? "") }.joined()
                    try text.write(toFile: box.path("l.txt"), atomically: true, encoding: .utf8)
                    args += ["-i", box.path("l.txt")]
                }
                let result = try await box.run(args)
                #expect(result.exitCode == 0, "\(result.stderr)")
                let notes = result.stderrLines.filter { $0.hasPrefix("haul: note: ") }
                #expect(notes == (repeats.note.map { ["haul: note: " + $0] } ?? []), "\(result.stderr)")
                if !repeats.quiet { #expect(result.stderrLines.contains("\(repeats.finished) finished, 0 failed"), "\(result.stderr)") }
                let places = Set(repeats.entries.map { "\($0.path) \($0.dir ?? "")" })
                #expect(server.requests("/f1.bin").filter { $0.method == "GET" }.count == places.filter { $0.hasPrefix("/f1.bin") }.count)
                #expect(!fileExists(box.path("d/f1 (1).bin")), "no second copy of the same download")
            }
        }
    }

    /// After a redirect the file is named from the URL given (as wget, wget2 and curl -O -L name it), in a plain run
    /// and under -nc, -N and -c alike: each finds the file the plain run saved. The server's own name
    /// (Content-Disposition) still names a plain run's file.
    @Test(arguments: ["-nc", "-N", "-c"])
    func aRedirectedURLsFileIsNamedFromTheURLGivenInEveryMode(_ flag: String) async throws {
        try await withTestServer { server in
            let body = TestData.bytes(40_000, seed: 9_331)
            server.serve("/files/f2.bin", Resource(body: body, etag: "\"2\"", lastModified: "Wed, 01 Jan 2025 00:00:00 GMT"))
            server.route("/redir-same") { _ in redirectPlan(to: "/files/f2.bin") }
            server.serve("/files/named", Resource(body: body, etag: "\"n\"", contentDisposition: "attachment; filename=\"server-name.bin\""))
            server.route("/redir-named") { _ in redirectPlan(to: "/files/named") }
            try await Sandbox.with { box in
                let folder = box.path("d")
                let plain = try await box.run(["get", "-q", server.url("/redir-same"), "--dir", folder])
                #expect(plain.exitCode == 0, "\(plain.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["redir-same"])
                let fetched = server.requests("/files/f2.bin").count
                let again = try await box.run(["get", flag, server.url("/redir-same"), "--dir", folder])
                #expect(again.exitCode == 0, "\(again.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["redir-same"], "\(again.stderr)")
                #expect(contentMismatch(folder + "/redir-same", expected: body) == nil)
                if flag == "-nc" {
                    #expect(again.stderr.contains("already there"), "\(again.stderr)")
                    #expect(server.requests("/files/f2.bin").count == fetched, "-nc asks for nothing")
                }

                // In a batch alike; and Content-Disposition names the file still.
                try "\(server.url("/redir-same"))\n\(server.url("/redir-named"))\n".write(toFile: box.path("l.txt"), atomically: true, encoding: .utf8)
                let listed = try await box.run(["get", "-q", "-i", box.path("l.txt"), "--dir", box.path("e")])
                #expect(listed.exitCode == 0, "\(listed.stderr)")
                #expect(Set(try FileManager.default.contentsOfDirectory(atPath: box.path("e"))) == ["redir-same", "server-name.bin"])
            }
        }
    }

    /// `-c` with a list or several URLs continues each entry's file, as wget -c -i and aria2c -c -i do, by the rules
    /// of `haul get -c URL -o FILE`: a file another account could change is refused for that entry alone, left as it
    /// is. A rerun of the finished batch fetches nothing.
    @Test(arguments: [true, false])
    func continueAppliesToEachEntryOfABatch(_ fromList: Bool) async throws {
        try await withTestServer { server in
            let bodies = (0..<3).map { TestData.bytes(400_000, seed: UInt64(9_341 + $0)) }
            for (index, body) in bodies.enumerated() { server.serve("/c\(index).bin", Resource(body: body, etag: "\"c\(index)\"")) }
            try await Sandbox.with { box in
                let folder = box.path("d")
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                for (index, body) in bodies.enumerated() { try writeBytes(Array(body.prefix(200_000)), to: folder + "/c\(index).bin") }
                // Another account could change c2.bin's bytes: never continued.
                chmod(folder + "/c2.bin", 0o666)
                let urls = bodies.indices.map { server.url("/c\($0).bin") }
                var args = ["get", "-c", "-P", folder]
                if fromList {
                    try urls.map { $0 + "\n" }.joined().write(toFile: box.path("l.txt"), atomically: true, encoding: .utf8)
                    args += ["-i", box.path("l.txt")]
                } else {
                    args += urls
                }
                let result = try await box.run(args)
                #expect(result.exitCode == 2, "the refused entry's exit status: \(result.stderr)")
                #expect(result.stderrLines.contains("2 finished, 1 failed"), "\(result.stderr)")
                #expect(result.stderr.contains("c2.bin") && result.stderr.contains("copy it to a new file of your own"), "\(result.stderr)")
                for index in 0..<2 {
                    #expect(contentMismatch(folder + "/c\(index).bin", expected: bodies[index]) == nil)
                    let sent = server.requests("/c\(index).bin").map(\.bytesSent).reduce(0, +)
                    #expect(sent < bodies[index].count, "c\(index).bin was continued, not fetched whole: \(sent) bytes sent")
                }
                #expect(readBytes(folder + "/c2.bin") == Array(bodies[2].prefix(200_000)), "the refused file is left as it is")
                #expect(!fileExists(folder + "/c0 (1).bin") && !fileExists(folder + "/c0.bin.haul-part"))

                chmod(folder + "/c2.bin", 0o644)
                let counts = bodies.indices.map { server.requests("/c\($0).bin").count }
                let again = try await box.run(args)
                #expect(again.exitCode == 0, "\(again.stderr)")
                #expect(contentMismatch(folder + "/c2.bin", expected: bodies[2]) == nil)
                #expect(server.requests("/c0.bin").count == counts[0] && server.requests("/c1.bin").count == counts[1],
                        "the finished files are not asked for again")
            }
        }
    }
}
