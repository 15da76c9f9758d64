#if os(Linux)
import Foundation
import Glibc
import Testing

extension DaemonNeighbourTests {
    /// Issue 10, sessions: reading a session that does not exist is an error and creates nothing; at most 64
    /// sessions are open at once; idle ones are closed and their descriptors released. Driven by raw socket clients
    /// against the real daemon, each test ending with SIGTERM answered within two seconds.
    @Suite(.serialized) struct DaemonSessionLimitsTests {
        /// Every method but `session.open` and `tasks.add`, on a session that does not exist.
        static var readers: [(method: String, params: [String: Any])] { [
            ("tasks.list", [:]), ("tasks.list", ["limit": 10]), ("tasks.list", ["ids": ["x"]]),
            ("tasks.pause", ["ids": ["x"]]), ("tasks.resume", ["all": true]), ("tasks.cancel", ["ids": ["x"]]),
            ("tasks.remove", ["all": true, "deleteFile": true]), ("tasks.setPriority", ["ids": ["x"], "priority": 1]),
            ("events.subscribe", ["replay": true]), ("events.unsubscribe", [:]), ("journal.list", [:]),
            ("journal.ack", ["through": 5]), ("session.setMaxConcurrentDownloads", ["count": 2]),
        ] }

        @Test func readingAnUnknownSessionIsAnErrorAndCreatesNothing() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox)
                let client = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                for (index, reader) in Self.readers.enumerated() {
                    var params = reader.params
                    params["session"] = "ghost\(index)"
                    let response = try client.call(reader.method, params, id: index)
                    #expect(response.isNoSuchSession && response.id == String(index), "\(reader.method): \(response)")
                    #expect(response.errorMessage.contains("ghost\(index)"), "the message names the session: \(response)")
                }
                #expect(DaemonHarness.sessionFolders(sandbox).isEmpty, "folders: \(DaemonHarness.sessionFolders(sandbox))")
                #expect(try DaemonHarness.openSessions(client).isEmpty)

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

                // Adding creates the session; then it reads like any other.
                let added = try client.call(
                    "tasks.add", ["session": "real", "tasks": [["url": "http://127.0.0.1:9/a.bin", "directory": sandbox.work]]], id: "add")
                let id = try #require((added.result?["ids"] as? [String])?.first, "tasks.add: \(added)")
                #expect((added.result?["tasks"] as? [Any])?.count == 1, "tasks.add replies with the tasks: \(added)")
                let listed = try client.call("tasks.list", ["session": "real"], id: "list")
                #expect(((listed.result?["tasks"] as? [[String: Any]])?.first?["id"] as? String) == id, "\(listed)")
                #expect(DaemonHarness.sessionFolders(sandbox) == ["real"])

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

