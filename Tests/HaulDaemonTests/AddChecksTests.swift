import Foundation
import HaulKit
import HaulTestSupport
import Testing
@testable import HaulDaemon

/// `tasks.add` refuses at once, creating nothing, what the download would only refuse later out of sight: a
/// destination that is taken, a folder, a "folder" that is a file, an id that names another URL's task; and adding the
/// same task again returns it, even once its file exists. (The CLI's one-line error and exit 2 are
/// DaemonNetworkTests'.)
@Suite struct AddChecksTests {
    @Test func additionsTheDownloadWouldRefuseAreRefusedAtOnceAndTheSameTaskAgainIsNoConflict() async throws {
        let server = try await TestServer.start()
        let body = TestData.bytes(100_000, seed: 171)
        server.serve("/a.bin", Resource(body: body, etag: "\"a\""))
        server.serve("/b.bin", Resource(body: body, etag: "\"b\""))
        try await InProcessDaemon.with { daemon in
            let client = daemon.connect()
            let taken = daemon.work + "/taken.bin", folder = daemon.work + "/folder"
            #expect(FileManager.default.createFile(atPath: taken, contents: Data([1, 2, 3])))
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let refusals: [(JSONValue, String)] = [
                (["url": .string(server.url("/a.bin")), "path": .string(taken)], "already exists"),
                (["url": .string(server.url("/a.bin")), "path": .string(folder)], "is a directory"),
                (["url": .string(server.url("/a.bin")), "directory": .string(taken)], "not a folder"),
            ]
            for (task, why) in refusals {
                let refused = try await client.call("tasks.add", ["session": "default", "tasks": [task]])
                #expect(refused.errorCode == -32001 && refused.errorMessage.contains(why), "\(task): \(refused)")
            }
            #expect(daemon.sessionFolders.isEmpty, "a refused addition creates nothing: \(daemon.sessionFolders)")
            #expect(FileManager.default.contents(atPath: taken) == Data([1, 2, 3]), "and touches nothing")

            // The same task added again is no conflict, even once its file exists.
            let mine: JSONValue = ["url": .string(server.url("/a.bin")), "path": .string(daemon.work + "/a.bin"), "id": "mine"]
            let first = try await client.result("tasks.add", ["session": "default", "tasks": [mine]])
            #expect(first["ids"] == ["mine"], "\(first)")
            try await waitUntil("the task finishes") {
                try await client.result("tasks.list", ["session": "default"])["tasks"]?.arrayValue?.first?["state"] == "finished"
            }
            #expect(FileManager.default.contents(atPath: daemon.work + "/a.bin").map(Array.init) == body)
            let again = try await client.result("tasks.add", ["session": "default", "tasks": [mine]])
            #expect(again["ids"] == ["mine"], "\(again)")
            // An id that names another URL's task is an error, not the old task.
            let other = try await client.call("tasks.add", ["session": "default", "tasks": [
                ["url": .string(server.url("/b.bin")), "path": .string(daemon.work + "/b.bin"), "id": "mine"],
            ]])
            #expect(other.errorCode == -32001 && other.errorMessage.contains("taken by another URL"), "\(other)")
            #expect(try await client.result("tasks.list", ["session": "default"])["tasks"]?.arrayValue?.count == 1)
            #expect(server.requests("/b.bin").isEmpty, "the refused one was never fetched")
        }
        try await server.shutdown()
    }

