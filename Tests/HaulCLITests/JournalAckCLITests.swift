#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// `haul watch` and `haul wait` acknowledge the journal entries of the tasks whose end they showed, so a
/// session's journal does not grow with every task the CLI has already reported.
@Suite struct JournalAckCLITests {
    /// The task ids of the session's unacknowledged journal entries.
    func journal(_ box: Sandbox) throws -> [String] {
        let client = try RawSocketClient(path: DaemonHarness.socket(box))
        defer { client.disconnect() }
        let page = try client.call("journal.list", ["session": "default"], id: 1)
        let events = try #require(page.result?["events"] as? [[String: Any]], "\(page)")
        return events.compactMap { ($0["task"] as? [String: Any])?["id"] as? String }
    }

    @Test func watchAndWaitAcknowledgeWhatTheyShowedAndNothingElse() async throws {
        try await withTestServer { server in
            for name in ["a", "b"] { server.serve("/\(name).bin", Resource(body: TestData.bytes(40_000, seed: 1701), etag: "\"\(name)\"")) }
            try await Sandbox.with { box in
                let daemon = try await DaemonHarness.start(box)
                var ids: [String] = []
                for name in ["a", "b"] {
                    let added = try await box.run(["add", server.url("/\(name).bin"), "-o", "\(name).bin", "--no-autostart"])
                    ids.append(try #require(added.stdoutLines.first, "\(added)"))
                }
                try await eventually("both tasks are journaled", timeout: .seconds(30)) { try Set(journal(box)) == Set(ids) }

                let watched = try await box.run(["watch", ids[0], "--no-autostart"])
                #expect(watched.exitCode == 0, "\(watched)")
                #expect(try journal(box) == [ids[1]], "only the watched task's entry is acknowledged")

                let waited = try await box.run(["wait", ids[1], "--no-autostart"])
                #expect(waited.exitCode == 0, "\(waited)")
                #expect(try journal(box).isEmpty)
                // Acknowledged is not forgotten: the tasks are still listed.
                let listed = try await box.run(["ls", "--json", "--no-autostart"])
                #expect(try listed.jsonEvents().count == 2, "\(listed)")
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, box)
            }
        }
    }
}
#endif
