#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// A daemon given `--idle-exit SECONDS` (as every daemon `haul` starts by itself is) exits once it has had
/// nothing to do for that long: no task running or waiting, no client. Never while a task waits or runs.
@Suite struct DaemonIdleExitTests {
    /// The task states `haul ls --json` shows.
    func states(_ box: Sandbox) async throws -> [String] {
        let result = try await box.run(["ls", "--json", "--no-autostart"])
        #expect(result.exitCode == 0, "\(result)")
        return try result.jsonEvents().compactMap { $0["state"] as? String }
    }

    @Test func anIdleDaemonExitsAndRemovesItsSocket() async throws {
        try await Sandbox.with { box in
            // Not waited for until it listens: on a busy machine it may be idle for its second before a poll sees it.
            let daemon = try box.start(["daemon", "--socket", DaemonHarness.socket(box), "--idle-exit", "1"])
            let result = try await daemon.wait(timeout: .seconds(60))
            #expect(result.exitCode == 0 && !result.signalled, "\(result)")
            #expect(result.stderr.contains("listening on"), "it did start: \(result.stderr)")
            #expect(result.stderr.contains("exiting"), "the log says why: \(result.stderr)")
            #expect(!fileExists(DaemonHarness.socket(box)), "the socket is removed")
            #expect(!fileExists(DaemonHarness.socket(box) + ".pid"))
        }
    }

    @Test func itStaysWhileATaskWaitsOrRunsAndLeavesOnceNoneDoes() async throws {
        try await withTestServer { server in
            // Sends a little and then nothing, with the connection open: the task stays running.
            var resource = Resource(body: TestData.bytes(1 << 20, seed: 1601), etag: "\"s\"")
            resource.faults.stallAfterBytes = 64 << 10
            server.serve("/stalls.bin", resource)
            try await Sandbox.with { box in
                // The task is queued (and held: no download at once) by a daemon that never idles out; the one under
                // test finds it waiting when it starts, so it is busy from its first look on.
                let first = try await DaemonHarness.start(box)
                #expect(try await box.run(["session", "set", "--max-concurrent", "0", "--no-autostart"]).exitCode == 0)
                let added = try await box.run(["add", server.url("/stalls.bin"), "-o", "s.bin", "--no-autostart"])
                #expect(added.exitCode == 0, "\(added)")
                first.signal(SIGTERM)
                #expect(try await first.wait().exitCode == 0)
                let daemon = try await DaemonHarness.start(box, ["--idle-exit", "1"])
                // Three idle periods with a task waiting (a busy machine can only make the daemon later, not earlier).
                try await Task.sleep(for: .seconds(3))
                #expect(daemon.isRunning, "the daemon left a waiting task: \(daemon.stderrSoFar())")
                #expect(try await states(box) == ["waiting"])

                #expect(try await box.run(["session", "set", "--max-concurrent", "1", "--no-autostart"]).exitCode == 0)
                try await eventuallyAsync("the task runs and the server sent its first bytes", timeout: .seconds(30), step: .milliseconds(200)) {
                    try await states(box) == ["running"] && server.requests("/stalls.bin").contains { $0.bytesSent > 0 }
                }
                try await Task.sleep(for: .seconds(3))
                #expect(daemon.isRunning, "the daemon left a running task: \(daemon.stderrSoFar())")
                #expect(try await states(box) == ["running"])

                #expect(try await box.run(["rm", "--all", "--no-autostart"]).exitCode == 0)
                let result = try await daemon.wait(timeout: .seconds(60))
                #expect(result.exitCode == 0 && !result.signalled, "\(result)")
                #expect(!fileExists(DaemonHarness.socket(box)))
            }
        }
    }

    @Test func aDaemonStartedByItselfIsToldToIdleOut() async throws {
        try await Sandbox.with { box in
            let listed = try await box.run(["ls"])
            #expect(listed.exitCode == 0 && listed.stderr.contains("started the haul daemon"), "\(listed)")
            let pid = try #require(box.daemonPIDs().first)
            let arguments = ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").split(separator: "\0")
            let flag = try #require(arguments.firstIndex(of: "--idle-exit"), "\(arguments)")
            #expect(arguments.count > flag + 1 && arguments[flag + 1] == "600", "\(arguments)")
            kill(pid, SIGTERM)
            try await eventually("the autostarted daemon exits on SIGTERM") { kill(pid, 0) != 0 || isZombie(pid) }
        }
    }

    /// Two commands at once with no daemon running: each may start one, one daemon wins the socket, and only the
    /// command whose daemon that is says it started one (naming the pid that runs).
    @Test func racingAutostartsSayStartedOnceNamingTheDaemonThatRuns() async throws {
        try await Sandbox.with { box in
            async let first = box.run(["ls"])
            async let second = box.run(["ls"])
            let results = try await [first, second]
            #expect(results.allSatisfy { $0.exitCode == 0 }, "\(results)")
            let lines = results.flatMap { $0.stderrLines.filter { $0.contains("started the haul daemon") } }
            #expect(lines.count == 1, "exactly one command started the daemon that answers: \(lines)")
            let pids = box.daemonPIDs()
            #expect(pids.count == 1, "one daemon runs: \(pids)")
            if let pid = pids.first { #expect(lines.first?.contains("(pid \(pid))") == true, "\(lines) vs \(pid)") }
            for pid in pids { kill(pid, SIGTERM) }
            try await eventually("the daemon exits on SIGTERM") { pids.allSatisfy { kill($0, 0) != 0 || isZombie($0) } }
        }
    }

    func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return false }
        return stat[close...].hasPrefix(") Z")
    }
}
#endif
