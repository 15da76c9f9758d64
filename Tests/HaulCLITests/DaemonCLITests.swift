import Foundation
import HaulKit
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `haul daemon` and its clients as separate processes: downloads outlive the client that asked for them,
/// a daemon killed with SIGKILL resumes from its checkpoints, and a returning client gets what it missed.
@Suite struct DaemonCLITests {
    static let size = 8 << 20
    static let rate = 1 << 20
    static let etag = "\"daemon-v1\""

    /// `stallAfter`: every response stops sending after that many body bytes (until the client gives up on it), so
    /// that a download is surely still running when a test acts on it, however long the test process is starved.
    func serve(_ server: TestServer, _ path: String, _ body: [UInt8], rate: Int? = Self.rate, stallAfter: Int? = nil) {
        var resource = Resource(body: body, etag: Self.etag)
        resource.faults.throttleBytesPerSecond = rate
        resource.faults.stallAfterBytes = stallAfter
        server.serve(path, resource)
    }

    func socket(_ box: Sandbox) -> String { box.home + "/run/daemon.sock" }

    /// The tasks as `haul ls --json` prints them.
    func list(_ box: Sandbox) async throws -> [[String: Any]] {
        let result = try await box.run(["ls", "--json", "--no-autostart"])
        #expect(result.exitCode == 0, "ls failed: \(result.stderr)")
        return try result.jsonEvents()
    }

    /// The process exists and is not a zombie (an orphaned daemon is reaped by init, maybe not at once).
    func isAlive(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        return !stat[close...].hasPrefix(") Z")
    }

