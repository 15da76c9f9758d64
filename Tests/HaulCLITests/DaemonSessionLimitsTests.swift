#if os(Linux)
import Foundation
import Glibc
import Testing

extension DaemonNeighbourTests {
    /// Issue 10, sessions, as only the real daemon shows them: thousands of unknown session names cost no descriptor,
    /// the CLI says so in one line, and closing idle sessions releases their descriptors. Driven by raw socket clients,
    /// each test ending with SIGTERM answered within two seconds. What each method does with a session that does not
    /// exist, the limit on open sessions and which sessions count as idle are HaulDaemonTests' (SessionLimitsTests).
    @Suite(.serialized) struct DaemonSessionLimitsTests {
        @Test func unknownSessionsCostNoDescriptorAndTheCLISaysSoInOneLine() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox)
                let client = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                // The attack of issue 10: thousands of names. No folder, no descriptor.
                let before = try #require(DaemonHarness.openDescriptors(daemon.pid))
                for index in 0..<2_000 {
                    try client.sendRequest("tasks.list", ["session": "flood\(index)"], id: index)
                }
                for index in 0..<2_000 {
                    let response = try client.readResponse(timeout: .seconds(30))
                    guard response.isNoSuchSession, response.id == String(index) else {
                        Issue.record("tasks.list #\(index): \(response)")
                        break
                    }
                }
                let after = try #require(DaemonHarness.openDescriptors(daemon.pid))
                #expect(after <= before + 2, "descriptors went from \(before) to \(after)")
                #expect(DaemonHarness.sessionFolders(sandbox).isEmpty)

                // A session the CLI's checks can find.
                let added = try client.call(
                    "tasks.add", ["session": "real", "tasks": [["url": "http://127.0.0.1:9/a.bin", "directory": sandbox.work]]], id: "add")
                #expect(added.errorCode == nil, "tasks.add: \(added)")

                // The CLI: the default session, never used, lists nothing; another unknown one is a one-line error.
                let empty = try await sandbox.run(["ls", "--no-autostart", "--json"])
                #expect(empty.exitCode == 0 && empty.stdout.isEmpty, "ls: \(empty)")
                let watched = try await sandbox.run(["watch", "--no-autostart"])
                #expect(watched.exitCode == 0 && watched.stderrLines.last == "no tasks to watch", "watch: \(watched)")
                let unknown = try await sandbox.run(["ls", "--no-autostart", "--session", "typo"])
                #expect(unknown.exitCode == 2 && unknown.stderrLines.count == 1 && unknown.stderr.contains("typo"), "ls: \(unknown)")
                let paused = try await sandbox.run(["pause", "--all", "--no-autostart"])
                #expect(paused.exitCode == 2 && paused.stderrLines.count == 1, "pause --all: \(paused)")
                #expect(DaemonHarness.sessionFolders(sandbox) == ["real"], "the CLI created \(DaemonHarness.sessionFolders(sandbox))")
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
            }
        }

        @Test func closingIdleSessionsReleasesTheirDescriptors() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox, ["--session-idle-timeout", "1"])
                let client = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                let before = try #require(DaemonHarness.openDescriptors(daemon.pid))
                for index in 0..<20 {
                    let opened = try client.call("session.open", ["session": "idle\(index)"], id: index)
                    #expect(opened.errorCode == nil, "\(opened)")
                }
                let peak = try #require(DaemonHarness.openDescriptors(daemon.pid))
                #expect(peak >= before + 20, "opening 20 sessions took descriptors: \(before) → \(peak)")

                try await eventually("the idle sessions are closed", timeout: .seconds(30), step: .milliseconds(200)) {
                    try DaemonHarness.openSessions(client).isEmpty
                }
                let after = try #require(DaemonHarness.openDescriptors(daemon.pid))
                #expect(after < peak - 15, "closing 20 sessions released their descriptors: \(peak) → \(after)")
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
            }
        }
    }
}

#endif
