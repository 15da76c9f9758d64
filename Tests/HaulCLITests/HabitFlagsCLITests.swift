import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Flags of curl, wget and aria2c that scripts carry (docs/compatibility.md), each decided one way: taken with the
/// meaning of the Haul flag it spells (an alias behaves as that flag, down to its refusals), dropped where it changes
/// nothing Haul does, or refused in one line naming what to use, before any request.
@Suite struct HabitFlagsCLITests {
    /// A spelling and the Haul flags it means: the same value refused gives the same line and exit code.
    struct Alias: Sendable, CustomTestStringConvertible {
        var given: [String]
        var haul: [String]
        var testDescription: String { given.joined(separator: " ") }
    }

    static let missing = "/nonexistent-haul-test"
    static let aliases: [Alias] = [
        Alias(given: ["--ca-certificate=\(missing)/ca.pem"], haul: ["--cacert", "\(missing)/ca.pem"]),
        Alias(given: ["--ca-certificate", "\(missing)/ca.pem"], haul: ["--cacert", "\(missing)/ca.pem"]),
        Alias(given: ["--ca-directory=\(missing)"], haul: ["--capath", missing]),
        Alias(given: ["--certificate=\(missing)/c.pem"], haul: ["--cert", "\(missing)/c.pem"]),
        Alias(given: ["--cert", "c.pem", "--private-key=\(missing)/k.pem"], haul: ["--cert", "c.pem", "--key", "\(missing)/k.pem"]),
        Alias(given: ["--read-timeout", "-5"], haul: ["--stall-timeout", "-5"]),
        Alias(given: ["--read-timeout=90000"], haul: ["--stall-timeout", "90000"]),
        Alias(given: ["--max-concurrent-downloads", "99"], haul: ["-j", "99"]),
        Alias(given: ["--max-concurrent-downloads=0"], haul: ["-j", "0"]),
        Alias(given: ["--parallel-max", "65"], haul: ["-j", "65"]),
        Alias(given: ["--conditional-get", "--overwrite"], haul: ["-N", "--overwrite"]),
        Alias(given: ["--conditional-get=true", "--continue"], haul: ["-N", "--continue"]),
        Alias(given: ["--quiet=true", "--json"], haul: ["--quiet", "--json"]),
        // A netrc file that is there is read as --netrc reads it: one others can read is refused.
        Alias(given: ["--netrc-optional", "--netrc-file", "open.netrc"], haul: ["--netrc", "--netrc-file", "open.netrc"]),
    ]

    @Test(arguments: aliases)
    func anAliasIsRefusedAsTheHaulFlagItSpells(_ alias: Alias) async throws {
        try await withTestServer { server in
            try await Sandbox.with { box in
                // A file that exists, for --cert (its key is what is checked).
                try writeBytes(Array("not a certificate\n".utf8), to: box.path("c.pem"))
                try writeBytes(Array("machine 127.0.0.1 login me password p\n".utf8), to: box.path("open.netrc"))
                chmod(box.path("open.netrc"), 0o644)
                let url = server.url("/f.bin").replacingOccurrences(of: "http://", with: "https://")
                let given = try await box.run(["get", url, "-o", "a.bin"] + alias.given)
                let haul = try await box.run(["get", url, "-o", "a.bin"] + alias.haul)
                #expect(given.exitCode == 2 && given.stderrLines.count == 1, "\(alias.given): \(given.stderr)")
                #expect(given.exitCode == haul.exitCode && given.stderr == haul.stderr, "\(alias.given): \(given.stderr) | \(alias.haul): \(haul.stderr)")
                #expect(server.allRequests().isEmpty)
            }
        }
    }

