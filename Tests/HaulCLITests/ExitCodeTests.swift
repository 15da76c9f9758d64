import Foundation
import HaulTestSupport
import Testing

/// Exit codes, error messages and `--json` output of `haul get`.
@Suite struct ExitCodeTests {
    struct BadInput: Sendable, CustomTestStringConvertible {
        var name: String
        /// Arguments after `get`; "URL" is replaced by a test server URL, "OUT" by the output path.
        var arguments: [String]
        var testDescription: String { name }
    }

    static let badInputs: [BadInput] = [
        BadInput(name: "malformed URL", arguments: ["http://", "-o", "OUT"]),
        BadInput(name: "unsupported scheme", arguments: ["ftp://127.0.0.1/file.bin", "-o", "OUT"]),
        BadInput(name: "bad checksum", arguments: ["URL", "-o", "OUT", "--checksum", "sha256:xyz"]),
        BadInput(name: "bad header", arguments: ["URL", "-o", "OUT", "-H", "NoColon"]),
        BadInput(name: "-o with --dir", arguments: ["URL", "-o", "OUT", "--dir", "somewhere"]),
        BadInput(name: "-o with -d", arguments: ["URL", "-o", "OUT", "-d", "somewhere"]),
        BadInput(name: "bad --limit-rate", arguments: ["URL", "-o", "OUT", "--limit-rate", "fast"]),
        BadInput(name: "port above 65535", arguments: ["http://127.0.0.1:99999/x", "-o", "OUT"]),
        BadInput(name: "IPv6 port above 65535", arguments: ["http://[::1]:99999/x", "-o", "OUT"]),
        BadInput(name: "port 0", arguments: ["http://127.0.0.1:0/x", "-o", "OUT"]),
    ]

    @Test(arguments: badInputs)
    func badInputExits2WithOneLineAndTouchesNothing(_ input: BadInput) async throws {
        try await withTestServer { server in
            server.serve("/file.bin", Resource(body: TestData.bytes(4096), etag: "\"x\""))
            try await Sandbox.with { box in
                let arguments = ["get"] + input.arguments.map {
                    $0 == "URL" ? server.url("/file.bin") : $0 == "OUT" ? box.path("out.bin") : $0
                }
                let result = try await box.run(arguments)
                #expect(result.exitCode == 2 && !result.signalled, "\(input.name): \(result)")
                #expect(result.stderrLines.count == 1, "one line of stderr, got: \(result.stderr)")
                #expect(result.stderr.hasPrefix("haul: "), "stderr: \(result.stderr)")
                #expect(result.stdout.isEmpty)
                #expect(server.allRequests().isEmpty, "bad input must not cause a request")
                #expect(box.workContents().isEmpty, "bad input must not create files: \(box.workContents())")
                #expect(box.records().isEmpty)
            }
        }
    }

    /// A negative number is a value out of range, said in the option's own words, not "Missing value".
    @Test(arguments: [
        ["get", "URL", "--retries", "-1"], ["get", "URL", "--max-connections-per-host", "-1"], ["get", "URL", "--min-segment-size", "-1"],
        ["get", "URL", "--segments", "-2"], ["add", "URL", "--retries", "-1", "--no-autostart"],
        ["session", "set", "--max-concurrent", "-1", "--no-autostart"], ["session", "set", "--limit-rate", "-5", "--no-autostart"],
        ["daemon", "--idle-exit", "-1"], ["daemon", "--max-sessions", "-1"],
    ])
    func negativeNumbersAreOutOfRangeNotMissing(_ arguments: [String]) async throws {
        try await Sandbox.with { box in
            let result = try await box.run(arguments.map { $0 == "URL" ? "http://127.0.0.1:9/f" : $0 })
            #expect(result.exitCode == 2, "\(arguments): \(result)")
            #expect(!result.stderr.contains("Missing value"), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(arguments[arguments.firstIndex { $0.hasPrefix("-") && $0.count > 2 } ?? 0]), "names the option: \(result.stderr)")
        }
    }

    @Test func aFailedDownloadsErrorLineNamesItsURLOnce() async throws {
        try await withTestServer { server in
            server.serve("/ok.bin", Resource(body: TestData.bytes(1_000), etag: "\"ok\""))
            try await Sandbox.with { box in
                let missing = server.url("/missing.bin")
                for arguments in [["get", missing, "-o", "one.bin"], ["get", server.url("/ok.bin"), missing, "--dir", "many"]] {
                    let result = try await box.run(arguments)
                    #expect(result.exitCode == 4, "\(result)")
                    let line = try #require(result.stderrLines.first { $0.hasPrefix("haul: error:") }, "\(result.stderr)")
                    #expect(line.components(separatedBy: missing).count == 2, "the URL once: \(line)")
                }
            }
        }
    }