    /// A task that ended, added again, is queued again: its finished file still complete is found so without a request;
    /// deleted or replaced since, it is downloaded again; a failed one is tried again. Its id stays the same.
    @Test func anEndedTaskAddedAgainIsQueuedAgain() async throws {
        let server = try await TestServer.start()
        let body = TestData.bytes(100_000, seed: 172)
        server.serve("/c.bin", Resource(body: body, etag: "\"c\""))
        try await InProcessDaemon.with { daemon in
            let client = daemon.connect()
            let path = daemon.work + "/c.bin"
            let task: JSONValue = ["url": .string(server.url("/c.bin")), "path": .string(path), "id": "c"]
            func state() async throws -> String? {
                try await client.result("tasks.list", ["session": "default"])["tasks"]?.arrayValue?.first?["state"]?.stringValue
            }
            func addAndWait(_ expected: String) async throws {
                let added = try await client.result("tasks.add", ["session": "default", "tasks": [task]])
                #expect(added["ids"] == ["c"], "\(added)")
                try await waitUntil("the task ends \(expected)") { try await state() == expected }
            }
            try await addAndWait("finished")
            #expect(server.requests("/c.bin").count == 1)
            // Still there: found complete, nothing asked.
            try await addAndWait("finished")
            #expect(server.requests("/c.bin").count == 1)
            // Deleted: downloaded again.
            try FileManager.default.removeItem(atPath: path)
            try await addAndWait("finished")
            #expect(FileManager.default.contents(atPath: path).map(Array.init) == body)
            #expect(server.requests("/c.bin").count == 2)
            // Failed (the server answers 404 for a while), then added again once it serves the file.
            try FileManager.default.removeItem(atPath: path)
            var missing = Resource(body: body, etag: "\"c\"")
            missing.faults.statusForFirstRequests = (404, 100, nil)
            server.serve("/c.bin", missing)
            try await addAndWait("failed")
            server.serve("/c.bin", Resource(body: body, etag: "\"c\""))
            try await addAndWait("finished")
            #expect(FileManager.default.contents(atPath: path).map(Array.init) == body)
            #expect(try await client.result("tasks.list", ["session": "default"])["tasks"]?.arrayValue?.count == 1)
        }
        try await server.shutdown()
    }

    /// The same download added again after it ended, with other options (`--overwrite`): the options given now are
    /// the ones it runs with (a new task in place of the old, which is announced removed), not those of its first
    /// time; added again as it was, it keeps its id.
    @Test func anEndedTaskAddedAgainWithOtherOptionsRunsWithThem() async throws {
        let server = try await TestServer.start()
        let first = TestData.bytes(50_000, seed: 173), second = TestData.bytes(60_000, seed: 174)
        server.serve("/v.txt", Resource(body: first, etag: "\"v1\""))
        try await InProcessDaemon.with { daemon in
            let client = daemon.connect()
            let path = daemon.work + "/v.txt"
            func tasks() async throws -> [JSONValue] {
                try await client.result("tasks.list", ["session": "default"])["tasks"]?.arrayValue ?? []
            }
            let plain: JSONValue = ["url": .string(server.url("/v.txt")), "path": .string(path)]
            let firstID = try await client.result("tasks.add", ["session": "default", "tasks": [plain]])["ids"]?.arrayValue?.first
            try await waitUntil("the first version is saved") { try await tasks().first?["state"] == "finished" }
            #expect(FileManager.default.contents(atPath: path).map(Array.init) == first)

            server.serve("/v.txt", Resource(body: second, etag: "\"v2\""))
            let overwriting: JSONValue = ["url": .string(server.url("/v.txt")), "path": .string(path), "options": ["overwrite": true]]
            let secondID = try await client.result("tasks.add", ["session": "default", "tasks": [overwriting]])["ids"]?.arrayValue?.first
            #expect(secondID != nil && secondID != firstID, "a new task with the options given now")
            try await waitUntil("the second version replaces the first") {
                let state = try await tasks().first?["state"]
                return FileManager.default.contents(atPath: path).map(Array.init) == second && state == "finished"
            }
            #expect(try await tasks().count == 1, "the old task is gone")
            // The same options again: queued again as it is, the same id.
            let thirdID = try await client.result("tasks.add", ["session": "default", "tasks": [overwriting]])["ids"]?.arrayValue?.first
            #expect(thirdID == secondID)
        }
        try await server.shutdown()
    }
}