    /// Each taken with a valid value (or dropped as harmless, with its value in either form): the file is saved.
    @Test(arguments: [
        ["--read-timeout", "5"], ["--read-timeout=0"], ["--max-concurrent-downloads", "2"], ["--parallel-max=2"],
        ["--conditional-get"], ["--conditional-get=false"], ["--quiet=true"], ["--quiet=false"], ["--remote-time=true"],
        ["-nd"], ["-nH"], ["--no-directories"], ["--no-host-directories"], ["--no-netrc"], ["--netrc-optional"],
        ["--file-allocation=none"], ["--file-allocation", "prealloc"], ["--summary-interval", "0"], ["--summary-interval=60"],
        ["--console-log-level=warn"], ["--console-log-level", "error"], ["--auto-file-renaming"], ["--auto-file-renaming=true"],
        ["--auto-file-renaming=false"],
    ])
    func aTakenOrHarmlessFlagDownloads(_ flags: [String]) async throws {
        // (With -o, aria2c's --auto-file-renaming=false is what -o does: one is given below.)
        try await withTestServer { server in
            let body = TestData.bytes(30_000, seed: 9_301)
            server.serve("/f.bin", Resource(body: body, etag: "\"f\""))
            try await Sandbox.with { box in
                // No netrc file where --netrc-optional looks: not an error.
                let result = try await box.start(["get", server.url("/f.bin"), "-o", "f.bin"] + flags, environment: ["HOME": box.work]).wait()
                #expect(result.exitCode == 0, "\(flags): \(result.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: body) == nil, "\(flags)")
                if flags == ["--quiet=true"] { #expect(result.stderr.isEmpty, "\(result.stderr)") }
                #expect(server.requests("/f.bin").allSatisfy { request in !request.headers.contains { $0.0.lowercased() == "authorization" } })
            }
        }
    }

    /// A flag Haul cannot honour as asked: one line naming what to use, exit 2, and no request.
    @Test(arguments: [
        (["-n"], ["--netrc", "--no-netrc in aria2c"]),
        (["--waitretry=5"], ["--retry-wait SECONDS", "doubled"]),
        (["--waitretry", "5"], ["--retry-wait SECONDS"]),
        (["--dns-timeout=5"], ["--connect-timeout SECONDS", "lookup"]),
        (["--auto-file-renaming=false"], ["--auto-file-renaming=false:", "-o NAME", "--overwrite", "-nc"]),
        (["--location-trusted"], ["own origin", "-u USER:PASSWORD"]),
    ] as [([String], [String])])
    func aFlagHaulCannotHonourIsOneLineNamingWhatToUse(_ flags: [String], _ words: [String]) async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(1_000, seed: 9_302), etag: "\"f\""))
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "--dir", "d"] + flags)
                #expect(result.exitCode == 2 && result.stderrLines.count == 1, "\(flags): \(result.stderr)")
                for word in words { #expect(result.stderr.contains(word), "\(flags): \(result.stderr)") }
                #expect(!result.stderr.contains("nknown option") && !result.stderr.contains("Did you mean"), "\(result.stderr)")
                #expect(server.allRequests().isEmpty && !fileExists(box.path("d")))
            }
        }
    }

    /// aria2c's `--auto-file-renaming=false` with `-o NAME` is what `-o` does: a file already there is refused (as
    /// aria2c refuses it) and left as it was, never renamed.
    @Test func aria2csNoRenamingWithANameRefusesAFileAlreadyThere() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(5_000, seed: 9_305), etag: "\"f\""))
            try await Sandbox.with { box in
                try writeBytes(Array("mine\n".utf8), to: box.path("f.bin"))
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin", "--auto-file-renaming=false"])
                #expect(result.exitCode != 0 && result.stderrLines.count == 1 && result.stderr.contains("already exists"), "\(result.stderr)")
                #expect(readBytes(box.path("f.bin")) == Array("mine\n".utf8))
                #expect(box.workContents() == ["f.bin"], "\(box.workContents())")
            }
        }
    }

    /// `--remote-time=false` (aria2c) is `--no-remote-time`: the file keeps the time it was written, not the
    /// server's `Last-Modified`, which `--remote-time=true` (Haul's default) gives it.
    @Test func aria2csRemoteTimeFalseKeepsTheTimeTheFileWasWritten() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(5_000, seed: 9_303), etag: "\"f\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"))
            try await Sandbox.with { box in
                for (flag, name) in [("--remote-time=false", "kept.bin"), ("--remote-time=true", "server.bin")] {
                    let result = try await box.run(["get", server.url("/f.bin"), "-o", name, flag])
                    #expect(result.exitCode == 0, "\(flag): \(result.stderr)")
                }
                var kept = stat(), remote = stat()
                #expect(stat(box.path("kept.bin"), &kept) == 0 && stat(box.path("server.bin"), &remote) == 0)
                #expect(remote.st_mtim.tv_sec == 784_111_777)
                #expect(kept.st_mtim.tv_sec > 1_600_000_000)
            }
        }
    }

    /// curl's `--netrc-optional`: the login of a netrc file that is there is sent to its host, as with `--netrc`.
    @Test func netrcOptionalSendsTheLoginOfAFileThatIsThere() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(5_000, seed: 9_304), etag: "\"f\""))
            try await Sandbox.with { box in
                try writeBytes(Array("machine 127.0.0.1 login me password s3cret\n".utf8), to: box.path(".netrc"))
                chmod(box.path(".netrc"), 0o600)
                let result = try await box.start(["get", server.url("/f.bin"), "-o", "f.bin", "--netrc-optional"], environment: ["HOME": box.work]).wait()
                #expect(result.exitCode == 0, "\(result.stderr)")
                let sent = server.requests("/f.bin").first?.headers.first { $0.0.lowercased() == "authorization" }?.1
                #expect(sent == "Basic " + Data("me:s3cret".utf8).base64EncodedString())
            }
        }
    }

    /// `--netrc` with a URL that names its user (`http://u2@host/`): that user's password from the file, as curl and
    /// wget send it (haul sent an empty one); a user the file does not know goes as given, with no password.
    @Test func netrcGivesThePasswordOfTheUserTheURLNames() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(5_000, seed: 9_305), etag: "\"f\""))
            try await Sandbox.with { box in
                try writeBytes(Array("machine 127.0.0.1 login u1 password p1\nmachine 127.0.0.1 login u2 password p2\n".utf8), to: box.path(".netrc"))
                chmod(box.path(".netrc"), 0o600)
                let url = server.url("/f.bin")
                for (user, expected) in [("u2", "u2:p2"), ("u1", "u1:p1"), ("u3", "u3:")] {
                    let named = url.replacingOccurrences(of: "://", with: "://\(user)@")
                    let result = try await box.start(["get", named, "-o", "\(user).bin", "--netrc"], environment: ["HOME": box.work]).wait()
                    #expect(result.exitCode == 0, "\(result.stderr)")
                    let sent = server.requests("/f.bin").last?.headers.first { $0.0.lowercased() == "authorization" }?.1
                    #expect(sent == "Basic " + Data(expected.utf8).base64EncodedString(), "\(user)")
                }
            }
        }
    }

    /// A 401 after a redirect to another origin: the login given was not sent there (it never is). The line says so,
    /// names the origin it was given for and how to give that host a login of its own (a netrc entry), without the
    /// password; a 401 from the URL's own origin still says to check the login.
    @Test func aRefusalAfterARedirectToAnotherOriginSaysTheLoginWasNotSentThere() async throws {
        try await withTestServer { server in
            let other = server.url("/auth/s.txt").replacingOccurrences(of: "127.0.0.1", with: "localhost")
            server.route("/redir-host") { _ in ResponsePlan(status: 302, headers: [("Location", other)]) }
            server.route("/auth/s.txt") { _ in .text(401, "no", headers: [("WWW-Authenticate", "Basic realm=\"x\"")]) }
            try await Sandbox.with { box in
                let result = try await box.run(["get", "-u", "me:s3cret", server.url("/redir-host"), "-o", "c1"])
                #expect(result.exitCode == 4 && result.stderrLines.count == 1, "\(result.stderr)")
                let origin = String(server.url("/").dropLast())
                #expect(result.stderr.contains("after a redirect from \(origin)"), "\(result.stderr)")
                #expect(result.stderr.contains("were not sent to this one"), "\(result.stderr)")
                // Not "-u with that URL", which would fetch the login server's answer rather than the file.
                #expect(result.stderr.contains("\"machine localhost login USER password PASSWORD\""), "\(result.stderr)")
                #expect(!result.stderr.contains("-u USER:PASSWORD"), "\(result.stderr)")
                #expect(!result.stderr.contains("check them") && !result.stderr.contains("s3cret"), "\(result.stderr)")
                #expect(server.requests("/auth/s.txt").allSatisfy { request in !request.headers.contains { $0.0.lowercased() == "authorization" } })

                let direct = try await box.run(["get", "-u", "me:s3cret", server.url("/auth/s.txt"), "-o", "c2"])
                #expect(direct.exitCode == 4 && direct.stderr.contains("if you did, check them"), "\(direct.stderr)")
                #expect(!direct.stderr.contains("redirect"), "\(direct.stderr)")
            }
        }
    }
}
