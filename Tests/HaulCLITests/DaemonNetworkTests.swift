import Foundation
import HaulTestSupport
import Testing

/// The daemon and the network: a server that cannot be reached is retried with backoff (never a quick
/// failure, as in `haul get`), and `haul ls` says why the task is not moving; a failed task shows its reason.
@Suite struct DaemonNetworkTests {
    @Test func aRefusedPortIsRetriedAndLsSaysWhy() async throws {
        try await Sandbox.with { box in
            _ = try await startDaemon(box)
            let refusing = try RefusingPort()
            defer { refusing.close() }
            let port = refusing.port
            let added = try await box.run([
                "add", "http://127.0.0.1:\(port)/file.bin", "-o", "f.bin", "--retries", "50", "--retry-wait", "30", "--no-autostart",
            ])
            #expect(added.exitCode == 0, "add: \(added.stderr)")
            var last = ""
            try await eventuallyAsync("ls shows the retry and its reason", timeout: .seconds(60), step: .milliseconds(200)) {
                let listed = try await box.run(["ls", "--no-autostart"])
                last = listed.stdout
                return listed.stdout.contains("connection refused") && listed.stdout.contains("127.0.0.1:\(port)")
            }
            #expect(last.contains("running") && last.contains("NOTE") && last.contains("retry 1/50"), "\(last)")
            let json = try await box.run(["ls", "--json", "--no-autostart"])
            let task = try #require(try json.jsonEvents().first)
            #expect(task["state"] as? String == "running" && (task["note"] as? String)?.contains("connection refused") == true, "\(task)")
        }
    }

    @Test func aFailedTaskShowsItsReasonInLs() async throws {
        try await withTestServer { server in
            try await Sandbox.with { box in
                let daemon = try await startDaemon(box)
                let added = try await box.run(["add", server.url("/gone.bin"), "-o", "g.bin", "--no-autostart"])
                #expect(added.exitCode == 0, "add: \(added.stderr)")
                var last = ""
                try await eventuallyAsync("the task fails", timeout: .seconds(60), step: .milliseconds(200)) {
                    let listed = try await box.run(["ls", "--no-autostart"])
                    last = listed.stdout
                    return listed.stdout.contains("failed")
                }
                #expect(last.contains("404"), "ls names the reason: \(last)")
                // The daemon's log tells the task's story too, with the reason.
                let id = try #require(added.stdoutLines.first)
                try await eventually("the log has the failure") { daemon.stderrSoFar().contains("failed \(id)") }
                let log = daemon.stderrSoFar()
                #expect(log.contains("added \(id)") && log.contains("started \(id)") && log.contains("404"), "\(log)")
            }
        }
    }

    /// What `tasks.add` refuses at once (a taken destination, a folder, an id of another URL's task) is HaulDaemonTests'
    /// (AddChecksTests); here, that `haul add` says it in one line, exits 2 and prints no id.
    @Test func addSaysAtOnceWhatTheDaemonRefused() async throws {
        try await withTestServer { server in
            server.serve("/a.bin", Resource(body: TestData.bytes(100_000, seed: 171), etag: "\"a\""))
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                try writeBytes([1, 2, 3], to: box.path("taken.bin"))
                let taken = try await box.run(["add", server.url("/a.bin"), "-o", "taken.bin", "--no-autostart"])
                #expect(taken.exitCode == 2 && taken.stderr.contains("already exists"), "\(taken)")
                #expect(taken.stdout.isEmpty && taken.stderrLines.count == 1, "nothing was queued: \(taken)")
            }
        }
    }

    @Test func daemonStopStopsTheRunningDaemonAndIsQuietWhenNoneRuns() async throws {
        try await Sandbox.with { box in
            let daemon = try await startDaemon(box)
            let stopped = try await box.run(["daemon", "stop"])
            #expect(stopped.exitCode == 0 && stopped.stderr.contains("stopped the haul daemon"), "\(stopped)")
            let ended = try await daemon.wait(timeout: .seconds(30))
            #expect(ended.exitCode == 0 && !ended.signalled, "the daemon stops cleanly: \(ended)")
            let again = try await box.run(["daemon", "stop"])
            #expect(again.exitCode == 0 && again.stderr.contains("no haul daemon is running"), "\(again)")
        }
    }

    @Test func sessionSetChangesConcurrencyAndTheCompletionCommand() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(50_000, seed: 172)
            server.serve("/s.bin", Resource(body: body, etag: "\"s\""))
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                let held = try await box.run(["session", "set", "--max-concurrent", "0", "--no-autostart"])
                #expect(held.exitCode == 0, "\(held.stderr)")
                let marker = box.path("done.txt")
                let hooked = try await box.run(["session", "set", "--on-complete", "printf '%s %s %s' \"$HAUL_TASK_STATE\" \"$HAUL_TASK_PATH\" \"$HAUL_TASK_URL\" > '\(marker)'", "--no-autostart"])
                #expect(hooked.exitCode == 0, "\(hooked.stderr)")
                let secretURL = server.url("/s.bin").replacingOccurrences(of: "http://", with: "http://me:hunter2@")
                let added = try await box.run(["add", secretURL, "-o", "s.bin", "--no-autostart"])
                let id = try #require(added.stdoutLines.first, "add: \(added.stderr)")
                let listed = try await box.run(["ls", "--json", "--no-autostart"])
                #expect(try listed.jsonEvents().first?["state"] as? String == "waiting", "held by --max-concurrent 0: \(listed.stdout)")
                #expect(server.requests("/s.bin").isEmpty)
                let released = try await box.run(["session", "set", "--max-concurrent", "2", "--no-autostart"])
                #expect(released.exitCode == 0, "\(released.stderr)")
                let waited = try await box.run(["wait", id, "--no-autostart"])
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                #expect(contentMismatch(box.path("s.bin"), expected: body) == nil)
                try await eventually("the completion command ran") { fileExists(marker) && (fileSize(marker) ?? 0) > 0 }
                let ran = try String(contentsOfFile: marker, encoding: .utf8)
                // The URL's password never reaches the hook, which may log it.
                #expect(ran == "finished \(box.path("s.bin")) \(server.url("/s.bin").replacingOccurrences(of: "http://", with: "http://***@"))", "\(ran)")
                let nothing = try await box.run(["session", "set", "--no-autostart"])
                #expect(nothing.exitCode == 2, "\(nothing)")
            }
        }
    }
}
