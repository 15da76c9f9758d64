import Foundation
import HaulKit
import HaulTestSupport
import Testing
@testable import HaulDaemon

/// Events and the journal, in-process (docs/protocol.md, "Events" and "Journal"): a subscriber gets a session's
/// events as notifications on its own connection; `finished` and `failed` are journaled with their `seq`, replayed to
/// whoever subscribes later, never sent twice, and gone once acknowledged (by `through` or by task ids).
@Suite struct EventsAndJournalTests {
    @Test func aSubscriberGetsTheEventsALaterOneTheJournalAndAcknowledgedEntriesAreGone() async throws {
        let server = try await TestServer.start()
        let body = TestData.bytes(64 << 10, seed: 2_801)
        server.serve("/ok.bin", Resource(body: body, etag: "\"ok\""))
        server.route("/gone") { _ in .text(404, "gone") }
        try await InProcessDaemon.with { daemon in
            let early = daemon.connect()
            _ = try await early.result("session.open", ["session": "s"])
            let subscribed = try await early.result("events.subscribe", ["session": "s"])
            #expect(subscribed["journal"] == [] && subscribed["next"] == .null, "\(subscribed)")
            let bystander = daemon.connect()
            let added = try await early.result("tasks.add", ["session": "s", "tasks": [
                ["url": .string(server.url("/ok.bin")), "path": .string(daemon.work + "/ok.bin")],
                ["url": .string(server.url("/gone")), "path": .string(daemon.work + "/gone.bin"), "options": ["retries": 0]],
            ]])
            let ids = added["ids"]?.arrayValue?.compactMap(\.stringValue) ?? []
            try #require(ids.count == 2)
            // Live, as notifications: `added`, then the ends with their journal sequence.
            let first = try await early.nextEvent { $0["type"] == "added" }
            #expect(first["task"]?["id"]?.stringValue == ids[0], "\(first)")
            var ends: [String: JSONValue] = [:]
            for _ in 0..<2 {
                let end = try await early.nextEvent { $0["type"] == "finished" || $0["type"] == "failed" }
                ends[end["type"]?.stringValue ?? ""] = end
            }
            let finished = try #require(ends["finished"]), failed = try #require(ends["failed"])
            #expect(finished["task"]?["id"]?.stringValue == ids[0] && failed["task"]?["id"]?.stringValue == ids[1], "\(ends)")
            let finishedSeq = try #require(finished["seq"]?.int64Value), failedSeq = try #require(failed["seq"]?.int64Value)
            #expect(finishedSeq != failedSeq && min(finishedSeq, failedSeq) > 0)
            #expect(FileManager.default.contents(atPath: daemon.work + "/ok.bin").map(Array.init) == body)
            let sessionEvents = early.notifications.filter { $0["method"] == "event" }
            #expect(sessionEvents.allSatisfy { $0["params"]?["session"] == "s" }, "every notification names its session")
            #expect(bystander.notifications.isEmpty, "a client that did not subscribe gets nothing: \(bystander.notifications)")

            // A client that comes later finds both ends in the journal, once each, in order.
            let late = daemon.connect()
            let replay = try await late.result("events.subscribe", ["session": "s"])
            let journal = replay["journal"]?.arrayValue ?? []
            #expect(journal.compactMap { $0["seq"]?.int64Value } == [finishedSeq, failedSeq].sorted(), "\(replay)")
            #expect(journal.allSatisfy { $0["type"] == "finished" || $0["type"] == "failed" }, "only ends are journaled: \(journal)")
            let withoutReplay = try await daemon.connect().result("events.subscribe", ["session": "s", "replay": false])
            #expect(withoutReplay["journal"] == [], "\(withoutReplay)")
            // journal.list pages it.
            let page = try await late.result("journal.list", ["session": "s", "limit": 1])
            #expect(page["events"]?.arrayValue?.count == 1 && page["next"]?.int64Value != nil, "\(page)")
            let rest = try await late.result("journal.list", ["session": "s", "after": page["next"] ?? .null])
            #expect(rest["events"]?.arrayValue?.count == 1 && rest["next"] == .null, "\(rest)")

            // Acknowledged by task id, then through a sequence: gone from the journal.
            #expect(try await late.result("journal.ack", ["session": "s", "ids": [.string(ids[1])]])["acknowledged"] == 1)
            let left = try await late.result("journal.list", ["session": "s"])["events"]?.arrayValue ?? []
            #expect(left.map { $0["seq"]?.int64Value } == [finishedSeq], "\(left)")
            #expect(try await late.result("journal.ack", ["session": "s", "through": JSONValue(finishedSeq)])["acknowledged"] == 1)
            #expect(try await late.result("journal.list", ["session": "s"])["events"] == [])
            #expect(try await late.result("journal.ack", ["session": "s", "through": JSONValue(finishedSeq)])["acknowledged"] == 0)
            let neither = try await late.call("journal.ack", ["session": "s"])
            #expect(neither.errorCode == -32602, "\(neither)")
        }
        try await server.shutdown()
    }

    @Test func anUnsubscribedOrDisconnectedClientGetsNoMoreEvents() async throws {
        try await InProcessDaemon.with { daemon in
            let stays = daemon.connect(), leaves = daemon.connect(), hangsUp = daemon.connect()
            _ = try await stays.result("session.open", ["session": "s", "configuration": ["maxConcurrentDownloads": 0]])
            for client in [stays, leaves, hangsUp] { _ = try await client.result("events.subscribe", ["session": "s"]) }
            _ = try await stays.result("tasks.add", ["session": "s", "tasks": [["url": "http://127.0.0.1:9/a.bin", "directory": .string(daemon.work)]]])
            for client in [stays, leaves, hangsUp] { _ = try await client.nextEvent { $0["type"] == "added" } }
            #expect(try await leaves.result("events.unsubscribe", ["session": "s"]) == [:])
            await hangsUp.disconnect()
            let before = (leaves.notifications.count, hangsUp.notifications.count)
            _ = try await stays.result("tasks.add", ["session": "s", "tasks": [["url": "http://127.0.0.1:9/b.bin", "directory": .string(daemon.work)]]])
            let second = try await stays.nextEvent { $0["type"] == "added" }
            #expect(second["task"]?["url"] == "http://127.0.0.1:9/b.bin", "\(second)")
            // The service sends to its subscribers as it goes: by the time the subscriber has it, the others would have too.
            #expect(leaves.notifications.count == before.0 && hangsUp.notifications.count == before.1)
        }
    }
}
