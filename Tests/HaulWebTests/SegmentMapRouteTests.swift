import Foundation
import HaulKit
import HaulTestSupport
import Testing
@testable import HaulWeb

/// `tasks.segments` through the bridge, in-process: where a paused segmented download's bytes are, and a task that
/// does not exist. (The maps pushed on the event stream while a download runs are WebBridgeTests' in HaulCLITests.)
@Suite struct SegmentMapRouteTests {
    @Test func aPausedSegmentedDownloadsMapShowsWhereItsBytesAre() async throws {
        let server = try await TestServer.start()
        let body = TestData.bytes(8 << 20, seed: 1_416)
        var resource = Resource(body: body, etag: "\"p\"")
        resource.faults.throttleBytesPerSecond = 256 << 10
        server.serve("/paused.bin", resource)
        try await InProcessWeb.with { web in
            let login = try await web.login()
            let task: JSONValue = ["url": .string(server.url("/paused.bin")), "path": .string(web.work + "/paused.bin"), "segments": 4,
                                   "options": ["minSegmentSize": 65_536]]
            let added = await web.rpc("tasks.add", ["session": "default", "tasks": [task]], as: login)
            let id = try #require(added.result?["ids"]?.arrayValue?.first?.stringValue, "\(added)")
            func map() async -> (done: [[Int]], active: [[Int]], total: Int?, reply: WebReply) {
                let reply = await web.rpc("tasks.segments", ["session": "default", "id": .string(id)], as: login)
                func ranges(_ key: String) -> [[Int]] { reply.result?[key]?.arrayValue?.map { $0.arrayValue?.compactMap(\.intValue) ?? [] } ?? [] }
                return (ranges("done"), ranges("active"), reply.result?["total"]?.intValue, reply)
            }
            // Bytes in at least two places, then paused.
            try await waitUntil("bytes in two places") { await map().done.count >= 2 }
            let paused = await web.rpc("tasks.pause", ["session": "default", "ids": [.string(id)]], as: login)
            #expect(paused.result != nil, "\(paused)")
            try await waitUntil("the task is paused") { try await web.tasks().first?["state"] == "paused" }
            let (done, active, total, reply) = await map()
            #expect(done.count >= 2, "the paused download's bytes are in several places: \(reply)")
            #expect(active.isEmpty, "nothing is being fetched: \(reply)")
            #expect(total == body.count, "\(reply)")
            #expect(done.allSatisfy { $0.count == 2 && $0[0] < $0[1] && $0[1] <= body.count }, "\(reply)")
            let unknown = await web.rpc("tasks.segments", ["session": "default", "id": "nope"], as: login)
            #expect(unknown.errorCode == -32001, "\(unknown)")
            let missing = await web.rpc("tasks.segments", ["session": "default"], as: login)
            #expect(missing.errorCode == -32602, "\(missing)")
        }
        try await server.shutdown()
    }
}
