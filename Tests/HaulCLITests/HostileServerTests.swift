import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Servers written to misbehave, and neighbours who plant links: no crash, no hang, no wrong file kept.
@Suite struct HostileServerTests {
    /// The first byte and last byte of `Range: bytes=a-b` (b optional), clamped to `total`.
    func range(_ header: String?, total: Int) -> (Int, Int)? {
        guard let header, header.hasPrefix("bytes=") else { return nil }
        let parts = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = Int(parts[0]) else { return nil }
        return (first, min(total - 1, Int(parts[1]) ?? total - 1))
    }

    @Test func aGzipAnswerIsNeverAppendedToIdentityBytes() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(1 << 20, seed: 130)
            server.route("/f.bin") { request in
                guard let (first, last) = range(request.header("Range"), total: body.count) else {
                    return ResponsePlan(status: 200, headers: [("ETag", "\"z\"")], body: body)
                }
                var headers = [("ETag", "\"z\""), ("Content-Range", "bytes \(first)-\(last)/\(body.count)")]
                var slice = Array(body[first...last])
                // A resume is answered gzip-compressed (the gzip magic, then junk); a start from byte 0 in identity.
                if first > 0 {
                    headers.append(("Content-Encoding", "gzip"))
                    slice = [0x1f, 0x8b, 0x08, 0x00] + slice.dropFirst(4)
                }
                var plan = ResponsePlan(status: 206, headers: headers, body: slice)
                if request.index == 0 { plan.delivery = .dropAfter(300_000) }
                return plan
            }
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin", "--segments", "1", "--retry-wait", "0"])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: body) == nil, "identity bytes were mixed with gzip bytes")
            }
        }
    }

    @Test func anUnknownTotalIsFollowedToTheEndNotTakenAsTheWholeFile() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(100_000, seed: 131)
            server.route("/f.bin") { request in
                guard let (first, _) = range(request.header("Range"), total: body.count) else {
                    return ResponsePlan(status: 200, headers: [("ETag", "\"u\"")], body: body)
                }
                guard first < body.count else {
                    return ResponsePlan(status: 416, headers: [("Content-Range", "bytes */\(body.count)")])
                }
                // At most 30,000 bytes per answer, and never the complete length.
                let last = min(body.count - 1, first + 29_999)
                return ResponsePlan(status: 206, headers: [("ETag", "\"u\""), ("Content-Range", "bytes \(first)-\(last)/*")],
                                    body: Array(body[first...last]))
            }
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin", "--retry-wait", "0"])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: body) == nil)
            }
        }
    }

    @Test func aShortAnswerWithAnUnknownTotalIsNeverAFinishedFile() async throws {
        try await withTestServer { server in
            server.route("/f.bin") { _ in
                ResponsePlan(status: 206, headers: [("ETag", "\"s\""), ("Content-Range", "bytes 0-99/*")], body: TestData.bytes(100, seed: 132))
            }
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin", "--retries", "1", "--retry-wait", "0"])
                #expect(result.exitCode != 0, "100 bytes of an unknown total were kept as the whole file")
                #expect(!fileExists(box.path("f.bin")))
            }
        }
    }

    @Test func aServerThatAlwaysDropsAndIgnoresRangesUsesUpTheRetries() async throws {
        try await withTestServer { server in
            var resource = Resource(body: TestData.bytes(1 << 20, seed: 133), etag: "\"d\"")
            resource.faults.ignoreRange = true
            resource.faults.dropAfterBytes = 400_000
            server.serve("/f.bin", resource)
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin", "--retries", "1", "--retry-wait", "0"])
                #expect(result.exitCode == 3, "\(result.stderr)")
                // The first attempt, one retry, and nothing more (a stray restart at most).
                #expect(server.requests("/f.bin").count <= 3, "\(server.requests("/f.bin").count) requests")
                #expect(!fileExists(box.path("f.bin")))
            }
        }
    }

    @Test(arguments: [
        "not HTTP at all\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Bad: a\0b\r\n\r\nhello",
        "HTTP/1.1 200 OK\rContent-Length: 5\r\r\nhello",
    ])
    func aMalformedResponseIsAnUnusableServerAnswerInPlainWords(_ answer: String) async throws {
        let responder = try RawResponder(answer: Array(answer.utf8))
        defer { responder.stop() }
        try await Sandbox.with { box in
            let result = try await box.run(["get", responder.url("/f.bin"), "-o", "f.bin", "--retries", "0"])
            #expect(result.exitCode == 7, "\(result.stderr)")
            #expect(result.stderrLines.count == 1, "\(result.stderr)")
            #expect(result.stderr.contains("not valid HTTP"), "\(result.stderr)")
            #expect(!result.stderr.contains("HTTPParserError") && !result.stderr.contains("invalid"), "\(result.stderr)")
        }
    }

    @Test func aHugeHeadIsAnUnusableServerAnswer() async throws {
        let answer = "HTTP/1.1 200 OK\r\n" + String(repeating: "X-Filler: " + String(repeating: "a", count: 1000) + "\r\n", count: 1100) + "\r\n"
        let responder = try RawResponder(answer: Array(answer.utf8))
        defer { responder.stop() }
        try await Sandbox.with { box in
            let result = try await box.run(["get", responder.url("/f.bin"), "-o", "f.bin", "--retries", "0"])
            #expect(!result.signalled)
            #expect(result.exitCode == 7, "\(result.stderr)")
        }
    }

    @Test func a416ToAFreshDownloadIsAnHTTPError() async throws {
        try await withTestServer { server in
            server.route("/f.bin") { _ in ResponsePlan(status: 416, headers: [("Content-Range", "bytes */5000")]) }
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin"])
                #expect(result.exitCode == 4, "\(result.stderr)")
                #expect(server.requests("/f.bin").count == 1, "a 416 is not retried")
            }
        }
    }

    @Test func smallerMessagesSayWhatIsWrong() async throws {
        try await Sandbox.with { box in
            let empty = try await box.run(["get", "-i", "/dev/null"])
            #expect(empty.exitCode == 2)
            #expect(empty.stderr.contains("is empty"), "\(empty.stderr)")
            for option in ["--retries", "--stall-timeout", "--retry-wait", "--limit-rate"] {
                let negative = try await box.run(["get", "http://127.0.0.1:9/x", "-o", "x", option, "-1"])
                #expect(negative.exitCode == 2, "\(option): \(negative.stderr)")
                #expect(!negative.stderr.contains("Missing value"), "\(option): \(negative.stderr)")
                #expect(negative.stderr.contains(option) || negative.stderr.contains("rate"), "\(option): \(negative.stderr)")
            }
        }
    }

    @Test func theRedirectLimitNamesTheURLAskedFor() async throws {
        try await withTestServer { server in
            for hop in 0..<15 { server.route("/r\(hop)") { _ in redirectPlan(to: "/r\(hop + 1)") } }
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/r0"), "-o", "f.bin"])
                #expect(result.exitCode == 4, "\(result.stderr)")
                #expect(result.stderr.contains(server.url("/r0")), "\(result.stderr)")
                #expect(!result.stderr.contains(server.url("/r10")), "\(result.stderr)")
            }
        }
    }

    /// 300 with a Location is followed, as curl -L and wget follow it; 305 (and any 3xx that is no redirect) is an
    /// answer reported at once (exit 4), not a server error retried for half a minute.
    @Test func threeHundredIsFollowedAndOtherThreeHundredsAreAnswers() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(10_000, seed: 140)
            server.serve("/choice.bin", Resource(body: body, etag: "\"c\""))
            server.route("/multiple") { _ in redirectPlan(status: 300, to: "/choice.bin") }
            server.route("/use-proxy") { _ in redirectPlan(status: 305, to: "/choice.bin") }
            try await Sandbox.with { box in
                let followed = try await box.run(["get", server.url("/multiple"), "-o", "m.bin"])
                #expect(followed.exitCode == 0 && contentMismatch(box.path("m.bin"), expected: body) == nil, "\(followed.stderr)")
                let answered = try await box.run(["get", server.url("/use-proxy"), "-o", "p.bin"])
                #expect(answered.exitCode == 4 && answered.stderr.contains("305"), "\(answered.stderr)")
                #expect(server.requests("/use-proxy").count == 1, "asked once, not retried")
            }
        }
    }

    /// A gate that sets a cookie and redirects back to itself (then, with the cookie, to the file) is no loop, as
    /// wget, aria2c and curl -L get through it; one that only ever redirects to itself is, and says so.
    @Test func aGateThatSetsACookieAndComesBackIsNoLoop() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(10_000, seed: 141)
            server.serve("/gated.bin", Resource(body: body, etag: "\"g\""))
            server.route("/gate") { request in
                if request.header("Cookie")?.contains("ok=1") == true { return redirectPlan(to: "/gated.bin") }
                return ResponsePlan(status: 302, headers: [("Location", "/gate"), ("Set-Cookie", "ok=1; Path=/")])
            }
            server.route("/loop") { _ in redirectPlan(to: "/loop") }
            try await Sandbox.with { box in
                let gated = try await box.run(["get", server.url("/gate"), "-o", "g.bin"])
                #expect(gated.exitCode == 0 && contentMismatch(box.path("g.bin"), expected: body) == nil, "\(gated.stderr)")
                let looped = try await box.run(["get", server.url("/loop"), "-o", "l.bin"])
                #expect(looped.exitCode == 4 && looped.stderr.contains("redirect loop"), "\(looped.stderr)")
            }
        }
    }

    @Test func addRefusesStandardOutput() async throws {
        try await Sandbox.with { box in
            let result = try await box.run(["add", "http://127.0.0.1:9/x", "-o", "-", "--no-autostart"])
            #expect(result.exitCode == 2, "\(result.stderr)")
            #expect(result.stderr.contains("haul get"), "\(result.stderr)")
        }
    }

    @Test(arguments: ["http://127.0.0.1:PORT/x", "http://no-such-host.invalid/x"])
    func aTypoFailsAtOnceNamingHostAndPort(_ template: String) async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let port = refusing.port
        let url = template.replacingOccurrences(of: "PORT", with: String(port))
        try await Sandbox.with { box in
            let result = try await box.run(["get", url, "-o", "f.bin"], timeout: .seconds(20))
            #expect(result.exitCode == 3, "\(result.stderr)")
            // Two quick retries at most, not the whole backoff (5 retries from 1 s, doubling).
            #expect(result.stderr.contains("gave up after 2 retries"), "\(result.stderr)")
            #expect(result.stderr.contains(url.contains("invalid") ? "no-such-host.invalid:80" : "127.0.0.1:\(port)"), "\(result.stderr)")
        }
    }

    @Test func aBatchFromAHostThatRefusesFailsEachURLAfterTwoQuickRetries() async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        try await Sandbox.with { box in
            let urls = (0..<24).map { "http://127.0.0.1:\(refusing.port)/f\($0).bin\n" }.joined()
            try urls.write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
            let result = try await box.run(["get", "-i", "list.txt", "-j", "16", "--dir", "D", "--json"], timeout: .seconds(120))
            #expect(result.exitCode == 3, "\(result.stderr)")
            // As for one URL: two quick retries each, not the whole backoff (5 retries from 1 s, doubling), which
            // made a list from a host that is down take minutes where curl and wget give up at once.
            let failed = try result.jsonEvents().filter { $0["type"] as? String == "failed" }
            #expect(failed.count == 24)
            for event in failed {
                let error = (event["task"] as? [String: Any])?["error"] as? [String: Any]
                let unreachable = (error?["failure"] as? [String: Any])?["unreachable"] as? [String: Any]
                #expect((unreachable?["retries"] as? NSNumber)?.intValue == 2, "\(event)")
                #expect((error?["message"] as? String)?.contains("127.0.0.1:\(refusing.port)") == true, "\(event)")
            }
        }
    }

    /// With several URLs --max-time bounds the whole command too (its help says "in all"): a cron job's bound holds
    /// for a list as for one URL. The downloads are paused, and the same command resumes them.
    @Test func maxTimeStopsABatchAndKeepsItsStateToResume() async throws {
        try await withTestServer { server in
            let bodies = (0..<2).map { TestData.bytes(2 << 20, seed: 140 + UInt64($0)) }
            for (index, body) in bodies.enumerated() {
                var resource = Resource(body: body, etag: "\"b\(index)\"")
                resource.faults.throttleBytesPerSecond = 256 << 10
                server.serve("/b\(index).bin", resource)
            }
            try await Sandbox.with { box in
                try (0..<2).map { server.url("/b\($0).bin") }.joined(separator: "\n").write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let stopped = try await box.run(["get", "-i", "list.txt", "--dir", "out", "--max-time", "1", "--quiet"])
                #expect(stopped.exitCode == 3, "\(stopped.stderr)")
                #expect(stopped.stderr.contains("stopped after --max-time 1 s") && stopped.stderr.contains("run the same command again"), "\(stopped.stderr)")
                #expect(!fileExists(box.path("out/b0.bin")) && !fileExists(box.path("out/b1.bin")))
                for (index, body) in bodies.enumerated() { server.serve("/b\(index).bin", Resource(body: body, etag: "\"b\(index)\"")) }
                let resumed = try await box.run(["get", "-i", "list.txt", "--dir", "out", "--max-time", "0"])
                #expect(resumed.exitCode == 0, "\(resumed.stderr)")
                for (index, body) in bodies.enumerated() { #expect(contentMismatch(box.path("out/b\(index).bin"), expected: body) == nil) }
            }
        }
    }

    @Test func maxTimeStopsAndKeepsTheStateToResume() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(2 << 20, seed: 137)
            var resource = Resource(body: body, etag: "\"m\"")
            resource.faults.throttleBytesPerSecond = 256 << 10
            server.serve("/f.bin", resource)
            try await Sandbox.with { box in
                let stopped = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin", "--max-time", "1"])
                #expect(stopped.exitCode == 3, "\(stopped.stderr)")
                #expect(stopped.stderr.contains("--max-time"), "\(stopped.stderr)")
                #expect(fileExists(box.path("f.bin.haul-part")))
                server.serve("/f.bin", Resource(body: body, etag: "\"m\""))
                let resumed = try await box.run(["get", server.url("/f.bin"), "-o", "f.bin"])
                #expect(resumed.exitCode == 0, "\(resumed.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: body) == nil)
            }
        }
    }

    // MARK: Planted links

    /// A link at the partial path that no record of Haul's names is foreign: it is removed, never written through,
    /// and the download starts from empty.
    @Test func aLinkPlantedAtThePartialPathIsNeverWrittenThrough() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(200_000, seed: 134)
            server.serve("/f.bin", Resource(body: body, etag: "\"l\""))
            try await Sandbox.with { box in
                let secret = box.path("secret"), missing = box.path("created-by-haul")
                try writeBytes(Array("keep me".utf8), to: secret)
                for (name, target) in [("a.bin", secret), ("b.bin", missing)] {
                    #expect(symlink(target, box.path(name + ".haul-part")) == 0)
                    let result = try await box.run(["get", server.url("/f.bin"), "-o", name])
                    #expect(result.exitCode == 0, "\(name): \(result.stderr)")
                    #expect(contentMismatch(box.path(name), expected: body) == nil)
                    var info = stat()
                    #expect(lstat(box.path(name), &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG)
                }
                #expect(readBytes(secret) == Array("keep me".utf8))
                #expect(!fileExists(missing), "a dangling link made Haul create its target")
            }
        }
    }

    /// Another user plants the link in a shared sticky folder, as in /tmp (needs root to act as that user).
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root and setpriv"))
    func aLinkPlantedByAnotherUserInASharedFolderIsNeverWrittenThrough() async throws {
        try await withTestServer { server in
            server.serve("/report.pdf", Resource(body: TestData.bytes(150_000, seed: 136), etag: "\"p\""))
            try await Sandbox.with { box in
                let shared = box.path("shared"), secret = box.path("secret")
                try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
                #expect(chmod(shared, 0o1777) == 0)
                #expect(chmod(box.root, 0o755) == 0 && chmod(box.work, 0o755) == 0)
                try writeBytes(Array("victim's data".utf8), to: secret)
                let planter = ChildProcess()
                planter.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
                planter.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "ln", "-s", secret, shared + "/report.pdf.haul-part"]
                try planter.run()
                planter.waitUntilExit()
                #expect(planter.terminationStatus == 0)
                var info = stat()
                #expect(lstat(shared + "/report.pdf.haul-part", &info) == 0 && info.st_uid == 65534)
                let result = try await box.run(["get", server.url("/report.pdf"), "-o", shared + "/report.pdf"])
                // Not Haul's partial file: removed (root may, in a sticky folder), never written through.
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(readBytes(secret) == Array("victim's data".utf8), "the link's target was written")
                #expect(lstat(shared + "/report.pdf", &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_uid == 0)
                #expect(readBytes(shared + "/report.pdf") == TestData.bytes(150_000, seed: 136))
            }
        }
    }

    @Test func continueRefusesASymlinkedDestination() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(200_000, seed: 135)
            server.serve("/f.bin", Resource(body: body, etag: "\"c\""))
            try await Sandbox.with { box in
                let real = box.path("real.bin")
                let prefix = Array(body.prefix(50_000))
                try writeBytes(prefix, to: real)
                #expect(symlink(real, box.path("link.bin")) == 0)
                let refused = try await box.run(["get", server.url("/f.bin"), "-o", "link.bin", "--continue"])
                #expect(refused.exitCode != 0)
                #expect(refused.stderr.contains("symbolic link"), "\(refused.stderr)")
                #expect(readBytes(real) == prefix)
                let named = try await box.run(["get", server.url("/f.bin"), "-o", real, "--continue"])
                #expect(named.exitCode == 0, "\(named.stderr)")
                #expect(contentMismatch(real, expected: body) == nil)
            }
        }
    }
}