    @Test func notFoundExits4() async throws {
        try await withTestServer { server in
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/missing.bin"), "-o", box.path("out.bin")])
                #expect(result.exitCode == 4, "\(result)")
                #expect(result.stderr.contains("404"), "stderr: \(result.stderr)")
                #expect(!fileExists(box.path("out.bin")))
            }
        }
    }

    @Test func checksumMismatchExits5AndLeavesNoFile() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(300_000, seed: 5)
            server.serve("/file.bin", Resource(body: body, etag: "\"c\""))
            try await Sandbox.with { box in
                let destination = box.path("out.bin")
                let wrong = sha256Hex(TestData.bytes(300_000, seed: 6))
                let result = try await box.run(["get", server.url("/file.bin"), "-o", destination, "--checksum", "sha256:\(wrong)"])
                #expect(result.exitCode == 5, "\(result)")
                #expect(result.stderr.contains("checksum mismatch"), "stderr: \(result.stderr)")
                #expect(!fileExists(destination))
                #expect(!fileExists(destination + ".haul-part"))

                let right = sha256Hex(body)
                let ok = try await box.run(["get", server.url("/file.bin"), "-o", destination, "--checksum", "sha256:\(right)"])
                #expect(ok.exitCode == 0, "\(ok)")
                #expect(contentMismatch(destination, expected: body) == nil)
            }
        }
    }

    @Test func existingFileNeedsOverwrite() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(200_000, seed: 7)
            server.serve("/file.bin", Resource(body: body, etag: "\"o\""))
            try await Sandbox.with { box in
                let destination = box.path("out.bin")
                let original = Array("precious data\n".utf8)
                try writeBytes(original, to: destination)

                let refused = try await box.run(["get", server.url("/file.bin"), "-o", destination])
                #expect(refused.exitCode == 2, "\(refused)")
                #expect(refused.stderr.contains("--overwrite"), "stderr: \(refused.stderr)")
                #expect(readBytes(destination) == original, "the existing file must be left unchanged")
                #expect(server.allRequests().isEmpty)

                let replaced = try await box.run(["get", server.url("/file.bin"), "-o", destination, "--overwrite"])
                #expect(replaced.exitCode == 0, "\(replaced)")
                #expect(contentMismatch(destination, expected: body) == nil)
                #expect(box.workContents() == ["out.bin"])
            }
        }
    }

    /// A refused connection is a network error retried by `--retries`/`--retry-wait`, failing fast: the process
    /// must not wait out the 30 s default `--connect-timeout` per attempt (AsyncHTTPClient's own retrying did).
    @Test func connectionRefusedExits3Fast() async throws {
        try await Sandbox.with { box in
            let refusing = try RefusingPort()
            defer { refusing.close() }
            let port = refusing.port
            let result = try await box.run(
                ["get", "http://127.0.0.1:\(port)/file.bin", "-o", box.path("out.bin"), "--retries", "1", "--retry-wait", "0.05"],
                timeout: .seconds(15))
            #expect(result.exitCode == 3, "\(result)")
            #expect(result.stderr.contains("refused"), "stderr: \(result.stderr)")
            #expect(result.stderr.contains("retry 1/1"), "one retry is reported: \(result.stderr)")
            #expect(!fileExists(box.path("out.bin")))
        }
    }

    @Test func jsonEventsFromStartedToFinished() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(1 << 20, seed: 8)
            var resource = Resource(body: body, etag: "\"j\"")
            resource.faults.throttleBytesPerSecond = 2 << 20
            server.serve("/file.bin", resource)
            try await Sandbox.with { box in
                let destination = box.path("out.bin")
                let result = try await box.run(["get", server.url("/file.bin"), "-o", destination, "--json"])
                #expect(result.exitCode == 0, "\(result)")
                let events = try result.jsonEvents()
                let names = events.map { $0["type"] as? String ?? "?" }
                #expect(names.first == "started", "events: \(names)")
                #expect(names.last == "finished", "events: \(names)")
                #expect(names.contains("progress"), "a 0.5 s download reports progress: \(names)")
                #expect(Set(names).isSubset(of: ["started", "progress", "retrying", "restarted", "finished", "failed"]))
                // The protocol's `finished` shape: the task object, plus what only a single download knows.
                let task = events.last?["task"] as? [String: Any]
                #expect((task?["bytes"] as? NSNumber)?.intValue == body.count)
                #expect(task?["path"] as? String == destination)
                #expect(task?["state"] as? String == "finished")
                #expect((events.last?["fetchedBytes"] as? NSNumber)?.intValue == body.count)
                let ids = Set(events.compactMap { $0["id"] as? String ?? ($0["task"] as? [String: Any])?["id"] as? String })
                #expect(ids.count == 1, "one id names the download in every event: \(ids)")
                #expect(contentMismatch(destination, expected: body) == nil)
            }
        }
    }

    @Test func jsonFailureEndsWithFailedAndExitCode() async throws {
        try await withTestServer { server in
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/missing.bin"), "-o", box.path("out.bin"), "--json"])
                #expect(result.exitCode == 4, "\(result)")
                let events = try result.jsonEvents()
                #expect(!events.isEmpty, "stdout: \(result.stdout)")
                #expect(events.last?["type"] as? String == "failed")
                #expect((events.last?["exitCode"] as? NSNumber)?.intValue == 4)
                // The task's error carries its typed reason, as the protocol and `haul ls --json` show it.
                let error = (events.last?["task"] as? [String: Any])?["error"] as? [String: Any]
                #expect(error?["kind"] as? String == "httpStatus", "\(events)")
                let failure = error?["failure"] as? [String: Any]
                #expect(((failure?["httpStatus"] as? [String: Any])?["_0"] as? NSNumber)?.intValue == 404, "\(events)")
            }
        }
    }
}
