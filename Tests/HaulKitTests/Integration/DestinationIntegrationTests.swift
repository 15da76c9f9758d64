import Crypto
import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

/// Naming, existing files, `--continue` and redirects.
@Suite struct DestinationIntegrationTests {
    let body = TestData.bytes(150_000, seed: 5)

    @Test func directoryDownloadUsesContentDispositionFilenameStar() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/x", Resource(body: body, contentDisposition: "attachment; filename=\"fallback.txt\"; filename*=UTF-8''%E2%82%AC%20rates.txt"))
            let result = try await engine.download(try testOptions(server.url("/x"), .directory(sandbox.files)))
            #expect(result.path == sandbox.path("€ rates.txt"))
            #expect(sandbox.contents("€ rates.txt") == body)
        }
    }

    @Test(arguments: [
        ("attachment; filename=\"../../etc/passwd\"", "_.._etc_passwd"),
        ("attachment; filename=\"..\"", "report%20final.pdf"),
        ("attachment; filename*=UTF-8''%1B%5B31mred%0A.txt", "[31mred.txt"),
        ("attachment; filename*=UTF-8''evil%E2%80%AEtxt.exe", "eviltxt.exe"),
        ("inline; filename=\"/abs/path.bin\"", "_abs_path.bin"),
        ("attachment; filename=\"  . hidden\"", "hidden"),
        ("attachment; filename=\"x.bin.haul-part\"", "x.bin_haul-part"),
    ])
    func hostileNamesStayInsideTheFolder(_ header: String, _ expected: String) async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/dl/report%20final.pdf", Resource(body: body, contentDisposition: header))
            let result = try await engine.download(try testOptions(server.url("/dl/report%20final.pdf"), .directory(sandbox.files)))
            let name = String(result.path.dropFirst(sandbox.files.count + 1))
            #expect(!name.contains("/"))
            #expect(name == (expected == "report%20final.pdf" ? "report final.pdf" : expected))
            #expect(sandbox.listing() == [name])
        }
    }

    @Test func nameFromURLAndFreeNameWhenTaken() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/a/b/archive.tar.gz", Resource(body: body))
            sandbox.write([1, 2, 3], to: "archive.tar.gz")
            let result = try await engine.download(try testOptions(server.url("/a/b/archive.tar.gz?x=1"), .directory(sandbox.files)))
            #expect(result.path == sandbox.path("archive (1).tar.gz"))
            #expect(sandbox.contents("archive.tar.gz") == [1, 2, 3])
            #expect(sandbox.contents("archive (1).tar.gz") == body)
        }
    }

    /// A file this URL finished, then deleted or moved away by its user: the next run writes the same name again (as
    /// curl, wget and aria2c would), every time, not "name (1)" because its own earlier choice still held the name.
    @Test func aFinishedFileDeletedOrMovedAwayIsWrittenAgainUnderItsName() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/files/hello.txt", Resource(body: body))
            let options = try testOptions(server.url("/files/hello.txt"), .directory(sandbox.files))
            for round in 0..<4 {
                let result = try await engine.download(options)
                #expect(result.path == sandbox.path("hello.txt"), "round \(round)")
                #expect(!result.alreadyComplete, "round \(round)")
                #expect(sandbox.listing() == ["hello.txt"], "round \(round)")
                if round % 2 == 0 {
                    try FileManager.default.removeItem(atPath: sandbox.path("hello.txt"))
                } else {
                    try FileManager.default.moveItem(atPath: sandbox.path("hello.txt"), toPath: sandbox.root + "/moved-\(round)")
                }
            }
            // Left in place, it is complete: no new copy.
            _ = try await engine.download(options)
            let again = try await engine.download(options)
            #expect(again.alreadyComplete)
            #expect(sandbox.listing() == ["hello.txt"])
        }
    }

    @Test func rootURLFallsBackToDownload() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/", Resource(body: body))
            let result = try await engine.download(try testOptions(server.url("/"), .directory(sandbox.files)))
            #expect(result.path == sandbox.path("download"))
        }
    }

    @Test func existingFileIsNotReplacedWithoutOverwrite() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: body))
            sandbox.write([9, 9], to: "f")
            let error = await expectHaulError(.usage) { _ = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f")))) }
            // A program can tell "exists" from "is a folder" by the reason; the library's words name no CLI flag.
            #expect(error?.reason == .destinationExists(path: sandbox.path("f")))
            #expect(error?.message.contains("--") == false, "\(error?.message ?? "")")
            #expect(sandbox.contents("f") == [9, 9])
            #expect(server.allRequests().isEmpty)

            var options = try testOptions(server.url("/f"), .file(sandbox.path("f")))
            options.overwrite = true
            try await engine.download(options)
            #expect(sandbox.contents("f") == body)
        }
    }

    @Test func continueAdoptsAForeignPartialAfterVerifyingIt() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: body, etag: "\"e\""))
            sandbox.write(Array(body.prefix(100_000)), to: "f")
            var options = try testOptions(server.url("/f"), .file(sandbox.path("f")))
            options.continuePartial = true
            let result = try await engine.download(options)
            #expect(sandbox.contents("f") == body)
            let request = try #require(server.requests("/f").first)
            #expect(request.header("Range") == "bytes=\(100_000 - Int(ResumePolicy.overlapLength))-")
            #expect(result.fetchedBytes == 50_000)
        }
    }

    @Test func continueRefusesAPartialThatDoesNotMatch() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: body, etag: "\"e\""))
            let foreign = TestData.bytes(100_000, seed: 42)
            sandbox.write(foreign, to: "f")
            var options = try testOptions(server.url("/f"), .file(sandbox.path("f")))
            options.continuePartial = true
            let error = await expectHaulError(.server) { _ = try await engine.download(options) }
            #expect(error?.message.contains("left unchanged") == true)
            #expect(sandbox.contents("f") == foreign)
            #expect(sandbox.listing() == ["f"])
        }
    }

    @Test func continueRefusesWhenTheServerIgnoresRange() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body)
            resource.faults.ignoreRange = true
            server.serve("/f", resource)
            sandbox.write(Array(body.prefix(100_000)), to: "f")
            var options = try testOptions(server.url("/f"), .file(sandbox.path("f")))
            options.continuePartial = true
            await expectHaulError(.server) { _ = try await engine.download(options) }
            #expect(sandbox.contents("f") == Array(body.prefix(100_000)))
        }
    }

    @Test func redirectsAreFollowedAndResumeUsesTheFinalURL() async throws {
        try await withHarness { server, engine, sandbox in
            server.route("/start") { _ in redirectPlan(status: 301, to: "/middle") }
            server.route("/middle") { _ in redirectPlan(status: 307, to: server.url("/final")) }
            var resource = Resource(body: body, etag: "\"r\"")
            resource.faults.dropAfterBytes = 60_000
            resource.faults.dropOnRequests = 1
            server.serve("/final", resource)
            try await engine.download(try testOptions(server.url("/start"), .file(sandbox.path("f"))))
            #expect(sandbox.contents("f") == body)
            #expect(server.requests("/start").count == 1)
            #expect(server.requests("/final").count == 2)
            #expect(server.requests("/final")[1].header("Range") != nil)
            #expect(sandbox.records().first?.finalURL == server.url("/final"))
        }
    }

    /// A cookie a redirect sets (a download gate's) goes with the next hops it matches, as wget, aria2c and a browser
    /// send it; one for another host, or another path, or expired, does not; the user's `-b` cookies still go to their
    /// origin only. (`localhost` and `127.0.0.1` are two origins of the one test server.)
    @Test func cookiesARedirectSetsGoWithTheHopsTheyMatch() async throws {
        try await withHarness { server, engine, sandbox in
            let other = server.url("/final/f.bin").replacingOccurrences(of: "127.0.0.1", with: "localhost")
            server.route("/gate") { _ in
                ResponsePlan(status: 302, headers: [
                    ("Location", "/final/f.bin"), ("Set-Cookie", "gate=open; Path=/; HttpOnly"),
                    ("Set-Cookie", "elsewhere=1; Path=/other"), ("Set-Cookie", "gone=1; Max-Age=0"),
                    ("Set-Cookie", "foreign=1; Domain=example.com"),
                    ("Set-Cookie", "dated=1; Expires=Wed, 09 Jun 2100 10:18:14 GMT"),
                ])
            }
            server.route("/hop") { _ in redirectPlan(status: 302, to: other) }
            server.serve("/final/f.bin", Resource(body: body, etag: "\"c\""))
            var options = try testOptions(server.url("/gate"), .file(sandbox.path("f")))
            options.cookies = [Cookie(domain: "127.0.0.1", includesSubdomains: false, path: "/", secure: false, expires: 0, name: "mine", value: "1")]
            _ = try await engine.download(options)
            let cookie = try #require(server.requests("/final/f.bin").first?.header("Cookie"))
            #expect(Set(cookie.components(separatedBy: "; ")) == ["mine=1", "gate=open", "dated=1"], "\(cookie)")

            // Set on 127.0.0.1, not sent to localhost (another host), and the user's neither.
            server.route("/gate2") { _ in
                ResponsePlan(status: 302, headers: [("Location", "/hop"), ("Set-Cookie", "gate=open; Path=/")])
            }
            _ = try await engine.download(try testOptions(server.url("/gate2"), .file(sandbox.path("g"))))
            #expect(server.requests("/hop").first?.header("Cookie") == "gate=open")
            let last = try #require(server.requests("/final/f.bin").last)
            #expect(last.header("Cookie") == nil, "\(String(describing: last.header("Cookie")))")
        }
    }

    @Test func redirectLoopsAndLongChainsFail() async throws {
        try await withHarness { server, engine, sandbox in
            server.route("/a") { _ in redirectPlan(to: "/b") }
            server.route("/b") { _ in redirectPlan(to: "/a") }
            let loop = await expectHaulError(.httpStatus) { _ = try await engine.download(try testOptions(server.url("/a"), .file(sandbox.path("f")))) }
            #expect(loop?.message.contains("loop") == true)

            server.route("/hop") { request in
                let n = Int(request.uri.split(separator: "=").last ?? "0") ?? 0
                return redirectPlan(to: "/hop?n=\(n + 1)")
            }
            let long = await expectHaulError(.httpStatus) { _ = try await engine.download(try testOptions(server.url("/hop?n=0"), .file(sandbox.path("g")))) }
            #expect(long?.message.contains("10 redirects") == true)
            #expect(server.requests("/hop").count == 11)
        }
    }

    @Test func userHeadersNeverReachAnotherOrigin() async throws {
        try await withHarness { server, engine, sandbox in
            let other = try await TestServer.start()
            defer { Task { try? await other.shutdown() } }
            other.serve("/f", Resource(body: body))
            server.route("/go") { _ in redirectPlan(to: other.url("/f")) }
            var options = try testOptions(server.url("/go"), .file(sandbox.path("f")))
            options.headers = ["Authorization": "Bearer secret", "Cookie": "s=1", "User-Agent": "test-agent"]
            try await engine.download(options)
            #expect(sandbox.contents("f") == body)
            let first = try #require(server.requests("/go").first)
            #expect(first.header("Authorization") == "Bearer secret")
            #expect(first.header("Cookie") == "s=1")
            let moved = try #require(other.requests("/f").first)
            #expect(moved.header("Authorization") == nil)
            #expect(moved.header("Cookie") == nil)
            #expect(moved.header("User-Agent") == "test-agent")
        }
    }
}

