import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The flags curl, wget and aria2c users type: accepted where they mean what Haul does, refused in one line naming
/// what to use where Haul cannot honour them.
@Suite struct HabitsCLITests {
    @Test func curlWgetAndAria2cSpellingsDoWhatTheySay() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(300_000, seed: 250)
            server.serve("/files/f.bin", Resource(body: body, etag: "\"h\""))
            try await Sandbox.with { box in
                let curl = try await box.run([
                    "get", "-fsSL", "-O", server.url("/files/f.bin"), "--output-dir", "curl", "-A", "curl-habit/1", "-e", "http://ref.example/;auto",
                    "--retry", "2", "-T", "20", "-4", "--create-dirs", "--remote-time",
                ])
                #expect(curl.exitCode == 0, "\(curl.stderr)")
                #expect(curl.stderr.isEmpty, "-s is curl's silent here: \(curl.stderr)")
                #expect(contentMismatch(box.path("curl/f.bin"), expected: body) == nil)
                let request = try #require(server.requests("/files/f.bin").last)
                #expect(request.header("User-Agent") == "curl-habit/1")
                #expect(request.header("Referer") == "http://ref.example/")

                let wget = try await box.run(["get", server.url("/files/f.bin"), "-P", "wget", "--tries", "3", "--timeout", "20", "--no-check-certificate", "-nv"])
                #expect(wget.exitCode == 0, "\(wget.stderr)")
                #expect(contentMismatch(box.path("wget/f.bin"), expected: body) == nil)

                let aria2c = try await box.run([
                    "get", server.url("/files/f.bin"), "-d", "aria", "-o", "named.bin", "-x", "4", "-s", "2", "--min-split-size", "64K",
                    "--check-certificate=false", "--max-tries", "2", "--allow-overwrite=true",
                ])
                #expect(aria2c.exitCode == 0, "\(aria2c.stderr)")
                #expect(contentMismatch(box.path("aria/named.bin"), expected: body) == nil, "-d and -o join as in aria2c")
            }
        }
    }

    @Test func curlsDashCDashContinuesTheFileAnotherProgramLeft() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(400_000, seed: 251)
            server.serve("/f.bin", Resource(body: body, etag: "\"c\""))
            try await Sandbox.with { box in
                try writeBytes(Array(body.prefix(123_456)), to: box.path("f.bin"))
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin", "-C", "-"])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: body) == nil)
                #expect(server.requests("/f.bin").allSatisfy { $0.header("Range") != nil }, "the bytes held were fetched again")
                let offset = try await box.run(["get", server.url("/f.bin"), "-o", "g.bin", "-C", "100"])
                #expect(offset.exitCode == 2 && offset.stderr.contains("-C -"), "\(offset.stderr)")
            }
        }
    }

    /// `wget -c URL` and `curl -C - -O URL`: without -o, the file the URL names is the one continued; curl's
    /// `-c jar.txt` (a cookie jar to write) is refused in one line, never taken for a URL.
    @Test func continueWithoutDashOContinuesTheFileTheURLNames() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(400_000, seed: 252)
            server.serve("/dl/w.bin", Resource(body: body, etag: "\"w\""))
            try await Sandbox.with { box in
                for (index, arguments) in [["-c"], ["-C", "-", "-O"]].enumerated() {
                    try? FileManager.default.removeItem(atPath: box.path("w.bin"))
                    try writeBytes(Array(body.prefix(150_000)), to: box.path("w.bin"))
                    let before = server.requests("/dl/w.bin").count
                    let result = try await box.run(["get"] + arguments + [server.url("/dl/w.bin")])
                    #expect(result.exitCode == 0, "\(arguments): \(result.stderr)")
                    #expect(contentMismatch(box.path("w.bin"), expected: body) == nil, "\(arguments)")
                    #expect(server.requests("/dl/w.bin").dropFirst(before).allSatisfy { $0.header("Range") != nil }, "round \(index): the bytes held were fetched again")
                }
                let jar = try await box.run(["get", "-b", "jar.txt", "-c", "jar.txt", server.url("/dl/w.bin")])
                #expect(jar.exitCode == 2 && jar.stderrLines.count == 1 && jar.stderr.contains("no cookie jar"), "\(jar.stderr)")
            }
        }
    }

    @Test func wgetsTriesCountTheFirstAttempt() async throws {
        try await withTestServer { server in
            server.route("/busy") { _ in .text(503, "busy") }
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/busy"), "-o", "b", "--tries", "2", "--retry-wait", "0"])
                #expect(result.exitCode == 4, "\(result.stderr)")
                #expect(server.requests("/busy").count == 2, "\(server.requests("/busy").count) requests")
                let both = try await box.run(["get", server.url("/busy"), "-o", "b", "--tries", "2", "--retry", "3"])
                #expect(both.exitCode == 2, "\(both.stderr)")
            }
        }
    }

    @Test(arguments: [
        (["--compressed"], "--compressed", "decompress"), (["-X", "POST"], "-X", "GET"), (["-r", "0-99"], "-r", "-i FILE"),
        (["-U", "u:p"], "-U", "--user-agent"), (["-t", "3"], "-t", "--tries"), (["--proxy-user", "u:p"], "--proxy-user", "--proxy http://user:password@"),
        (["-m", "30"], "-m", "--max-time"), (["--retry-delay", "2"], "--retry-delay", "--retry-wait"), (["-z", "f"], "-z", "-N"),
        (["--http3"], "--http3", "HTTP/2"), (["--mirror"], "--mirror", "-i FILE"),
        (["-e", "http_proxy=http://pu:SECRETPW@127.0.0.1:9"], "-e", "--proxy"), (["-erobots=off"], "-e", "robots=off"),
        (["--execute", "robots=off"], "--execute", "does not crawl"),
        (["--no-proxy"], "--no-proxy", "--noproxy"), (["--password=x"], "--password", "-u USER:PASSWORD"),
        // aria2c's and curl's proxy flags (the probe found them answered "unknown option"); a password never shown.
        (["--http-proxy=http://pu:SECRETPW@127.0.0.1:9"], "--http-proxy", "--proxy URL"),
        (["--https-proxy", "http://pu:SECRETPW@127.0.0.1:9"], "--https-proxy", "--proxy URL"),
        (["--http-proxy-passwd=SECRETPW"], "--http-proxy-passwd", "--proxy http://user:password@"),
        (["--socks5", "127.0.0.1:9"], "--socks5", "--proxy socks5://"), (["--socks5-hostname", "127.0.0.1:9"], "--socks5-hostname", "socks5h://"),
        (["--socks4", "127.0.0.1:9"], "--socks4", "SOCKS5"), (["--proxy-cacert", "ca.pem"], "--proxy-cacert", "without TLS"),
        (["--proxy-digest"], "--proxy-digest", "Basic"), (["--proxy-method=tunnel"], "--proxy-method", "--proxytunnel"),
        // wget's and aria2c's, answered only "unknown option" before; a method other than GET.
        (["--spider"], "--spider", "curl -I"), (["--trust-server-names"], "--trust-server-names", "-o NAME"),
        (["-V"], "-V", "--version"), (["--check-integrity=true"], "--check-integrity", "--checksum"),
        (["--request=POST"], "--request", "GET"), (["-X", "DELETE"], "-X", "GET"),
    ])
    func aFlagHaulCannotHonourIsOneLineNamingTheAlternative(flag: [String], name: String, alternative: String) async throws {
        try await withTestServer { server in
            server.serve("/f", Resource(body: [1, 2, 3], etag: "\"f\""))
            try await Sandbox.with { box in
                for command in ["get", "add"] {
                    let result = try await box.run([command, server.url("/f"), "-o", "f"] + flag + ["--no-autostart"].filter { _ in command == "add" })
                    #expect(result.exitCode == 2, "\(command) \(flag): \(result.stderr)")
                    #expect(result.stderrLines.count == 1 && result.stderr.hasPrefix("haul: error: \(name): "), "\(result.stderr)")
                    #expect(result.stderr.contains(alternative), "\(result.stderr)")
                    #expect(!result.stderr.contains("SECRETPW"), "\(result.stderr)")
                }
                #expect(server.requests("/f").isEmpty)
                #expect(!fileExists(box.path("f")))
            }
        }
    }

    /// What a copied curl or wget command carries that means what a download does anyway: `-X GET` in its three
    /// spellings and wget's `--https-only` are dropped; wget's `--no-cache` asks every cache for a fresh answer with
    /// the headers wget sends.
    @Test func aGetMethodAndWgetsCacheFlagsDoWhatTheySay() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(5_000, seed: 251)
            server.serve("/g.bin", Resource(body: body, etag: "\"g\""))
            try await Sandbox.with { box in
                for (index, flags) in [["-X", "GET"], ["--request=get"], ["-XGET"], ["--request", "GET", "--https-only"], ["--no-cache"]].enumerated() {
                    let result = try await box.run(["get", server.url("/g.bin"), "-o", "g\(index)"] + flags)
                    #expect(result.exitCode == 0, "\(flags): \(result.stderr)")
                    #expect(contentMismatch(box.path("g\(index)"), expected: body) == nil)
                    let request = try #require(server.requests("/g.bin").last)
                    #expect(request.method == "GET")
                    let noCache = flags == ["--no-cache"]
                    #expect((request.header("Cache-Control") == "no-cache" && request.header("Pragma") == "no-cache") == noCache, "\(flags): \(request.headers)")
                }
            }
        }
    }

    /// Values attached to their letter, as curl, wget and aria2c read them: `-x16 -s2`, `-j2`, `-ofile`, `-P/dir`,
    /// `-C-`, wget's `-qO-` and curl's `-fsSLo FILE`.
    @Test func valuesAttachedToTheirLetterAreReadAsTheOtherToolsReadThem() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(200_000, seed: 251)
            server.serve("/files/a.bin", Resource(body: body, etag: "\"a\""))
            server.serve("/files/b.bin", Resource(body: body, etag: "\"b\""))
            try await Sandbox.with { box in
                let aria = try await box.run(["get", "-x4", "-s2", "-ofirst.bin", server.url("/files/a.bin")])
                #expect(aria.exitCode == 0, "\(aria.stderr)")
                #expect(contentMismatch(box.path("first.bin"), expected: body) == nil)
                let wget = try await box.run(["get", "-j2", "-Pinto", server.url("/files/a.bin"), server.url("/files/b.bin")])
                #expect(wget.exitCode == 0, "\(wget.stderr)")
                #expect(contentMismatch(box.path("into/a.bin"), expected: body) == nil && contentMismatch(box.path("into/b.bin"), expected: body) == nil)
                let curl = try await box.run(["get", "-fsSLo", "second.bin", server.url("/files/b.bin")])
                #expect(curl.exitCode == 0 && curl.stderr.isEmpty, "\(curl.stderr)")
                #expect(contentMismatch(box.path("second.bin"), expected: body) == nil)
                try writeBytes(Array(body.prefix(50_000)), to: box.path("third.bin"))
                let resumed = try await box.run(["get", "-C-", "-othird.bin", server.url("/files/a.bin")])
                #expect(resumed.exitCode == 0, "\(resumed.stderr)")
                #expect(contentMismatch(box.path("third.bin"), expected: body) == nil)
                let piped = try await box.run(["get", "-qO-", server.url("/files/b.bin")])
                #expect(piped.exitCode == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
                #expect(piped.stdoutBytes == body)
            }
        }
    }

    @Test func lettersThatMeanOtherThingsElsewhereSayWhatTheyMeanHere() async throws {
        try await Sandbox.with { box in
            let proxy = try await box.run(["get", "http://127.0.0.1:9/f", "-x", "proxy.example:3128"])
            #expect(proxy.exitCode == 2 && proxy.stderr.contains("--proxy"), "curl's -x: \(proxy.stderr)")
            let silent = try await box.run(["get", "-s", "http://127.0.0.1:9/f"])
            #expect(silent.exitCode == 2 && silent.stderr.contains("-q"), "curl's -s: \(silent.stderr)")
            let wgetO = try await box.run(["get", "-O", "name.iso", "http://127.0.0.1:9/f"])
            #expect(wgetO.exitCode == 2 && wgetO.stderr.contains("-o"), "wget's -O FILE: \(wgetO.stderr)")
        }
    }

    @Test func aListCarriesAria2cPerURLOptions() async throws {
        try await withTestServer { server in
            let a = TestData.bytes(200_000, seed: 252), b = TestData.bytes(150_000, seed: 253), c = TestData.bytes(50_000, seed: 254)
            server.serve("/a.bin", Resource(body: a, etag: "\"a\""))
            server.serve("/b.bin", Resource(body: b, etag: "\"b\""))
            server.serve("/c.bin", Resource(body: c, etag: "\"c\""))
            try await Sandbox.with { box in
                let list = """
                    # aria2c -i list
                    \(server.url("/a.bin"))
                      out=first.bin
                      checksum=sha-256=\(sha256Hex(a))
                    \thead\u{65}r=X-Only-A: yes
                    \(server.url("/b.bin"))
                      dir=elsewhere
                    \(server.url("/c.bin"))
                      checksum=sha-256=\(String(repeating: "0", count: 64))

                    """
                try list.write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let result = try await box.run(["get", "-i", "list.txt", "--dir", "out"])
                #expect(result.exitCode == 5, "c's checksum fails, the others finish: \(result.stderr)")
                #expect(contentMismatch(box.path("out/first.bin"), expected: a) == nil)
                #expect(contentMismatch(box.path("out/elsewhere/b.bin"), expected: b) == nil, "dir= is a folder inside --dir")
                #expect(!fileExists(box.path("out/c.bin")))
                #expect(server.requests("/a.bin").allSatisfy { $0.header("X-Only-A") == "yes" })
                #expect(server.requests("/b.bin").allSatisfy { $0.header("X-Only-A") == nil })
                try "\(server.url("/a.bin"))\n  split=4\n".write(toFile: box.path("bad.txt"), atomically: true, encoding: .utf8)
                let bad = try await box.run(["get", "-i", "bad.txt"])
                #expect(bad.exitCode == 2 && bad.stderr.contains("line 2") && bad.stderr.contains("split="), "\(bad.stderr)")
                // A list's out= stays in the folder, whoever wrote the list.
                for escape in [box.path("planted.bin"), "../planted.bin", "sub/../../planted.bin"] {
                    try "\(server.url("/c.bin"))\n  out=\(escape)\n".write(toFile: box.path("escape.txt"), atomically: true, encoding: .utf8)
                    let refused = try await box.run(["get", "-i", "escape.txt", "--dir", "out"])
                    #expect(refused.exitCode == 2 && refused.stderr.contains("leaves the folder"), "\(escape): \(refused.stderr)")
                    #expect(!fileExists(box.path("planted.bin")) && !fileExists(box.path("out/../planted.bin")))
                }
                // So does its dir=: an absolute folder or one reached through .. is refused before any download.
                let requested = server.requests("/c.bin").count
                for escape in [box.path("planted"), "..", "sub/../../planted", "/tmp"] {
                    try "\(server.url("/c.bin"))\n  dir=\(escape)\n  out=x.bin\n".write(toFile: box.path("escape.txt"), atomically: true, encoding: .utf8)
                    let refused = try await box.run(["get", "-i", "escape.txt", "--dir", "out"])
                    #expect(refused.exitCode == 2 && refused.stderr.contains("dir=\(escape) leaves the folder"), "\(escape): \(refused.stderr)")
                    #expect(!fileExists(box.path("planted/x.bin")) && !fileExists(box.path("x.bin")) && !fileExists("/tmp/x.bin"))
                    #expect(server.requests("/c.bin").count == requested, "refused before any request")
                }
            }
        }
    }

    /// `-o name/` names a folder: refused before any request (curl fails with exit 23, wget says it is a
    /// directory), never saved as a file called `name`.
    @Test func anOutputEndingInASlashIsAFolderNotAFile() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: [1, 2, 3], etag: "\"s\""))
            try await Sandbox.with { box in
                let refused = try await box.run(["get", server.url("/f.bin"), "-o", "newdir/"])
                #expect(refused.exitCode == 2 && refused.stderr.contains("-o newdir/ names a folder") && refused.stderr.contains("--dir newdir"), "\(refused.stderr)")
                #expect(!fileExists(box.path("newdir")) && server.requests("/f.bin").isEmpty)
                try "\(server.url("/f.bin"))\n  out=sub/\n".write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let listed = try await box.run(["get", "-i", "list.txt"])
                #expect(listed.exitCode == 2 && listed.stderr.contains("out=sub/ names a folder"), "\(listed.stderr)")
                #expect(!fileExists(box.path("sub")) && server.requests("/f.bin").isEmpty)
            }
        }
    }

    /// A link to a device is neither written through nor replaced, --overwrite or not (the probe's `nul ->
    /// /dev/null` became a regular file); a name of one of haul's own descriptors (`/dev/stderr`, which root's
    /// --overwrite would have replaced for every program) is refused; -o /dev/null itself still discards.
    @Test func aLinkToADeviceOrADescriptorNameIsNeverReplaced() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: [1, 2, 3], etag: "\"d\""))
            try await Sandbox.with { box in
                try FileManager.default.createSymbolicLink(atPath: box.path("nul"), withDestinationPath: "/dev/null")
                for flags in [[String](), ["--overwrite"], ["-c"]] {
                    let refused = try await box.run(["get", server.url("/f.bin"), "-o", "nul"] + flags)
                    #expect(refused.exitCode == 2 && refused.stderr.contains("is a link to a device"), "\(flags): \(refused.stderr)")
                    #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: box.path("nul"))) == "/dev/null", "\(flags)")
                }
                // /proc/self/fd/2 rather than /dev/stderr: should the refusal fail, nothing on this machine is replaced.
                let descriptor = try await box.run(["get", server.url("/f.bin"), "-o", "/proc/self/fd/2", "--overwrite"])
                #expect(descriptor.exitCode == 2 && descriptor.stderr.contains("names one of haul's own descriptors"), "\(descriptor.stderr)")
                #expect(server.requests("/f.bin").isEmpty, "refused before any request")
                let discarded = try await box.run(["get", server.url("/f.bin"), "-o", "/dev/null"])
                #expect(discarded.exitCode == 0, "\(discarded.stderr)")
            }
        }
    }

    @Test func cookiesGoWhereTheyMatchAndNeverToAnotherOriginOrTheScreen() async throws {
        try await withTestServer { other in
            other.serve("/x/f.bin", Resource(body: [7, 7, 7], etag: "\"o\""))
            try await withTestServer { server in
                let body = TestData.bytes(100_000, seed: 255)
                server.serve("/a/f.bin", Resource(body: body, etag: "\"a\""))
                server.serve("/b/f.bin", Resource(body: body, etag: "\"b\""))
                server.route("/a/away") { _ in ResponsePlan(status: 302, headers: [("Location", other.url("/x/f.bin"))]) }
                server.route("/a/tob") { _ in ResponsePlan(status: 302, headers: [("Location", "/b/f.bin")]) }
                try await Sandbox.with { box in
                    let jar = [
                        "# Netscape HTTP Cookie File",
                        "127.0.0.1\tFALSE\t/a\tFALSE\t0\tforA\tsecret-a",
                        "#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t4102444800\troot\tsecret-root",
                        "127.0.0.1\tFALSE\t/\tTRUE\t0\tsecureOnly\tsecret-tls",
                        "127.0.0.1\tFALSE\t/\tFALSE\t1000\texpired\tsecret-old",
                        ".example.test\tTRUE\t/\tFALSE\t0\telsewhere\tsecret-else",
                        "127.0.0.1\tFALSE\t/b\tFALSE\t0\tforB\tsecret-b",
                    ].joined(separator: "\n")
                    try jar.write(toFile: box.path("jar.txt"), atomically: true, encoding: .utf8)
                    let got = try await box.run(["get", server.url("/a/f.bin"), "-o", "a.bin", "-b", "jar.txt", "-v"])
                    #expect(got.exitCode == 0, "\(got.stderr)")
                    // -v's lines are marked as curl -v marks its notes, without swift-log's date, level and module.
                    let logged = got.stderr.split(separator: "\n").filter { $0.hasPrefix("* ") }
                    #expect(logged.contains { $0.hasPrefix("* GET http://") } && logged.contains { $0.hasPrefix("* 206 from ") }, "\(got.stderr)")
                    #expect(!got.stderr.contains("[HaulKit]") && !got.stderr.contains(" debug "), "\(got.stderr)")
                    #expect(server.requests("/a/f.bin").allSatisfy { $0.header("Cookie") == "forA=secret-a; root=secret-root" },
                            "\(server.requests("/a/f.bin").map { $0.header("Cookie") ?? "none" })")
                    let moved = try await box.run(["get", server.url("/a/tob"), "-o", "b.bin", "--load-cookies", "jar.txt"])
                    #expect(moved.exitCode == 0, "\(moved.stderr)")
                    #expect(server.requests("/b/f.bin").allSatisfy { $0.header("Cookie") == "forB=secret-b; root=secret-root" },
                            "a same-origin redirect gets the cookies of its own path")
                    let away = try await box.run(["get", server.url("/a/away"), "-o", "o.bin", "-b", "jar.txt", "-b", "name=value"])
                    #expect(away.exitCode == 0, "\(away.stderr)")
                    // Another origin gets the jar's lines whose domain and path match it (cookies know no port, RFC 6265
                    // §8.5, as curl -L -b FILE and wget send them): never the `-b NAME=VALUE` pair, nor /a's cookie.
                    #expect(other.requests("/x/f.bin").allSatisfy { $0.header("Cookie") == "root=secret-root" },
                            "\(other.requests("/x/f.bin").map { $0.header("Cookie") ?? "none" })")
                    let named = try await box.run(["get", server.url("/a/f.bin"), "-o", "n.bin", "-b", "session=abc; theme=dark"])
                    #expect(named.exitCode == 0, "\(named.stderr)")
                    #expect(server.requests("/a/f.bin").last?.header("Cookie") == "session=abc; theme=dark")
                    for result in [got, moved, away, named] {
                        #expect(!(result.stderr + result.stdout).contains("secret-"), "a cookie was printed: \(result.stderr)")
                    }
                }
            }
        }
    }

    @Test func a401NamesDashUAndNetrc() async throws {
        try await withTestServer { server in
            server.route("/private") { _ in .text(401, "no", headers: [("WWW-Authenticate", "Basic realm=\"x\"")]) }
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/private"), "-o", "p"])
                #expect(result.exitCode == 4, "\(result.stderr)")
                #expect(result.stderr.contains("-u USER:PASSWORD") && result.stderr.contains("--netrc"), "\(result.stderr)")
            }
        }
    }

    @Test func dashFourAndDashSixLimitTheAddressFamily() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(10_000, seed: 256), etag: "\"4\""))
            try await Sandbox.with { box in
                let v4 = try await box.run(["get", server.url("/f.bin"), "-o", "a.bin", "-4"])
                #expect(v4.exitCode == 0, "\(v4.stderr)")
                let v6 = try await box.run(["get", server.url("/f.bin"), "-o", "b.bin", "-6", "--retries", "0"])
                #expect(v6.exitCode == 3 && v6.stderr.contains("-4 or -6"), "an IPv4 server over IPv6 only: \(v6.stderr)")
                #expect(!v6.stderr.contains("after 0 retries"), "with --retries 0 nothing was given up: \(v6.stderr)")
                #expect(!fileExists(box.path("b.bin")))
                let both = try await box.run(["get", server.url("/f.bin"), "-o", "c.bin", "-4", "-6"])
                #expect(both.exitCode == 2, "\(both.stderr)")
            }
        }
    }
}
