import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// More of what curl, wget and aria2c users type, done as those tools do it (docs/compatibility.md): the redirect
/// limit, curl's rules for `-H 'Name:'` and `-H 'Name;'`, URLs without a scheme, wget's `-nc`, and a standard output
/// closed by the reader (`| head`).
@Suite struct HabitGapsCLITests {
    /// `--max-redirs N` (curl) and `--max-redirect N` (wget): N redirects are followed and no more are asked for;
    /// the one line said when the limit is hit names the option. Without it, Haul's 10.
    @Test func theRedirectLimitIsCurlsAndWgetsOption() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(20_000, seed: 260)
            server.serve("/end.bin", Resource(body: body, etag: "\"r\""))
            // /hop/0 → /hop/1 → … → /hop/11 → /end.bin: 12 redirects.
            for hop in 0..<12 {
                let next = hop == 11 ? "/end.bin" : "/hop/\(hop + 1)"
                server.route("/hop/\(hop)") { _ in ResponsePlan(status: 302, headers: [("Location", next)]) }
            }
            try await Sandbox.with { box in
                let limited = try await box.run(["get", server.url("/hop/9"), "-o", "a.bin", "--max-redirs", "2"])
                #expect(limited.exitCode == 4, "\(limited.stderr)")
                #expect(limited.stderrLines.count == 1 && limited.stderr.contains("--max-redirs"), "\(limited.stderr)")
                #expect(server.requests("/hop/11").count == 1 && server.requests("/end.bin").isEmpty, "a redirect past the limit was followed")
                #expect(!fileExists(box.path("a.bin")))

                let enough = try await box.run(["get", server.url("/hop/9"), "-o", "b.bin", "--max-redirect=3"])
                #expect(enough.exitCode == 0, "\(enough.stderr)")
                #expect(contentMismatch(box.path("b.bin"), expected: body) == nil)

                let none = try await box.run(["get", server.url("/hop/11"), "-o", "c.bin", "--max-redirs", "0"])
                #expect(none.exitCode == 4 && none.stderrLines.count == 1 && none.stderr.contains("--max-redirs"), "\(none.stderr)")

                let byDefault = try await box.run(["get", server.url("/hop/0"), "-o", "d.bin"])
                #expect(byDefault.exitCode == 4 && byDefault.stderr.contains("stopped after 10 redirects"), "\(byDefault.stderr)")
                let raised = try await box.run(["get", server.url("/hop/0"), "-o", "d.bin", "--max-redirs", "12"])
                #expect(raised.exitCode == 0, "\(raised.stderr)")
                #expect(contentMismatch(box.path("d.bin"), expected: body) == nil)

                let negative = try await box.run(["get", server.url("/hop/0"), "-o", "e.bin", "--max-redirs", "-1"])
                #expect(negative.exitCode == 2 && negative.stderrLines.count == 1 && negative.stderr.contains("--max-redirs"), "\(negative.stderr)")
            }
        }
    }

    /// `haul get 127.0.0.1:PORT/f` as curl and wget take it: http://. In `get`, `add` and an `-i` list; a word that is
    /// clearly a path is still refused in one line, and a schemeless URL's password is never printed.
    @Test func aURLWithoutASchemeIsHTTP() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(50_000, seed: 261)
            server.serve("/s/f.bin", Resource(body: body, etag: "\"s\""))
            server.serve("/s/g.bin", Resource(body: body, etag: "\"g\""))
            server.route("/s/private") { _ in .text(401, "no", headers: [("WWW-Authenticate", "Basic realm=\"x\"")]) }
            let bare = String(server.url("/s/f.bin").dropFirst("http://".count))
            try await Sandbox.with { box in
                let got = try await box.run(["get", bare, "-o", "a.bin"])
                #expect(got.exitCode == 0, "\(got.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: body) == nil)
                // curl's -O and wget's -c with the URL as the only word.
                let named = try await box.run(["get", "-O", bare, "--dir", "named"])
                #expect(named.exitCode == 0 && contentMismatch(box.path("named/f.bin"), expected: body) == nil, "\(named.stderr)")
                try writeBytes(Array(body.prefix(20_000)), to: box.path("f.bin"))
                let continued = try await box.run(["get", "-c", bare])
                #expect(continued.exitCode == 0 && contentMismatch(box.path("f.bin"), expected: body) == nil, "\(continued.stderr)")

                try "\(String(server.url("/s/g.bin").dropFirst("http://".count)))\n".write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let listed = try await box.run(["get", "-i", "list.txt", "--dir", "listed"])
                #expect(listed.exitCode == 0 && contentMismatch(box.path("listed/g.bin"), expected: body) == nil, "\(listed.stderr)")

                // A word that names a file here is the list it holds, most likely: said, not looked up as a host.
                let asList = try await box.run(["get", "list.txt"])
                #expect(asList.exitCode == 2 && asList.stderr.contains("-i list.txt"), "\(asList.stderr)")
                for word in ["./f.bin", "/tmp/f.bin"] {
                    let path = try await box.run(["get", word])
                    #expect(path.exitCode == 2 && path.stderrLines.count == 1 && path.stderr.contains("is not a URL"), "\(word): \(path.stderr)")
                }
                try "\(bare)\n./local/file\n".write(toFile: box.path("bad.txt"), atomically: true, encoding: .utf8)
                let badList = try await box.run(["get", "-i", "bad.txt", "--dir", "bad"])
                #expect(badList.exitCode == 2 && badList.stderr.contains("line 2"), "\(badList.stderr)")
                #expect(!fileExists(box.path("bad/f.bin")), "nothing is fetched from a list refused")

                let secret = "alice:SEKRETPW@" + String(server.url("/s/private").dropFirst("http://".count))
                let refused = try await box.run(["get", secret, "-o", "p.bin", "-v"])
                #expect(refused.exitCode == 4, "\(refused.stderr)")
                #expect(server.requests("/s/private").last?.header("Authorization") != nil, "the userinfo is Basic authentication")
                #expect(!(refused.stderr + refused.stdout).contains("SEKRETPW"), "\(refused.stderr)")

                let added = try await box.run(["add", bare, "-o", "added.bin"])
                #expect(added.exitCode == 0, "\(added.stderr)")
                let id = try #require(added.stdoutLines.first)
                let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                #expect(contentMismatch(box.path("added.bin"), expected: body) == nil)
            }
        }
    }

    /// curl's rules: `-H 'Name:'` sends nothing by that name, not even the header Haul would make itself
    /// (User-Agent, Accept-Encoding, the Cookie of -b, the Authorization of -u or the URL); `-H 'Name;'` sends it
    /// empty; `-A ''` and `-e ''` send none. A header given with a value is sent as given.
    @Test func aHeaderWithNothingAfterItsColonIsLeftOut() async throws {
        try await withTestServer { server in
            server.serve("/h.bin", Resource(body: TestData.bytes(5_000, seed: 262), etag: "\"h\""))
            try await Sandbox.with { box in
                let url = server.url("/h.bin").replacingOccurrences(of: "http://", with: "http://u:pw@")
                let result = try await box.run([
                    "get", url, "-o", "a.bin", "-H", "User-Agent:", "-H", "Accept-Encoding:", "-H", "Accept:", "-H", "X-Empty;",
                    "-b", "a=b", "-H", "Cookie:", "-H", "Authorization:", "-H", "X-Kept: 1", "-H", "X-Kept:", "-e", "http://ref.example/",
                    "-H", "Referer:",
                ])
                #expect(result.exitCode == 0, "\(result.stderr)")
                let request = try #require(server.requests("/h.bin").last)
                for name in ["User-Agent", "Accept-Encoding", "Accept", "Cookie", "Authorization", "Referer"] {
                    #expect(request.headerValues(name).isEmpty, "\(name) was sent: \(request.headers)")
                }
                #expect(request.headerValues("X-Empty") == [""], "\(request.headers)")
                #expect(request.headerValues("X-Kept") == ["1"], "\(request.headers)")

                let blank = try await box.run(["get", server.url("/h.bin"), "-o", "b.bin", "-A", "", "-e", ""])
                #expect(blank.exitCode == 0, "\(blank.stderr)")
                let plain = try #require(server.requests("/h.bin").last)
                #expect(plain.headerValues("User-Agent").isEmpty && plain.headerValues("Referer").isEmpty, "\(plain.headers)")
                #expect(plain.header("Accept-Encoding") == "identity")

                let host = try await box.run(["get", server.url("/h.bin"), "-o", "c.bin", "-H", "Host:"])
                #expect(host.exitCode == 2 && host.stderrLines.count == 1 && host.stderr.contains("Host"), "\(host.stderr)")
            }
        }
    }

    /// wget's `-nc`: a name already taken (a file, a link, a folder) is left as it is, nothing is fetched, and it is
    /// a success said in one line; a free name is downloaded, for one URL and in a list.
    @Test func noClobberKeepsWhatIsThereAndFetchesTheRest() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(40_000, seed: 263)
            for name in ["kept.bin", "new.bin", "link.bin", "dir.bin", "listed.bin"] {
                server.serve("/nc/\(name)", Resource(body: body, etag: "\"\(name)\""))
            }
            try await Sandbox.with { box in
                try writeBytes([1, 2, 3], to: box.path("kept.bin"))
                let kept = try await box.run(["get", "-nc", server.url("/nc/kept.bin")])
                #expect(kept.exitCode == 0, "\(kept.stderr)")
                #expect(kept.stderrLines.count == 1 && kept.stderr.contains("already there"), "\(kept.stderr)")
                #expect(readBytes(box.path("kept.bin")) == [1, 2, 3])
                #expect(server.requests("/nc/kept.bin").isEmpty, "a kept file was asked for")

                let fresh = try await box.run(["get", "--no-clobber", server.url("/nc/new.bin")])
                #expect(fresh.exitCode == 0 && contentMismatch(box.path("new.bin"), expected: body) == nil, "\(fresh.stderr)")

                // A link is not followed, whatever it points to; a folder is a taken name too.
                try writeBytes([9], to: box.path("target"))
                try FileManager.default.createSymbolicLink(atPath: box.path("link.bin"), withDestinationPath: box.path("target"))
                try FileManager.default.createDirectory(atPath: box.path("dir.bin"), withIntermediateDirectories: false)
                for name in ["link.bin", "dir.bin"] {
                    let result = try await box.run(["get", "-nc", "-q", server.url("/nc/\(name)"), "-o", name])
                    #expect(result.exitCode == 0 && result.stderr.isEmpty, "\(name): \(result.stderr)")
                }
                #expect(readBytes(box.path("target")) == [9])
                #expect(server.requests("/nc/link.bin").isEmpty && server.requests("/nc/dir.bin").isEmpty)

                let list = [server.url("/nc/kept.bin"), server.url("/nc/listed.bin")].joined(separator: "\n") + "\n"
                try list.write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let batch = try await box.run(["get", "-nc", "-i", "list.txt"])
                #expect(batch.exitCode == 0, "\(batch.stderr)")
                #expect(batch.stderr.contains("kept.bin is already there"), "\(batch.stderr)")
                #expect(readBytes(box.path("kept.bin")) == [1, 2, 3])
                #expect(contentMismatch(box.path("listed.bin"), expected: body) == nil)
                #expect(server.requests("/nc/kept.bin").isEmpty)
                #expect(!box.workContents().contains { $0.contains("(1)") }, "a numbered copy: \(box.workContents())")

                // A kept file is unchecked: it cannot be reported as what a checksum names.
                for other in [["--overwrite"], ["-N"], ["--continue"], ["--checksum", "md5:" + String(repeating: "0", count: 32)]] {
                    let both = try await box.run(["get", "-nc", server.url("/nc/kept.bin")] + other)
                    #expect(both.exitCode == 2 && both.stderrLines.count == 1 && both.stderr.contains("-nc"), "\(other): \(both.stderr)")
                }
            }
        }
    }

    /// `haul get URL -o - | head -c 10`: the reader closing the pipe stops the download with one quiet line and exit
    /// 141 (as a process stopped by SIGPIPE), and leaves no file or record.
    /// `-nc` when the name is taken while the download runs: what took it is kept, this download's partial file
    /// and record go, and it ends as one that found the name taken (exit 0), as wget -nc would have.
    @Test func noClobberKeepsAFileThatAppearsWhileDownloading() async throws {
        try await withTestServer { server in
            var slow = Resource(body: TestData.bytes(400_000, seed: 267), etag: "\"r\"")
            slow.faults.throttleBytesPerSecond = 100_000
            server.serve("/nc/race.bin", slow)
            try await Sandbox.with { box in
                let run = try box.start(["get", "-nc", server.url("/nc/race.bin"), "-o", "race.bin"])
                // Made from a thread of its own the moment the partial file is there: a poll on a starved pool saw
                // it only after the 4-second download had ended, under a full parallel run.
                try await actWhen(run, "the download runs", timeout: .seconds(30), { fileExists(box.path("race.bin.haul-part")) }) {
                    _ = FileManager.default.createFile(atPath: box.path("race.bin"), contents: Data("theirs".utf8))
                }
                let result = try await run.wait(timeout: .seconds(60))
                #expect(result.exitCode == 0 && result.stderr.contains("already there"), "\(result.stderr)")
                #expect(FileManager.default.contents(atPath: box.path("race.bin")) == Data("theirs".utf8))
                #expect(!fileExists(box.path("race.bin.haul-part")), "\(box.workContents())")
                #expect(box.records().isEmpty, "no record is left: \(box.records())")
            }
        }
    }

    /// `-nc` with two URLs that name the same file, at once: the first in the command's order is kept, as wget -nc
    /// (which fetches one at a time) keeps it, whichever download would have ended first; the second is not
    /// requested at all, and a note says so (exit 0).
    @Test(arguments: [false, true])
    func noClobberWithTwoURLsOfOneNameKeepsTheFirst(reversed: Bool) async throws {
        try await withTestServer { server in
            let one = TestData.bytes(300_000, seed: 268), two = TestData.bytes(30_000, seed: 269)
            var slow = Resource(body: one, etag: "\"a\"")
            slow.faults.throttleBytesPerSecond = 100_000
            server.serve("/one/same.bin", slow)
            // The second is small and fast: with both running, it would have taken the name first.
            server.serve("/two/same.bin", Resource(body: two, etag: "\"b\""))
            try await Sandbox.with { box in
                let urls = [server.url("/one/same.bin"), server.url("/two/same.bin")]
                let result = try await box.run(["get", "-nc", "-j", "2"] + (reversed ? urls.reversed() : urls), timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(result.stderr.contains("URL 2 of the command line saves to the same file as URL 1 of the command line; it is not retrieved"), "\(result.stderr)")
                #expect(contentMismatch(box.path("same.bin"), expected: reversed ? two : one) == nil, "the first URL's file is kept")
                #expect(server.requests(reversed ? "/one/same.bin" : "/two/same.bin").isEmpty, "the second is not requested")
                #expect(!box.workContents().contains { $0.contains("(1)") || $0.hasSuffix(".haul-part") }, "\(box.workContents())")
            }
        }
    }

    /// The same in a list, whatever makes the entries meet: a name the URL gives, an `out=`, either first. The first
    /// line wins; two `out=` of one file are still refused before anything is fetched.
    @Test func noClobberInAListKeepsTheFirstLineOfAFile() async throws {
        try await withTestServer { server in
            let bodies = (0..<3).map { TestData.bytes(20_000 + $0 * 1_000, seed: 270 + UInt64($0)) }
            server.serve("/a/x.bin", Resource(body: bodies[0], etag: "\"0\""))
            server.serve("/b/other.bin", Resource(body: bodies[1], etag: "\"1\""))
            server.serve("/c/x.bin", Resource(body: bodies[2], etag: "\"2\""))
            let a = server.url("/a/x.bin"), b = server.url("/b/other.bin") + "\n  out=x.bin", c = server.url("/c/x.bin")
            try await Sandbox.with { box in
                for (order, first) in [([a, b, c], 0), ([b, a, c], 1), ([c, b, a], 2)] {
                    let folder = "d\(first)"
                    try writeBytes(Array((order.joined(separator: "\n") + "\n").utf8), to: box.path("list\(first).txt"))
                    let result = try await box.run(["get", "-nc", "-i", "list\(first).txt", "--dir", folder], timeout: .seconds(60))
                    #expect(result.exitCode == 0, "\(result.stderr)")
                    #expect(result.stderr.contains("2 entries save to a file an earlier entry saves to"), "\(result.stderr)")
                    #expect(contentMismatch(box.path("\(folder)/x.bin"), expected: bodies[first]) == nil, "order \(first): the first line's file")
                    #expect(try FileManager.default.contentsOfDirectory(atPath: box.path(folder)) == ["x.bin"])
                }
                try writeBytes(Array("\(b)\n\(server.url("/a/x.bin"))\n  out=x.bin\n".utf8), to: box.path("named.txt"))
                let refused = try await box.run(["get", "-nc", "-i", "named.txt", "--dir", "e"])
                #expect(refused.exitCode == 2 && refused.stderr.contains("lines 1 and 3 of the URL list both save to"), "\(refused.stderr)")
            }
        }
    }

    /// `haul add -i -nc` reads a list as `haul get -i -nc` does: the first entry of a file is the task added, the
    /// later ones (another URL of the name, an `out=` of it, a repeat) are not added at all, and one note says so;
    /// whichever would have ended first, the daemon keeps the first line's file. Two `out=` of one file are refused.
    @Test func addingAListUnderNoClobberKeepsTheFirstLineOfAFile() async throws {
        try await withTestServer { server in
            let first = TestData.bytes(300_000, seed: 273), later = TestData.bytes(2_000, seed: 274)
            var slow = Resource(body: first, etag: "\"s\"")
            slow.faults.throttleBytesPerSecond = 150_000
            server.serve("/a/x.bin", slow)
            // Small and fast: both running, it would have taken the name first.
            server.serve("/b/x.bin", Resource(body: later, etag: "\"f\""))
            server.serve("/c/other.bin", Resource(body: later, etag: "\"o\""))
            try await Sandbox.with { box in
                let daemon = try await DaemonHarness.start(box)
                let list = [server.url("/a/x.bin"), server.url("/b/x.bin"), server.url("/c/other.bin") + "\n  out=x.bin", server.url("/a/x.bin")]
                try writeBytes(Array((list.joined(separator: "\n") + "\n").utf8), to: box.path("list.txt"))
                let added = try await box.run(["add", "-nc", "-i", "list.txt", "--dir", "d", "--no-autostart"])
                #expect(added.exitCode == 0 && added.stdoutLines.count == 1, "\(added.stdout) \(added.stderr)")
                #expect(added.stderr.contains("2 entries save to a file an earlier entry saves to"), "\(added.stderr)")
                #expect(added.stderr.contains("line 5 of the URL list repeats an earlier URL"), "\(added.stderr)")
                let id = try #require(added.stdoutLines.first)
                let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                #expect(contentMismatch(box.path("d/x.bin"), expected: first) == nil, "the first line's file")
                #expect(server.requests("/b/x.bin").isEmpty && server.requests("/c/other.bin").isEmpty, "later entries are not requested")
                try writeBytes(Array("\(server.url("/b/x.bin"))\n  out=y.bin\n\(server.url("/c/other.bin"))\n  out=y.bin\n".utf8), to: box.path("named.txt"))
                let refused = try await box.run(["add", "-nc", "-i", "named.txt", "--dir", "d", "--no-autostart"])
                #expect(refused.exitCode == 2 && refused.stderr.contains("lines 1 and 3 of the URL list both save to"), "\(refused.stderr)")
                #expect(refused.stdoutLines.isEmpty)
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, box)
            }
        }
    }

    /// `--overwrite` without `-o` replaces the file the URL names (curl -O writes over it), never a numbered copy.
    @Test func overwriteWithoutAnOutputReplacesTheFileTheURLNames() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(20_000, seed: 266)
            server.serve("/ow/report.bin", Resource(body: body, etag: "\"r\""))
            try await Sandbox.with { box in
                #expect(FileManager.default.createFile(atPath: box.path("report.bin"), contents: Data("old".utf8)))
                let result = try await box.run(["get", server.url("/ow/report.bin"), "--overwrite"])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(box.path("report.bin"), expected: body) == nil)
                #expect(!box.workContents().contains { $0.contains("(1)") }, "\(box.workContents())")
            }
        }
    }

    @Test func aReaderThatClosesStandardOutputStopsTheDownloadQuietly() async throws {
        try await withTestServer { server in
            server.serve("/big.bin", Resource(body: TestData.bytes(8 << 20, seed: 264), etag: "\"b\""))
            try await Sandbox.with { box in
                let haul = try HaulBinary.path()
                let script = "{ \"$0\" get \"$1\" -o -; echo $? > haul.status; } | head -c 10 > head.out"
                let result = try await box.start(["-c", script, haul, server.url("/big.bin")], binary: "/bin/sh").wait(timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result.stderr)")
                let status = try String(contentsOfFile: box.path("haul.status"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(status == "141", "haul exited \(status): \(result.stderr)")
                let lines = result.stderrLines.filter { !$0.hasPrefix("downloading ") }
                #expect(lines.count == 1 && lines.first?.contains("closed by its reader") == true, "\(result.stderr)")
                #expect(!result.stderr.contains("error") && !result.stderr.contains("Broken pipe"), "\(result.stderr)")
                #expect(fileSize(box.path("head.out")) == 10)
                #expect(box.workContents() == ["haul.status", "head.out"], "\(box.workContents())")
                #expect(box.records().isEmpty, "a record was left")
            }
        }
    }
}
