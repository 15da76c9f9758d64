import Foundation
import HaulKit
import HaulTestSupport
import Testing
@testable import HaulDaemon

/// Issue 10, sessions, in-process: reading a session that does not exist is an error that creates nothing; only
/// `session.open` and `tasks.add` create one; a bounded number are open at once and the idle one used longest ago
/// makes room; idle sessions close and reopen on use. (The descriptors they hold are counted by a process-level test,
/// DaemonSessionLimitsTests.)
@Suite struct SessionLimitsTests {
    /// Every method but `session.open` and `tasks.add` that names a session.
    static let readers: [(method: String, params: [String: JSONValue])] = [
        ("tasks.list", [:]), ("tasks.list", ["limit": 10]), ("tasks.list", ["ids": ["x"]]),
        ("tasks.pause", ["ids": ["x"]]), ("tasks.resume", ["all": true]), ("tasks.cancel", ["ids": ["x"]]),
        ("tasks.remove", ["all": true, "deleteFile": true]), ("tasks.setPriority", ["ids": ["x"], "priority": 1]),
        ("events.subscribe", ["replay": true]), ("events.unsubscribe", [:]), ("journal.list", [:]),
        ("journal.ack", ["through": 5]), ("session.setMaxConcurrentDownloads", ["count": 2]),
        ("session.setRateLimit", ["bytesPerSecond": 1_000]), ("session.configuration", [:]), ("tasks.segments", ["id": "x"]),
    ]

    @Test func readingAnUnknownSessionIsAnErrorAndCreatesNothing() async throws {
        try await InProcessDaemon.with { daemon in
            let client = daemon.connect()
            for (index, reader) in Self.readers.enumerated() {
                var params = reader.params
                params["session"] = .string("ghost\(index)")
                let response = try await client.call(reader.method, .object(params), id: JSONValue(index))
                #expect(response.isNoSuchSession && response.id == String(index), "\(reader.method): \(response)")
                #expect(response.errorMessage.contains("ghost\(index)"), "the message names the session: \(response)")
            }
            // The attack of issue 10: thousands of names. No folder, no open session.
            for index in 0..<2_000 {
                let response = try await client.call("tasks.list", ["session": .string("flood\(index)")], id: JSONValue(index))
                guard response.isNoSuchSession, response.id == String(index) else {
                    Issue.record("tasks.list #\(index): \(response)")
                    break
                }
            }
            #expect(daemon.sessionFolders.isEmpty, "folders: \(daemon.sessionFolders)")
            #expect(try await client.result("daemon.status")["sessions"] == [], "no session is open")

            // Adding creates the session; then it reads like any other.
            let added = try await client.result("tasks.add", ["session": "real", "tasks": [["url": "http://127.0.0.1:9/a.bin", "directory": .string(daemon.work)]]])
            let id = try #require(added["ids"]?.arrayValue?.first?.stringValue, "tasks.add: \(added)")
            #expect(added["tasks"]?.arrayValue?.count == 1, "tasks.add replies with the tasks: \(added)")
            let listed = try await client.result("tasks.list", ["session": "real"])
            #expect(listed["tasks"]?.arrayValue?.first?["id"]?.stringValue == id, "\(listed)")
            #expect(daemon.sessionFolders == ["real"])
        }
    }

    @Test func atMostTheLimitOfSessionsAreOpenAndTheIdleOneUsedLongestAgoMakesRoom() async throws {
        #expect(DaemonLimits().maxOpenSessions == 64, "docs/protocol.md promises 64")
        var limits = DaemonLimits()
        limits.maxOpenSessions = 6
        try await InProcessDaemon.with(limits: limits) { daemon in
            let client = daemon.connect()
            // Six busy sessions: each holds a waiting task that never starts (no download slot).
            for index in 0..<6 {
                let name = JSONValue.string("busy\(index)")
                let opened = try await client.result("session.open", ["session": name, "configuration": ["maxConcurrentDownloads": 0]])
                #expect(opened["session"] == name, "session.open \(name): \(opened)")
                _ = try await client.result("tasks.add", ["session": name, "tasks": [["url": .string("http://127.0.0.1:9/\(index).bin"), "directory": .string(daemon.work)]]])
            }
            #expect(try await client.result("daemon.status")["sessions"]?.arrayValue?.count == 6)

            // A seventh is refused, as an error that creates nothing, however it is asked for.
            let refusedOpen = try await client.call("session.open", ["session": "extra"])
            let refusedAdd = try await client.call("tasks.add", ["session": "extra", "tasks": [["url": "http://127.0.0.1:9/x.bin", "directory": .string(daemon.work)]]])
            for refused in [refusedOpen, refusedAdd] {
                #expect(refused.errorCode == -32001 && refused["error"]?["data"]?["kind"]?.stringValue == "busy", "\(refused)")
                #expect(refused.errorMessage.contains("6"), "the message says the limit: \(refused)")
            }
            #expect(!daemon.sessionFolders.contains("extra"))

            // Two sessions become idle; the one used longest ago is closed to make room, the other stays open.
            for index in [4, 2] { _ = try await client.result("tasks.remove", ["session": .string("busy\(index)"), "all": true]) }
            #expect(try await client.result("session.open", ["session": "extra"])["session"] == "extra")
            let open = try await client.result("daemon.status")["sessions"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(open.count == 6 && open.contains("extra"), "open: \(open)")
            #expect(!open.contains("busy4") && open.contains("busy2"), "busy4 was idle longest: \(open)")
            // A closed session opens again on use, with its saved configuration and tasks.
            let reopened = try await client.result("tasks.list", ["session": "busy4"])
            #expect(reopened["tasks"] == [], "\(reopened)")
            let after = try await client.result("daemon.status")["sessions"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(after.count == 6 && after.contains("busy4") && !after.contains("busy2"), "reopening busy4 closed the idle busy2: \(after)")
        }
    }

    @Test func idleSessionsCloseButNotOnesWithWorkOrASubscriberAndANewDaemonReopensOnlyThoseWithWork() async throws {
        var limits = DaemonLimits()
        limits.sessionIdleTimeout = .milliseconds(300)
        let root = try await InProcessDaemon.with(limits: limits, keepingFiles: true) { daemon in
            let client = daemon.connect()
            for index in 0..<5 { _ = try await client.result("session.open", ["session": .string("idle\(index)")]) }
            // One session stays busy (a waiting task), one has a subscriber: neither is idle.
            _ = try await client.result("session.open", ["session": "queued", "configuration": ["maxConcurrentDownloads": 0]])
            _ = try await client.result("tasks.add", ["session": "queued", "tasks": [["url": "http://127.0.0.1:9/q.bin", "directory": .string(daemon.work)]]])
            let watcher = daemon.connect()
            _ = try await watcher.result("session.open", ["session": "watched"])
            #expect(try await watcher.result("events.subscribe", ["session": "watched"])["journal"] == [])
            try await waitUntil("the idle sessions are closed") {
                try await client.result("daemon.status")["sessions"] == ["queued", "watched"]
            }
            // Once its subscriber leaves, the watched session is idle too.
            await watcher.disconnect()
            try await waitUntil("the unwatched session is closed") {
                try await client.result("daemon.status")["sessions"] == ["queued"]
            }
            #expect(daemon.sessionFolders.count == 7, "closing keeps the sessions: \(daemon.sessionFolders)")
        }
        // A new daemon on the same home reopens only the session with work to resume.
        try await InProcessDaemon.with(root: root) { daemon in
            let status = try await daemon.connect().result("daemon.status")
            #expect(status["sessions"] == ["queued"], "\(status)")
        }
    }
}
