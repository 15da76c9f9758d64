import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// How `haul get` names the files of a batch (`-i LIST`, several URLs), decided on the batch's first reading so that
/// the outcome never depends on where a line is: an `out=` name wins over a `--dir` download's name wherever the two
/// lines are; two entries saving to one file are refused before any request.
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

    /// Under `-nc`, `-N` and `--overwrite` every entry's file is known before any request (the URL names it):
    /// two entries that save to one file are refused in one line naming both, wherever they are, and nothing is fetched.
    @Test(arguments: ["-nc", "-N", "--overwrite"])
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
}