        @Test func atMostSixtyFourSessionsAreOpenAndTheIdleOneUsedLongestAgoMakesRoom() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox)
                let client = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                // 64 busy sessions: each holds a waiting task that never starts (no download slot).
                for index in 0..<64 {
                    let name = "busy\(index)"
                    let opened = try client.call(
                        "session.open", ["session": name, "configuration": ["maxConcurrentDownloads": 0]], id: "open\(index)")
                    #expect(opened.result?["session"] as? String == name, "session.open \(name): \(opened)")
                    let added = try client.call(
                        "tasks.add", ["session": name, "tasks": [["url": "http://127.0.0.1:9/\(name).bin", "directory": sandbox.work]]],
                        id: "add\(index)")
                    #expect(added.errorCode == nil, "tasks.add \(name): \(added)")
                }
                #expect(try DaemonHarness.openSessions(client).count == 64)

                // A 65th is refused, as an error that creates nothing, however it is asked for.
                let refusedOpen = try client.call("session.open", ["session": "extra"], id: "extra1")
                let refusedAdd = try client.call(
                    "tasks.add", ["session": "extra", "tasks": [["url": "http://127.0.0.1:9/x.bin", "directory": sandbox.work]]], id: "extra2")
                for refused in [refusedOpen, refusedAdd] {
                    #expect(refused.errorCode == -32001 && refused.errorData?["kind"] as? String == "busy", "\(refused)")
                    #expect(refused.errorMessage.contains("64"), "the message says the limit: \(refused)")
                }
                #expect(!DaemonHarness.sessionFolders(sandbox).contains("extra"))

                // Two sessions become idle; the one used longest ago is closed to make room, the other stays open.
                for index in [7, 3] {
                    let removed = try client.call("tasks.remove", ["session": "busy\(index)", "all": true], id: "rm\(index)")
                    #expect(removed.errorCode == nil, "\(removed)")
                }
                let admitted = try client.call("session.open", ["session": "extra"], id: "extra3")
                #expect(admitted.result?["session"] as? String == "extra", "\(admitted)")
                let open = try DaemonHarness.openSessions(client)
                #expect(open.count == 64 && open.contains("extra"), "open: \(open)")
                #expect(!open.contains("busy7") && open.contains("busy3"), "busy7 was idle longest: \(open)")
                // A closed session opens again on use, with its saved configuration and tasks.
                let reopened = try client.call("tasks.list", ["session": "busy7"], id: "again")
                #expect((reopened.result?["tasks"] as? [Any])?.isEmpty == true, "\(reopened)")
                #expect(try DaemonHarness.openSessions(client).count == 64, "reopening busy7 closed the idle busy3")
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
            }
        }

        @Test func idleSessionsAreClosedAndTheirDescriptorsReleased() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox, ["--session-idle-timeout", "1"])
                let client = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                let before = try #require(DaemonHarness.openDescriptors(daemon.pid))
                for index in 0..<20 {
                    let opened = try client.call("session.open", ["session": "idle\(index)"], id: index)
                    #expect(opened.errorCode == nil, "\(opened)")
                }
                // One session stays busy (a waiting task), one has a subscriber: neither is idle.
                _ = try client.call("session.open", ["session": "queued", "configuration": ["maxConcurrentDownloads": 0]], id: "q")
                _ = try client.call(
                    "tasks.add", ["session": "queued", "tasks": [["url": "http://127.0.0.1:9/q.bin", "directory": sandbox.work]]], id: "qa")
                let watcher = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                _ = try watcher.call("session.open", ["session": "watched"], id: "w")
                let subscribed = try watcher.call("events.subscribe", ["session": "watched"], id: "ws")
                #expect(subscribed.result?["journal"] is [Any], "\(subscribed)")
                let peak = try #require(DaemonHarness.openDescriptors(daemon.pid))
                #expect(peak >= before + 20, "opening 22 sessions took descriptors: \(before) → \(peak)")

                var open: [String] = []
                try await eventually("the idle sessions are closed", timeout: .seconds(30), step: .milliseconds(200)) {
                    open = try DaemonHarness.openSessions(client)
                    return open == ["queued", "watched"]
                }
                let after = try #require(DaemonHarness.openDescriptors(daemon.pid))
                #expect(after < peak - 15, "closing 20 sessions released their descriptors: \(peak) → \(after)")
                // Once its subscriber leaves, the watched session is idle too.
                watcher.disconnect()
                try await eventually("the unwatched session is closed", timeout: .seconds(30), step: .milliseconds(200)) {
                    try DaemonHarness.openSessions(client) == ["queued"]
                }
                #expect(DaemonHarness.sessionFolders(sandbox).count == 22, "closing keeps the sessions: \(DaemonHarness.sessionFolders(sandbox))")
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)

                // A new daemon reopens only the session with work to resume.
                let next = try await DaemonHarness.start(sandbox)
                #expect(try DaemonHarness.openSessions(try RawSocketClient(path: DaemonHarness.socket(sandbox))) == ["queued"])
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(next, sandbox)
            }
        }
    }
}

#endif