/// Typed reasons: what a library user switches on, the same in-process and through the daemon's wire format.
@Suite struct FailureReasonTests {
    @Test func aFolderAtTheDestinationIsItsOwnReason() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: [1, 2, 3]))
            try FileManager.default.createDirectory(atPath: sandbox.path("folder"), withIntermediateDirectories: true)
            let error = await expectHaulError(.usage) {
                _ = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("folder"))))
            }
            #expect(error?.reason == .destinationIsDirectory(path: sandbox.path("folder")))
        }
    }

    @Test func aStatusCarriesItsCodeAndURL() async throws {
        try await withHarness { server, engine, sandbox in
            let error = await expectHaulError(.httpStatus) {
                _ = try await engine.download(try testOptions(server.url("/missing"), .file(sandbox.path("m"))))
            }
            #expect(error?.reason == .httpStatus(404, url: server.url("/missing")))
        }
    }

    @Test func aChecksumMismatchCarriesBothSums() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/c", Resource(body: [1, 2, 3]))
            var options = try testOptions(server.url("/c"), .file(sandbox.path("c")))
            options.checksum = try Checksum(parsing: "sha256:" + String(repeating: "0", count: 64))
            let error = await expectHaulError(.checksum) { _ = try await engine.download(options) }
            guard case .checksumMismatch(let path, let expected, let actual, let alreadyAtPath)? = error?.reason.which else {
                Issue.record("expected a checksum reason, got \(String(describing: error?.reason))")
                return
            }
            #expect(path == sandbox.path("c") && !alreadyAtPath)
            #expect(expected == "sha256:" + String(repeating: "0", count: 64))
            #expect(actual == "sha256:039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81")
        }
    }

    @Test func theReasonCrossesTheDaemonsWire() throws {
        let error = HaulError(.usage, "/tmp/x already exists", reason: .destinationExists(path: "/tmp/x"))
        let line = JSONRPC.response(id: 1, error: .haul(error))
        guard case .response(_, .failure(let rpc))? = JSONRPC.decodeIncoming(Array(line.utf8)) else {
            Issue.record("not a response: \(line)")
            return
        }
        #expect(rpc.haulError == error)
        let plain = HaulError(.network, "something else")
        guard case .response(_, .failure(let other))? = JSONRPC.decodeIncoming(Array(JSONRPC.response(id: 2, error: .haul(plain)).utf8)) else {
            Issue.record("not a response")
            return
        }
        #expect(other.haulError == plain)
    }
}

@Suite struct NULDestinationTests {
    @Test func aDestinationWithANULByteIsRefusedAndNothingIsWritten() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/n.bin", Resource(body: TestData.bytes(1_000, seed: 23)))
            for destination: DownloadOptions.Destination in [.file(sandbox.path("a") + "\u{0}b"), .directory(sandbox.files + "\u{0}/x")] {
                do {
                    _ = try await engine.download(try testOptions(server.url("/n.bin"), destination))
                    Issue.record("\(destination) was downloaded")
                } catch let error as HaulError {
                    #expect(error.kind == .usage && error.message.contains("NUL"), "\(error)")
                }
            }
            #expect(sandbox.listing().isEmpty, "the part before the NUL was never written: \(sandbox.listing())")
            #expect(server.requests("/n.bin").isEmpty)
        }
    }
}