    @Test func addReturnsAtOnceAndTheDaemonItStartedFinishesTheFile() async throws {
        try await withTestServer { server in
            let source = TestData.bytes(Self.size, seed: 501)
            serve(server, "/a.bin", source)
            try await Sandbox.with { box in
                let destination = box.path("a.bin")
                let added = try await box.run(["add", server.url("/a.bin"), "-o", "a.bin"])
                #expect(added.exitCode == 0, "add failed: \(added.stderr)")
                let id = try #require(added.stdoutLines.first)
                #expect(added.stdoutLines.count == 1 && id.count >= 8, "add prints one id per line: \(added.stdout)")
                #expect(added.stderr.contains("started the haul daemon") && added.stderr.contains("/daemon.log"),
                        "an autostarted daemon says once where it logs: \(added.stderr)")
                // add has exited; the download goes on in the daemon it started (at 1 MiB/s it is usually still
                // running, but a loaded machine may be slow to look: assert states, not timing).
                let appearedBeforeListing = fileExists(destination)
                let tasks = try await list(box)
                #expect(tasks.count == 1 && tasks.first?["id"] as? String == id)
                let state = tasks.first?["state"] as? String ?? ""
                #expect(["waiting", "running", "finished"].contains(state), "\(tasks)")
                #expect(!appearedBeforeListing || state == "finished", "the file must appear only when complete: \(tasks)")
                let pid = try #require(box.daemonPIDs().first, "the autostarted daemon wrote its pid file")
                #expect(isAlive(pid))

                try await eventually("the file arrives", timeout: .seconds(30)) { fileExists(destination) }
                #expect(contentMismatch(destination, expected: source) == nil)
                let waited = try await box.run(["wait", id, "--no-autostart"])
                #expect(waited.exitCode == 0, "wait failed: \(waited.stderr)")
                #expect(try await list(box).first?["state"] as? String == "finished")
                #expect(FileManager.default.contents(atPath: box.home + "/daemon.log").map { !$0.isEmpty } == true)

                kill(pid, SIGTERM)
                try await eventually("the daemon exits on SIGTERM", timeout: .seconds(3)) { !isAlive(pid) }
                #expect(!fileExists(socket(box)), "a clean exit removes the socket")
            }
        }
    }

    @Test func daemonKilledMidDownloadResumesTheRemainderAfterRestart() async throws {
        try await withTestServer { server in
            let source = TestData.bytes(Self.size, seed: 502)
            serve(server, "/big.bin", source, stallAfter: 3 << 20)
            try await Sandbox.with { box in
                let destination = box.path("big.bin")
                let first = try await startDaemon(box)
                let added = try await box.run(["add", server.url("/big.bin"), "-o", "big.bin", "--no-autostart"])
                let id = try #require(added.stdoutLines.first, "add failed: \(added.stderr)")
                try await eventually("a checkpoint beyond 1 MiB is recorded") {
                    guard first.isRunning else { throw HarnessError("the daemon died: \(first.stderrSoFar())") }
                    return (box.recordedOffset() ?? 0) >= 1 << 20
                }
                first.signal(SIGKILL)
                let killed = try await first.wait(timeout: .seconds(10))
                #expect(killed.signalled && killed.exitCode == SIGKILL)
                let held = try #require(box.recordedOffset())
                #expect(held > 0 && held < Self.size && !fileExists(destination))

                serve(server, "/big.bin", source, rate: nil)
                let before = server.requests("/big.bin").count
                _ = try await startDaemon(box)
                let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "wait failed: \(waited.stderr)")
                #expect(contentMismatch(destination, expected: source) == nil)
                let resumes = Array(server.requests("/big.bin").dropFirst(before))
                #expect(resumes.count == 1, "one resume request: \(resumes.map(\.headers))")
                #expect(resumes.first?.header("Range") == "bytes=\(resumeStart(held))-")
                #expect(resumes.first?.header("If-Range") == Self.etag)
            }
        }
    }

    @Test func waitOutlivesADaemonCrashByStartingANewOne() async throws {
        try await withTestServer { server in
            // 2 MiB at 64 KiB/s: 32 s, so the daemon is surely killed mid-download even when the test process is
            // starved for seconds while the suite starts, and the next one fetches the rest within the wait's minute
            // (the server cannot be switched to full speed for the next daemon alone: its throttle applies to the
            // running response too).
            let source = TestData.bytes(2 << 20, seed: 511)
            serve(server, "/c.bin", source, rate: 64 << 10)
            try await Sandbox.with { box in
                let added = try await box.run(["add", server.url("/c.bin"), "-o", "c.bin"])
                let id = try #require(added.stdoutLines.first, "add: \(added.stderr)")
                let first = try #require(box.daemonPIDs().first)
                let waiting = try box.start(["wait", id])
                // Killed from a thread of its own the moment a checkpoint exists: a starved cooperative pool could
                // otherwise let the daemon finish first.
                try await signalWhen(pid: first, SIGKILL, "a checkpoint is recorded", isRunning: { kill(first, 0) == 0 }) {
                    (box.recordedOffset() ?? 0) > 0 && !fileExists(box.path("c.bin"))
                }
                try await eventually("the daemon is gone") { !isAlive(first) }
                let result = try await waiting.wait(timeout: .seconds(60))
                #expect(result.exitCode == 0, "wait: \(result.stderr)")
                #expect(contentMismatch(box.path("c.bin"), expected: source) == nil)
                let log = (try? String(contentsOfFile: box.home + "/daemon.log", encoding: .utf8)) ?? ""
                let second = try #require(box.daemonPIDs().first, "no daemon running; its log: \(log)")
                #expect(second != first && isAlive(second), "wait started a new daemon")
            }
        }
    }

    /// `daemon --verbose` logs what its help says: each connection and request (by method), and, as `haul get -v`,
    /// each download's requests and answers, with no secret of theirs.
    @Test func aVerboseDaemonLogsConnectionsRequestsAndDownloadsWithoutSecrets() async throws {
        try await withTestServer { server in
            serve(server, "/v.bin", TestData.bytes(64 << 10, seed: 509), rate: nil)
            try await Sandbox.with { box in
                let daemon = try box.start(["daemon", "--verbose"])
                try await eventually("the daemon listens") { daemon.stderrSoFar().contains("listening on") }
                let url = server.url("/v.bin?token=SEKRET-token")
                let added = try await box.run(["add", url, "-o", "v.bin", "-H", "Authorization: Bearer SEKRET-bearer", "--no-autostart"])
                let id = try #require(added.stdoutLines.first, "add failed: \(added.stderr)")
                let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "wait failed: \(waited.stderr)")
                try await eventually("the daemon logged the download") { daemon.stderrSoFar().contains(" from http://") }
                let log = daemon.stderrSoFar()
                #expect(log.contains("opened") && log.contains(": tasks.add"), "\(log)")
                #expect(log.contains("GET http://127.0.0.1"), "\(log)")
                #expect(!log.contains("SEKRET"), "a secret reached the daemon's log: \(log)")
                daemon.signal(SIGTERM)
                _ = try await daemon.wait(timeout: .seconds(10))
            }
        }
    }

    @Test func sigtermCheckpointsWithinTwoSecondsAndTheNextDaemonResumes() async throws {
        try await withTestServer { server in
            let source = TestData.bytes(Self.size, seed: 503)
            serve(server, "/t.bin", source, stallAfter: 3 << 20)
            try await Sandbox.with { box in
                let daemon = try await startDaemon(box)
                let added = try await box.run(["add", server.url("/t.bin"), "-o", "t.bin", "--no-autostart"])
                let id = try #require(added.stdoutLines.first, "add failed: \(added.stderr)")
                try await eventually("the download has started") { (fileSize(box.path("t.bin.haul-part")) ?? 0) >= 1 << 20 }
                let start = ContinuousClock.now
                daemon.signal(SIGTERM)
                let stopped = try await daemon.wait(timeout: .seconds(10))
                let took = (daemon.endedAt ?? ContinuousClock.now) - start
                #expect(took < .seconds(2), "SIGTERM took \(took)")
                #expect(stopped.exitCode == 0 && !stopped.signalled, "daemon: \(stopped.stderr)")
                let held = try #require(box.recordedOffset())
                #expect(held >= 1 << 20, "SIGTERM saved the progress")

                serve(server, "/t.bin", source, rate: nil)
                let before = server.requests("/t.bin").count
                _ = try await startDaemon(box)
                let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "wait failed: \(waited.stderr)")
                #expect(contentMismatch(box.path("t.bin"), expected: source) == nil)
                #expect(server.requests("/t.bin").dropFirst(before).first?.header("Range") == "bytes=\(resumeStart(held))-")
            }
        }
    }

    @Test func pauseResumeRemoveAndWaitExitCodes() async throws {
        try await withTestServer { server in
            let source = TestData.bytes(2 << 20, seed: 504)
            serve(server, "/p.bin", source, rate: 256 << 10, stallAfter: 1 << 20)
            server.route("/missing") { _ in .text(404, "no such file") }
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                let added = try await box.run(["add", server.url("/p.bin"), server.url("/missing"), "--no-autostart"])
                #expect(added.stdoutLines.count == 2, "add: \(added.stdout) \(added.stderr)")
                let id = try #require(added.stdoutLines.first), missing = try #require(added.stdoutLines.last)

                let failed = try await box.run(["wait", String(missing.prefix(8)), "--no-autostart"])
                #expect(failed.exitCode == 4, "a 404 ends wait with the HTTP exit code: \(failed)")
                #expect(failed.stderr.contains("404"), "stderr: \(failed.stderr)")

                #expect(try await box.run(["pause", id, "--no-autostart"]).exitCode == 0)
                #expect(try await list(box).first { $0["id"] as? String == id }?["state"] as? String == "paused")
                let unknown = try await box.run(["pause", "no-such-task", "--no-autostart"])
                #expect(unknown.exitCode == 2 && unknown.stderrLines.count == 1, "unknown id: \(unknown)")

                serve(server, "/p.bin", source, rate: nil)
                #expect(try await box.run(["resume", id, "--no-autostart"]).exitCode == 0)
                #expect(try await box.run(["wait", id, "--no-autostart"]).exitCode == 0)
                #expect(contentMismatch(box.path("p.bin"), expected: source) == nil)

                #expect(try await box.run(["rm", "--all", "--delete-file", "--no-autostart"]).exitCode == 0)
                #expect(try await list(box).isEmpty)
                #expect(!fileExists(box.path("p.bin")), "--delete-file removes finished files")
            }
        }
    }

    /// `haul priority`: a task queued last, raised, is the next to start; a negative value goes after `--`; bad
    /// input is a usage error (exit 2) in one line.
    @Test func priorityChangesWhichWaitingTaskStartsNext() async throws {
        try await withTestServer { server in
            for name in ["a", "b", "c"] {
                serve(server, "/\(name).bin", TestData.bytes(1 << 20, seed: 520), rate: 128 << 10, stallAfter: 256 << 10)
            }
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                #expect(try await box.run(["session", "set", "--max-concurrent", "1", "--no-autostart"]).exitCode == 0)
                var ids: [String] = []
                for name in ["a", "b", "c"] {
                    let added = try await box.run(["add", server.url("/\(name).bin"), "--no-autostart"])
                    ids.append(try #require(added.stdoutLines.first, "add: \(added.stderr)"))
                }
                let (a, b, c) = (ids[0], ids[1], ids[2])
                try await eventuallyAsync("a runs first", timeout: .seconds(30), step: .milliseconds(100)) {
                    try await list(box).first { $0["id"] as? String == a }?["state"] as? String == "running"
                }
                #expect(try await box.run(["priority", "10", String(c.prefix(8)), "--no-autostart"]).exitCode == 0)
                #expect(try await box.run(["priority", "--no-autostart", "--", "-3", b]).exitCode == 0)
                #expect(try await box.run(["priority", "-3", String(b.prefix(8)), "--no-autostart"]).exitCode == 0, "a negative value as is")
                let tasks = try await list(box)
                #expect(tasks.first { $0["id"] as? String == c }?["priority"] as? NSNumber == 10, "\(tasks)")
                #expect(tasks.first { $0["id"] as? String == b }?["priority"] as? NSNumber == -3, "\(tasks)")

                #expect(try await box.run(["pause", a, "--no-autostart"]).exitCode == 0)
                try await eventuallyAsync("c, raised, starts before b", timeout: .seconds(30), step: .milliseconds(100)) {
                    try await list(box).first { $0["id"] as? String == c }?["state"] as? String == "running"
                }
                #expect(try await list(box).first { $0["id"] as? String == b }?["state"] as? String == "waiting")

                // An empty word (`haul rm "$unset"`) is the prefix of every id: it names none.
                for bad in [["priority", "5"], ["priority", "10000000000", b], ["priority", "x", b], ["priority", "1", "no-such-task"],
                            ["priority", "1", ""], ["rm", ""], ["pause", ""], ["priority", "1", b, "--bogus"]] {
                    let refused = try await box.run(bad + ["--no-autostart"])
                    #expect(refused.exitCode == 2 && refused.stderrLines.count == 1, "\(bad): \(refused)")
                }
                #expect(try await list(box).count == 3, "nothing removed by an empty id")
                _ = try await box.run(["rm", "--all", "--no-autostart"])
            }
        }
    }

    @Test func watchFollowsRunningTasksUntilTheyEnd() async throws {
        try await withTestServer { server in
            let one = TestData.bytes(1200 << 10, seed: 509), two = TestData.bytes(300 << 10, seed: 510)
            // w1 takes 37 s at this rate: it is still running when watch prints a line for it, however late watch
            // starts on a busy machine; then a pause and a resume fetch the rest at full speed.
            serve(server, "/w1.bin", one, rate: 32 << 10)
            serve(server, "/w2.bin", two, rate: 256 << 10)
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                let added = try await box.run(["add", server.url("/w1.bin"), server.url("/w2.bin"), "--no-autostart"])
                #expect(added.stdoutLines.count == 2, "add: \(added.stderr)")
                let w1 = try #require(added.stdoutLines.first)
                let watching = try box.start(["watch", "--no-autostart"] + added.stdoutLines)
                // A line with a speed (its unit depends on how bursty the machine is), not only the first at 0 B.
                try await eventually("watch prints w1's progress with a speed", timeout: .seconds(60)) {
                    watching.stderrSoFar().split(separator: "\n").contains { $0.contains("w1.bin") && $0.hasSuffix("/s") }
                }
                serve(server, "/w1.bin", one, rate: nil)
                #expect(try await box.run(["pause", w1, "--no-autostart"]).exitCode == 0)
                #expect(try await box.run(["resume", w1, "--no-autostart"]).exitCode == 0)
                let watched = try await watching.wait(timeout: .seconds(60))
                #expect(watched.exitCode == 0, "watch: \(watched.stderr)")
                // It returns only once both have ended, and says so.
                #expect(contentMismatch(box.path("w1.bin"), expected: one) == nil)
                #expect(contentMismatch(box.path("w2.bin"), expected: two) == nil)
                #expect(watched.stderr.contains("saved \(box.path("w1.bin"))"), "stderr: \(watched.stderr)")
                #expect(watched.stderrLines.last == "2 finished", "stderr: \(watched.stderr)")
            }
        }
    }

    @Test func watchJSONWritesTheProtocolsEvents() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(600 << 10, seed: 511)
            serve(server, "/j.bin", body, rate: 256 << 10)
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                let added = try await box.run(["add", server.url("/j.bin"), "--no-autostart"])
                let id = try #require(added.stdoutLines.first, "add: \(added.stderr)")
                let watched = try await box.run(["watch", "--json", id, "--no-autostart"], timeout: .seconds(30))
                #expect(watched.exitCode == 0, "watch: \(watched.stderr)")
                let events = try watched.jsonEvents()
                // Every line is one of the protocol's events; the end is there (from an event or from the list).
                #expect(events.allSatisfy { ["added", "stateChanged", "progress", "finished", "failed", "allFinished"].contains($0["type"] as? String ?? "") },
                        "\(watched.stdout)")
                let finished = try #require(events.last { $0["type"] as? String == "finished" }?["task"] as? [String: Any], "\(watched.stdout)")
                #expect(finished["id"] as? String == id)
                #expect(finished["path"] as? String == box.path("j.bin"))
                #expect(contentMismatch(box.path("j.bin"), expected: body) == nil)
            }
        }
    }

    @Test func addCarriesTheFileOptionsOfGet() async throws {
        try await withTestServer { server in
            let source = TestData.bytes(300 << 10, seed: 508)
            serve(server, "/o.bin", source, rate: nil)
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                try writeBytes(Array("old contents".utf8), to: box.path("o.bin"))
                // Refused at once, as haul get would: nothing is queued to fail out of sight.
                let refused = try await box.run(["add", server.url("/o.bin"), "-o", "o.bin", "--no-autostart"])
                #expect(refused.exitCode == 2 && refused.stdout.isEmpty, "an existing file is kept without --overwrite: \(refused)")
                #expect(readBytes(box.path("o.bin")) == Array("old contents".utf8))

                // The file to replace exists before the add (written after it, it could land after the download
                // ended on a busy machine, and replace the download instead). Timed from before the add: the
                // download may already be under way when add returns.
                try writeBytes(Array("older".utf8), to: box.path("o2.bin"))
                let start = ContinuousClock.now
                let replaced = try await box.run([
                    "add", server.url("/o.bin"), "-o", "o2.bin", "--overwrite", "--limit-rate", "200K", "--retries", "2",
                    "--no-autostart",
                ])
                let second = try #require(replaced.stdoutLines.first, "add: \(replaced.stderr)")
                #expect(try await box.run(["wait", second, "--no-autostart"]).exitCode == 0)
                #expect(ContinuousClock.now - start >= .milliseconds(900), "300 KiB at 200 KiB/s takes over a second")
                #expect(contentMismatch(box.path("o2.bin"), expected: source) == nil, "--overwrite replaced the file")

                // --continue without -o continues the file the URL names, as wget -c does.
                try writeBytes(Array(source.prefix(100_000)), to: box.path("o.bin"))
                let before = server.requests("/o.bin").count
                let continued = try await box.run(["add", server.url("/o.bin"), "--continue", "--no-autostart"])
                let third = try #require(continued.stdoutLines.first, "--continue without -o: \(continued)")
                #expect(try await box.run(["wait", third, "--no-autostart"]).exitCode == 0)
                #expect(contentMismatch(box.path("o.bin"), expected: source) == nil)
                #expect(server.requests("/o.bin").dropFirst(before).allSatisfy { $0.header("Range") != nil }, "the bytes held were kept")
            }
        }
    }

    @Test func aClientThatWasAwayReceivesExactlyTheMissedEventsUntilItAcknowledges() async throws {
        try await withTestServer { server in
            let one = TestData.bytes(512 << 10, seed: 505), two = TestData.bytes(300 << 10, seed: 506)
            serve(server, "/one.bin", one, rate: 512 << 10)
            serve(server, "/two.bin", two, rate: 512 << 10)
            server.route("/gone") { _ in .text(404, "gone") }
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                var configuration = SessionConfiguration.background(
                    DaemonEndpoint(socketPath: socket(box), autostart: false))
                configuration.home = HaulHome(path: box.home)
                configuration.completionCommand = "echo \"$HAUL_TASK_ID $HAUL_TASK_STATE\" >> '\(box.path("hooks.txt"))'"

                let app = try await DownloadSession(identifier: "app", configuration: configuration)
                let added = try await app.add([
                    DownloadRequest(url: try #require(URL(string: server.url("/one.bin"))), destination: .file(box.path("one.bin"))),
                    DownloadRequest(url: try #require(URL(string: server.url("/two.bin"))), destination: .file(box.path("two.bin"))),
                    DownloadRequest(url: try #require(URL(string: server.url("/gone"))), destination: .file(box.path("gone.bin"))),
                ])
                #expect(added.count == 3)
                // The client goes away while the daemon downloads.
                await app.close()
                try await eventually("the daemon finishes both files and runs the hooks", timeout: .seconds(30)) {
                    let hooks = (try? String(contentsOfFile: box.path("hooks.txt"), encoding: .utf8)) ?? ""
                    return hooks.split(separator: "\n").count == 3
                }
                #expect(contentMismatch(box.path("one.bin"), expected: one) == nil)
                #expect(contentMismatch(box.path("two.bin"), expected: two) == nil)

                let back = try await DownloadSession(identifier: "app", configuration: configuration)
                let missed = await back.pendingEvents()
                var finished: Set<String> = [], failed: Set<String> = []
                for event in missed {
                    switch event {
                    case .finished(let task): finished.insert(task.id)
                    case .failed(let task): failed.insert(task.id)
                    default: Issue.record("only finished and failed events are journaled: \(event)")
                    }
                }
                #expect(missed.count == 3, "each missed event exactly once: \(missed)")
                #expect(finished == Set(added.prefix(2).map(\.id)))
                #expect(failed == [added[2].id])
                // A stream opened now starts with the same events.
                var replayed: [SessionEvent] = []
                for await event in await back.events() {
                    replayed.append(event)
                    if replayed.count == 3 { break }
                }
                #expect(replayed == missed)
                try await back.acknowledgeEvents()
                await back.close()

                let again = try await DownloadSession(identifier: "app", configuration: configuration)
                #expect(await again.pendingEvents().isEmpty, "acknowledged events are not delivered again")
                #expect(try await again.tasks().map(\.state) == [.finished, .finished, .failed])
                await again.close()
            }
        }
    }

    @Test func unacknowledgedEventsAreDeliveredAgain() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(64 << 10, seed: 507)
            serve(server, "/small.bin", body, rate: nil)
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                var configuration = SessionConfiguration.background(DaemonEndpoint(socketPath: socket(box), autostart: false))
                configuration.home = HaulHome(path: box.home)
                let first = try await DownloadSession(identifier: "app2", configuration: configuration)
                let events = await first.events()
                let task = try await first.add(
                    DownloadRequest(url: try #require(URL(string: server.url("/small.bin"))), destination: .file(box.path("small.bin"))))
                for await event in events {
                    if case .finished(let done) = event, done.id == task.id { break }
                }
                #expect(await first.pendingEvents().count == 1)
                // Seen live but never acknowledged (as if the app crashed while handling it).
                await first.close()
                let second = try await DownloadSession(identifier: "app2", configuration: configuration)
                let again = await second.pendingEvents()
                #expect(again.count == 1)
                if case .finished(let done)? = again.first { #expect(done.id == task.id) } else { Issue.record("expected finished: \(again)") }
                await second.close()
            }
        }
    }

    /// SO_PEERCRED: a process of another user that reaches the socket (here through a hard link outside the
    /// private directory, made world-writable) is disconnected without an answer. Needs root to switch users.
    @Test(.enabled(if: geteuid() == 0 && ExternalTools.pythonTestsEnabled, "needs root (to act as another user) and python3"))
    func connectionsFromAnotherUserAreClosedUnanswered() async throws {
        try await Sandbox.with { box in
            _ = try await startDaemon(box)
            let open = NSTemporaryDirectory() + "haul-peer-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: open) }
            chmod(open, 0o777)
            let link = open + "/daemon.sock"
            #expect(Glibc.link(socket(box), link) == 0, "hard link: errno \(errno)")
            chmod(link, 0o666)
            let script = """
                import os, socket, sys
                if sys.argv[2] != "0":
                    os.setgid(int(sys.argv[2])); os.setuid(int(sys.argv[2]))
                s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
                try:
                    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon.hello","params":{"protocol":1}}\\n')
                    data = s.recv(65536)
                except (ConnectionResetError, BrokenPipeError):
                    data = b""
                print("closed" if data == b"" else "answered " + data.decode())
                """
            func connect(as uid: Int) throws -> String {
                let process = ChildProcess()
                process.executableURL = URL(fileURLWithPath: try ExternalTools.requirePython())
                process.arguments = ["-c", script, link, String(uid)]
                let pipe = Pipe()
                process.standardOutput = pipe
                try process.run()
                let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                return output.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let owner = try connect(as: 0), other = try connect(as: 65534)
            #expect(owner.hasPrefix("answered "), "the owner is served through the same path: \(owner)")
            #expect(other == "closed", "another uid must be refused: \(other)")
        }
    }
}
