import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `--on-complete CMD`: a shell command after each download finishes or fails, with the task in `HAUL_TASK_*`.
/// `haul get` waits for it before exiting; `haul add` gives it to the daemon with the task.
@Suite struct OnCompleteCLITests {
    /// The `HAUL_*` variables a hook saved with `env`, by name.
    func savedEnvironment(_ path: String) -> [String: String] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var variables: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            variables[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return variables
    }

    /// A hook that takes a moment and then saves its `HAUL_*` variables to `path`.
    func slowHook(saving path: String) -> String { "sleep 1; env | grep '^HAUL_' > '\(path)'" }

    @Test func getWaitsForTheCommandWhichSeesTheFinishedFile() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(200_000, seed: 1301)
            server.serve("/file.bin", Resource(body: body, etag: "\"h\""))
            try await Sandbox.with { box in
                let saved = box.path("hook.env")
                // Credentials in the URL: the hook gets the URL without the password.
                let url = server.url("/file.bin").replacingOccurrences(of: "http://", with: "http://me:sekrit@")
                let result = try await box.run(["get", url, "-o", "file.bin", "--on-complete", slowHook(saving: saved)])
                #expect(result.exitCode == 0, "\(result)")
                // Looked at once, right after haul exited: haul waited for the command.
                let variables = savedEnvironment(saved)
                #expect(variables["HAUL_TASK_STATE"] == "finished", "\(variables)")
                #expect(variables["HAUL_TASK_PATH"] == box.path("file.bin"))
                #expect(variables["HAUL_TASK_BYTES"] == String(body.count))
                #expect(variables["HAUL_TASK_ERROR"] == "")
                let shownURL = variables["HAUL_TASK_URL"] ?? ""
                #expect(shownURL.contains("***@127.0.0.1") && !shownURL.contains("sekrit"), "\(shownURL)")
                #expect(!result.stderr.contains("sekrit"))
                #expect(contentMismatch(box.path("file.bin"), expected: body) == nil)
            }
        }
    }

    /// The hook starts as a shell would start it: no signal blocked, and SIGPIPE (which haul's network layer ignores
    /// in its own process), SIGINT, SIGTERM, SIGHUP and SIGQUIT at their defaults, so `yes | head` ends and SIGTERM
    /// stops it. Read from the hook shell's own `/proc/self/status`.
    @Test func theCommandStartsWithNoSignalBlockedOrIgnored() async throws {
        try await withTestServer { server in
            server.serve("/file.bin", Resource(body: TestData.bytes(1_000, seed: 1302), etag: "\"s\""))
            try await Sandbox.with { box in
                let saved = box.path("hook.status")
                let result = try await box.run(["get", server.url("/file.bin"), "-o", "file.bin", "--on-complete", "grep -E '^Sig(Blk|Ign):' /proc/self/status > '\(saved)'"])
                #expect(result.exitCode == 0, "\(result)")
                let text = (try? String(contentsOfFile: saved, encoding: .utf8)) ?? ""
                func mask(_ name: String) -> UInt64? {
                    text.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                        .flatMap { UInt64($0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces), radix: 16) }
                }
                let stops: UInt64 = [SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM].reduce(0) { $0 | (1 << UInt64($1 - 1)) }
                #expect(mask("SigBlk") == 0, "\(text)")
                #expect(mask("SigIgn").map { $0 & stops } == 0, "\(text)")
            }
        }
    }

    @Test func aFailedGetRunsItWithTheErrorAndJSONStaysOnStdout() async throws {
        try await withTestServer { server in
            try await Sandbox.with { box in
                let saved = box.path("hook.env")
                let hook = "echo hook-was-here; env | grep '^HAUL_' > '\(saved)'; exit 3"
                let result = try await box.run(["get", server.url("/missing.bin"), "-o", "out.bin", "--json", "--on-complete", hook])
                #expect(result.exitCode == 4, "the download's exit code, not the command's: \(result)")
                let variables = savedEnvironment(saved)
                #expect(variables["HAUL_TASK_STATE"] == "failed", "\(variables)")
                #expect(variables["HAUL_TASK_ERROR"]?.contains("404") == true, "\(variables)")
                // With --json, stdout carries only events: the command's output goes to stderr.
                let events = try result.jsonEvents()
                #expect(events.last?["type"] as? String == "failed", "\(events)")
                #expect(result.stderr.contains("hook-was-here"), "\(result.stderr)")
                #expect(result.stderr.contains("--on-complete command exited with status 3"), "\(result.stderr)")
            }
        }
    }

    @Test func aBatchRunsItOncePerDownloadBeforeExiting() async throws {
        try await withTestServer { server in
            for name in ["a", "b"] { server.serve("/\(name).bin", Resource(body: TestData.bytes(50_000, seed: 1302), etag: "\"\(name)\"")) }
            try await Sandbox.with { box in
                let log = box.path("hooks.txt")
                let hook = "sleep 0.5; echo \"$HAUL_SESSION $HAUL_TASK_STATE $HAUL_TASK_ID\" >> '\(log)'"
                let urls = ["/a.bin", "/b.bin", "/missing.bin"].map(server.url)
                let result = try await box.run(["get"] + urls + ["-P", "out", "--on-complete", hook])
                #expect(result.exitCode == 4, "\(result)")
                let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
                #expect(lines.count == 3, "one run per download, all before haul exited: \(lines)")
                #expect(lines.filter { $0.contains(" finished ") }.count == 2 && lines.filter { $0.contains(" failed ") }.count == 1, "\(lines)")
                #expect(lines.allSatisfy { $0.hasPrefix("get-") }, "HAUL_SESSION names the batch: \(lines)")
                #expect(Set(lines.map { $0.split(separator: " ").last ?? "" }).count == 3, "each task's own id: \(lines)")
            }
        }
    }

    @Test func addGivesTheCommandToTheDaemonForThatTaskOnly() async throws {
        try await withTestServer { server in
            for name in ["a", "b"] { server.serve("/\(name).bin", Resource(body: TestData.bytes(60_000, seed: 1303), etag: "\"\(name)\"")) }
            try await Sandbox.with { box in
                let daemon = try await startDaemon(box)
                let log = box.path("hooks.txt")
                let hook = "echo \"$HAUL_SESSION $HAUL_TASK_STATE $HAUL_TASK_ID $HAUL_TASK_PATH\" >> '\(log)'"
                let first = try await box.run(["add", server.url("/a.bin"), "-o", "a.bin", "--on-complete", hook, "--no-autostart"])
                let second = try await box.run(["add", server.url("/b.bin"), "-o", "b.bin", "--no-autostart"])
                let a = try #require(first.stdoutLines.first, "\(first)")
                let b = try #require(second.stdoutLines.first, "\(second)")
                let waited = try await box.run(["wait", a, b, "--no-autostart"])
                #expect(waited.exitCode == 0, "\(waited)")
                try await eventually("the daemon ran the task's command", timeout: .seconds(20)) {
                    ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("\n")
                }
                let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
                #expect(lines == ["default finished \(a) \(box.path("a.bin"))"], "only the task added with it runs it: \(lines)")
                daemon.signal(SIGTERM)
                try await daemon.wait(timeout: .seconds(10))
            }
        }
    }
}
