import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What curl, wget and aria2c users meet that those tools do otherwise: a saved file's mode under the umask, curl's
/// `-w FORMAT` and flags scripts carry (each one line naming what to use), and the lines said for a complete file
/// given to `-C -` and for one longer than the server's, a host that does not resolve, a folder that takes no file
/// and a base64 digest.
@Suite struct HabitMessagesCLITests {
    /// The mode of what is at `path`, without the file type.
    private func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }

    @Test(arguments: [("002", 0o664), ("022", 0o644), ("077", 0o600), ("027", 0o640)] as [(String, mode_t)])
    func aSavedFileHas0666LessTheUmaskAsCurlAndWgetGiveIt(_ umask: String, _ expected: mode_t) async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(30_000, seed: 9_201), etag: "\"f\""))
            server.serve("/g.bin", Resource(body: TestData.bytes(30_000, seed: 9_202), etag: "\"g\""))
            try await Sandbox.with { box in
                let haul = try HaulBinary.path()
                let script = "umask \(umask); exec \"$0\" \"$@\""
                let one = try await box.start(["-c", script, haul, "get", server.url("/f.bin"), "-o", "f.bin"], binary: "/bin/sh").wait()
                #expect(one.exitCode == 0, "\(one.stderr)")
                #expect(mode(box.path("f.bin")) == expected, "umask \(umask): \(String(mode(box.path("f.bin")) ?? 0, radix: 8))")
                // A batch's files too.
                let batch = try await box.start(
                    ["-c", script, haul, "get", server.url("/f.bin"), server.url("/g.bin"), "--dir", box.path("d")], binary: "/bin/sh").wait()
                #expect(batch.exitCode == 0, "\(batch.stderr)")
                #expect(mode(box.path("d/g.bin")) == expected, "umask \(umask): \(String(mode(box.path("d/g.bin")) ?? 0, radix: 8))")
                // Haul's own state stays private, whatever the umask.
                var files: [String] = []
                let enumerator = FileManager.default.enumerator(atPath: box.home)
                while let name = enumerator?.nextObject() as? String { files.append(name) }
                for name in files {
                    var info = stat()
                    guard lstat(box.home + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
                    #expect(info.st_mode & 0o777 == 0o600, "\(name) is \(String(info.st_mode & 0o777, radix: 8))")
                }
            }
        }
    }

    @Test func curlsWriteOutAndFlagsScriptsCarryEachGetALineNamingWhatToUse() async throws {
        try await Sandbox.with { box in
            let url = "http://127.0.0.1:9/f"
            let cases: [([String], [String])] = [
                (["-w", "%{http_code}"], ["-w FORMAT", "no --write-out", "--json"]),
                (["-w%{http_code}\\n"], ["-w FORMAT", "--json"]),
                (["--write-out", "%{http_code}"], ["--write-out", "--json"]),
                (["-w", "5"], ["-j 1"]),
                (["--fail-with-body"], ["exit 4", "never saves the error's body"]),
                (["--retry-all-errors"], ["5xx, 408 and 429", "other 4xx"]),
                (["--retry-connrefused"], ["refused connection", "haul add"]),
                (["--progress=dot"], ["terminal only", "--json"]),
                (["--progress=dot:giga"], ["terminal only"]),
                (["--max-filesize", "10M"], ["no size limit"]),
                // Two -o for one URL: the parser would keep the last one silently (curl warns and pairs them).
                (["-o", "a.bin"], ["-o is given more than once", "--dir DIR"]),
                (["--output=a.bin"], ["-o is given more than once"]),
            ]
            for (flags, words) in cases {
                let result = try await box.run(["get", url] + flags + ["-o", "f.bin"])
                #expect(result.exitCode == 2 && result.stderrLines.count == 1, "\(flags): \(result.stderr)")
                for word in words { #expect(result.stderr.contains(word), "\(flags): \(result.stderr)") }
                #expect(!result.stderr.contains("nknown option"), "\(flags): \(result.stderr)")
            }
        }
    }

    @Test func wgetsProgressBarIsTheDefault() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(10_000, seed: 9_203), etag: "\"f\""))
            try await Sandbox.with { box in
                for flag in ["--progress=bar", "--show-progress"] {
                    let result = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin", flag])
                    #expect(result.exitCode == 0, "\(flag): \(result.stderr)")
                }
            }
        }
    }

    @Test func continuingACompleteFileSaysItIsAlreadyComplete() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(40_000, seed: 9_204)
            server.serve("/f.bin", Resource(body: body, etag: "\"f\""))
            try await Sandbox.with { box in
                try Data(body).write(to: URL(fileURLWithPath: box.path("f.bin")))
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin", "-C", "-"])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(result.stderr.contains("is already complete"), "\(result.stderr)")
                #expect(!result.stderr.contains("saved") && !result.stderr.contains("B/s"), "\(result.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: body) == nil)
            }
        }
    }

    /// `-C -` of a file longer than the server's (the server's whole file and more after it): wget says "already
    /// fully retrieved" only when the lengths are equal. Never complete, and not the server's fault: one line saying
    /// the file is longer (both lengths), so it is no partial copy of this download, and to remove it or choose another
    /// name; exit 2, as for another file already at the destination; the file left as it was. The server says it
    /// with a 416 (its file ends before the 64 KiB asked for again) or a 206 of its last bytes (it ends within them),
    /// and the same whether the rest would go over one connection or several.
    @Test(arguments: [(100_000, nil), (20_000, nil), (100_000, 4)] as [(Int, Int?)])
    func continuingAFileLongerThanTheServersSaysItIsNoPartialCopy(_ extra: Int, _ segments: Int?) async throws {
        try await withTestServer { server in
            let body = TestData.bytes(200_000, seed: 9_206)
            server.serve("/f.bin", Resource(body: body, etag: "\"f\""))
            try await Sandbox.with { box in
                let local = body + TestData.bytes(extra, seed: 9_207)
                try Data(local).write(to: URL(fileURLWithPath: box.path("f.bin")))
                let flags = segments.map { ["--segments", "\($0)", "--min-segment-size", "16K"] } ?? []
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin", "-C", "-"] + flags)
                #expect(result.exitCode == 2, "\(result.stderr)")
                #expect(result.stderrLines.count == 1, "\(result.stderr)")
                let line = result.stderrLines.first ?? ""
                #expect(line.contains("f.bin is longer than the file on the server (\(local.count) bytes vs \(body.count)), so it is not a partial copy of this download"), "\(line)")
                #expect(line.hasSuffix("; remove it, or choose another name with -o"), "\(line)")
                #expect(!line.contains("complete") && !line.contains("--overwrite"), "\(line)")
                #expect(readBytes(box.path("f.bin")) == local, "the file is left as it was")
                #expect(box.workContents() == ["f.bin"], "\(box.workContents())")
            }
        }
    }

    @Test func anUnresolvableHostIsOneLineWithOnePairOfBrackets() async throws {
        try await Sandbox.with { box in
            let result = try await box.run(["get", "http://nonexistent.invalid/f", "-o", "f.bin"])
            #expect(result.exitCode == 3, "\(result.stderr)")
            #expect(result.stderr.contains("(nonexistent.invalid:80; gave up after 2 retries)"), "\(result.stderr)")
            #expect(!result.stderr.contains(") ("), "\(result.stderr)")
        }
    }

    @Test func aFolderThatTakesNoFileIsSaidOfTheDestinationGiven() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(10_000, seed: 9_205), etag: "\"f\""))
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "/proc/haul-test-x"])
                #expect(result.exitCode == 6, "\(result.stderr)")
                #expect(result.stderrLines.count == 1, "\(result.stderr)")
                #expect(result.stderr.contains("cannot save /proc/haul-test-x") && result.stderr.contains("choose another path"), "\(result.stderr)")
                #expect(!result.stderr.contains(".haul-part"), "\(result.stderr)")
            }
        }
    }

    @Test func aBase64DigestIsShownAsTypedAndSaidToBeBase64() async throws {
        try await Sandbox.with { box in
            // sha256 of "test", in base64.
            let typed = "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg="
            let result = try await box.run(["get", "http://127.0.0.1:9/f", "-o", "f.bin", "--checksum", "sha256:" + typed])
            #expect(result.exitCode == 2 && result.stderrLines.count == 1, "\(result.stderr)")
            #expect(result.stderr.contains("got \"\(typed)\"") && result.stderr.contains("base64"), "\(result.stderr)")
        }
    }

    /// curl's `curl -fsSL URL | sh` typed as `haul get`: the body goes to a file (haul's way, wget's), and the pipe
    /// gets nothing; said in one line even under -s, never when the body goes where it was asked.
    @Test func aSilentDownloadWhoseOutputIsPipedSaysWhereTheBodyWent() async throws {
        try await withTestServer { server in
            let body = Array("echo installed\n".utf8)
            server.serve("/install.sh", Resource(body: body, etag: "\"i\""))
            try await Sandbox.with { box in
                // The harness reads standard output through a pipe, as `| sh` would.
                let piped = try await box.run(["get", "-fsSL", server.url("/install.sh")])
                #expect(piped.exitCode == 0, "\(piped.stderr)")
                #expect(piped.stdout.isEmpty)
                #expect(piped.stderrLines.count == 1 && piped.stderr.contains("saved \(box.path("install.sh"))"), "\(piped.stderr)")
                #expect(piped.stderr.contains("add -o -"), "\(piped.stderr)")
                #expect(contentMismatch(box.path("install.sh"), expected: body) == nil)

                let streamed = try await box.run(["get", "-fsSL", server.url("/install.sh"), "-o", "-"])
                #expect(streamed.exitCode == 0 && streamed.stdout == "echo installed\n" && streamed.stderr.isEmpty, "\(streamed)")
                let named = try await box.run(["get", "-q", server.url("/install.sh"), "-o", "named.sh"])
                #expect(named.exitCode == 0 && named.stderr.isEmpty, "\(named.stderr)")
            }
        }
    }
}
