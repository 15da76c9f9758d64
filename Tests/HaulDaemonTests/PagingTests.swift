import Foundation
import HaulKit
import Testing
@testable import HaulDaemon

/// Issue 10, size, in-process: `tasks.add` answers with ids only when its tasks would not fit one line, and
/// `tasks.list` comes in pages within the line, each saying where the next starts. (The CLI adding and listing
/// 100,000 tasks is DaemonPagingTests' in HaulCLITests.)
@Suite struct PagingTests {
    /// `count` tasks that never start (the session has no download slot), `perMessage` to a `tasks.add`.
    static func addStill(_ client: Client, _ daemon: InProcessDaemon, session: String, count: Int, perMessage: Int, padding: Int = 0) async throws -> [String] {
        _ = try await client.result("session.open", ["session": .string(session), "configuration": ["maxConcurrentDownloads": 0]])
        let path = String(repeating: "p", count: padding)
        var ids: [String] = []
        for start in stride(from: 0, to: count, by: perMessage) {
            let tasks = (start..<min(count, start + perMessage)).map { index -> JSONValue in
                ["url": .string("http://127.0.0.1:9/\(path)/f\(index).bin"), "directory": .string(daemon.work)]
            }
            let added = try await client.result("tasks.add", ["session": .string(session), "tasks": .array(tasks), "reply": "ids"])
            ids += added["ids"]?.arrayValue?.compactMap(\.stringValue) ?? []
        }
        return ids
    }

    @Test func anAdditionWhoseAnswerWouldNotFitOneLineAnswersWithIDs() async throws {
        try await InProcessDaemon.with { daemon in
            let client = daemon.connect()
            _ = try await client.result("session.open", ["session": "big", "configuration": ["maxConcurrentDownloads": 0]])
            // 6,000 tasks in one message (under 1 MiB); their tasks as JSON would be over 1 MiB.
            let tasks = (0..<6_000).map { index -> JSONValue in ["url": .string("http://127.0.0.1:9/\(index).bin"), "directory": .string(daemon.work)] }
            let request: JSONValue = ["jsonrpc": "2.0", "id": "add", "method": "tasks.add", "params": ["session": "big", "tasks": .array(tasks)]]
            #expect(request.serialized.utf8.count < 1 << 20)
            let added = try #require(try await client.send(request.serialized))
            #expect(added.line.utf8.count <= 1 << 20, "the answer takes \(added.line.utf8.count) bytes")
            let ids = added.result?["ids"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(ids.count == 6_000 && Set(ids).count == 6_000 && added.result?["tasks"] == nil, "ids only: \(added.line.prefix(300))")
            let brief = try await client.result("tasks.add", ["session": "big", "tasks": .array(Array(tasks.prefix(2))), "reply": "ids"])
            #expect(brief["ids"]?.arrayValue?.compactMap(\.stringValue) == Array(ids.prefix(2)) && brief["tasks"] == nil, "the same tasks again: \(brief)")
            let small = try await client.result("tasks.add", ["session": "big", "tasks": .array(Array(tasks.prefix(2)))])
            #expect(small["tasks"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(ids.prefix(2)), "\(small)")
        }
    }

    @Test func listsComeInPagesWithinTheLineEachSayingWhereTheNextStarts() async throws {
        try await InProcessDaemon.with { daemon in
            let client = daemon.connect()
            // 4,000 tasks of over 1 KB of JSON each: over 3 MiB in all, each addition under 1 MiB.
            let ids = try await Self.addStill(client, daemon, session: "default", count: 4_000, perMessage: 800, padding: 900)
            #expect(ids.count == 4_000 && Set(ids).count == 4_000)
            // Paged: every task once, in the order added, each page within one 1 MiB line.
            var listed: [String] = [], cursor: JSONValue = .null, pages = 0
            for round in 0..<100 {
                var params: [String: JSONValue] = ["session": "default", "limit": 10_000]
                if cursor != .null { params["cursor"] = cursor }
                let page = try await client.call("tasks.list", .object(params), id: JSONValue(round))
                #expect(page.line.utf8.count <= 1 << 20, "a page of \(page.line.utf8.count) bytes")
                listed += page.result?["tasks"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
                pages += 1
                cursor = page.result?["next"] ?? .null
                if cursor == .null { break }
            }
            #expect(listed == ids, "every task once, in order (\(listed.count) listed)")
            #expect(pages > 3, "over 3 MiB takes several pages: \(pages)")
            // A limit is a page's most; the next page follows on.
            let three = try await client.result("tasks.list", ["session": "default", "limit": 3])
            #expect(three["tasks"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(ids.prefix(3)))
            let next = try await client.result("tasks.list", ["session": "default", "limit": 2, "cursor": three["next"] ?? .null])
            #expect(next["tasks"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(ids[3..<5]), "\(next)")
            // Selected by id, paged all the same.
            let chosen = try await client.result("tasks.list", ["session": "default", "ids": .array(ids.suffix(2).map(JSONValue.string))])
            #expect(chosen["tasks"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(ids.suffix(2)), "\(chosen)")
            // An old client's list without paging gets a first page within 3 MiB, with its cursor.
            let old = try await client.call("tasks.list", ["session": "default"], id: "old")
            #expect(old.line.utf8.count <= 3 << 20 && old.result?["next"]?.stringValue != nil, "\(old.line.utf8.count) bytes")
            // A bad cursor or limit is an Invalid params error.
            for (params, member) in [(["cursor": "x"], "cursor"), (["cursor": "-1"], "cursor"), (["limit": 0], "limit"), (["limit": 10_001], "limit")] as [([String: JSONValue], String)] {
                var all = params
                all["session"] = "default"
                let refused = try await client.call("tasks.list", .object(all))
                #expect(refused.errorCode == -32602 && refused.errorMessage.contains(member), "\(params): \(refused)")
            }
        }
    }
}
