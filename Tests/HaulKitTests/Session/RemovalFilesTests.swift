import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// What removing a task does with files: only the very file the task wrote goes, while its name still holds it; a
/// file `-nc` or `-N` kept, one saved at its name later, one reached through a folder swapped for a link, or a
/// partial file put in place of the task's stays, and the removal says so. A file given to `--continue` is given
/// back, never deleted (aria2c's remove never deletes a file).
@Suite struct RemovalFilesTests {
    func request(_ url: String, _ path: String, id: String, _ change: (inout DownloadSpec) -> Void = { _ in }) throws -> DownloadRequest {
        var request = DownloadRequest(url: try UserInput.url(url), destination: .file(path))
        request.id = id
        change(&request.spec)
        return request
    }

    @Test func deleteFileDeletesOnlyTheFileTheTaskPublished() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(20_000, seed: 60)
            for name in ["pub", "nc", "n", "later", "linked"] {
                var resource = Resource(body: body, etag: "\"\(name)\"")
                resource.lastModified = "Mon, 01 Jan 2001 00:00:00 GMT"
                server.serve("/\(name)", resource)
            }
            let files = sandbox.files
            try FileManager.default.createDirectory(atPath: files + "/sub", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: files + "/other", withIntermediateDirectories: true)
            sandbox.write(Array("my thesis".utf8), to: "thesis.pdf")
            // As long as the server's file and newer: -N keeps it (wget fetches a file of another length).
            sandbox.write([UInt8](repeating: 9, count: body.count), to: "old.iso")
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 2_000_000_000)], ofItemAtPath: sandbox.path("old.iso"))
            sandbox.write(Array("important".utf8), to: "other/file")
            let session = try await DownloadSession(identifier: "delete-own", configuration: sessionConfiguration(sandbox, concurrent: 5))
            try await session.add([
                try request(server.url("/pub"), sandbox.path("pub.bin"), id: "pub"),
                try request(server.url("/nc"), sandbox.path("thesis.pdf"), id: "nc") { $0.settings.noClobber = true },
                try request(server.url("/n"), sandbox.path("old.iso"), id: "n") { $0.settings.timestamping = true },
                try request(server.url("/later"), sandbox.path("later.bin"), id: "later"),
                try request(server.url("/linked"), sandbox.path("sub/file"), id: "linked"),
            ])
            try await waitFor("all finished") { try await session.tasks().allSatisfy { $0.state == .finished } }
            #expect(sandbox.contents("later.bin") == body && sandbox.contents("sub/file") == body)
            // Another file saved at a task's name; a task's folder swapped for a link to another folder.
            sandbox.write(Array("my notes".utf8), to: "later.new")
            #expect(rename(sandbox.path("later.new"), sandbox.path("later.bin")) == 0)
            #expect(rename(sandbox.path("sub"), sandbox.path("sub.real")) == 0)
            #expect(symlink(sandbox.path("other"), sandbox.path("sub")) == 0)

            let said = try await session.remove(["pub", "nc", "n", "later", "linked"], deleteFile: true)
            let byID = Dictionary(said.map { ($0.id, $0) }) { first, _ in first }
            #expect(byID["pub"] == RemovedFile(id: "pub", path: sandbox.path("pub.bin"), outcome: .deleted, message: "deleted \(sandbox.path("pub.bin"))"))
            #expect(!sandbox.exists("pub.bin"))
            #expect(byID["nc"]?.message == "kept \(sandbox.path("thesis.pdf")): haul did not write it")
            #expect(sandbox.contents("thesis.pdf") == Array("my thesis".utf8))
            #expect(byID["n"]?.message == "kept \(sandbox.path("old.iso")): haul did not write it")
            #expect(sandbox.contents("old.iso") == [UInt8](repeating: 9, count: body.count))
            #expect(byID["later"]?.message == "kept \(sandbox.path("later.bin")): it is no longer the file haul saved")
            #expect(sandbox.contents("later.bin") == Array("my notes".utf8))
            #expect(byID["linked"]?.outcome == .kept, "\(said)")
            #expect(byID["linked"]?.message == "kept \(sandbox.path("sub/file")): it is no longer the file haul saved")
            #expect(sandbox.contents("other/file") == Array("important".utf8))
            #expect(sandbox.contents("sub.real/file") == body)
            #expect(try await session.tasks().isEmpty)
            await session.close()
        }
    }

    /// A paused task's partial file replaced by another file (any other inode): plain `remove` keeps it, and says so.
    @Test func removingAPausedTaskKeepsAPartialFileThatIsNotItsOwn() async throws {
        try await withHarness { server, _, sandbox in
            var slow = Resource(body: TestData.bytes(600_000, seed: 61), etag: "\"p\"")
            slow.faults.throttleBytesPerSecond = 100_000
            // Never done, however slowly this test looks: each answer stops there (a retry goes on further).
            slow.faults.stallAfterBytes = 300_000
            server.serve("/p", slow)
            server.serve("/q", slow)
            let session = try await DownloadSession(identifier: "foreign-part", configuration: sessionConfiguration(sandbox, concurrent: 2))
            try await session.add([try request(server.url("/p"), sandbox.path("p.bin"), id: "p"),
                                   try request(server.url("/q"), sandbox.path("q.bin"), id: "q")])
            try await waitFor("both running with bytes") {
                try await session.tasks().filter { $0.state == .running && $0.bytes > 100_000 }.count == 2
            }
            try await session.pause(["p", "q"])
            try await waitFor("both paused") { try await session.tasks().allSatisfy { $0.state == .paused } }
            #expect(sandbox.exists("p.bin.haul-part") && sandbox.exists("q.bin.haul-part"))
            // p's partial is now the user's file; q's is its own.
            #expect(unlink(sandbox.path("p.bin.haul-part")) == 0)
            sandbox.write(Array("my data".utf8), to: "p.bin.haul-part")
            let said = try await session.remove(["p", "q"])
            #expect(said == [RemovedFile(id: "p", path: sandbox.path("p.bin.haul-part"), outcome: .kept,
                                         message: "kept \(sandbox.path("p.bin.haul-part")): it is no longer the partial file haul wrote")])
            #expect(sandbox.contents("p.bin.haul-part") == Array("my data".utf8))
            #expect(!sandbox.exists("q.bin.haul-part"), "the task's own partial file goes")
            await session.close()
        }
    }

    /// A paused `--continue` task, whatever length the user's file had: removing it gives the user's file back at its
    /// own name, cut back to the bytes that were theirs, and says so; nothing is left at the partial name.
    @Test func removingAPausedContinueTaskGivesTheUsersFileBack() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(900_000, seed: 62)
            var slow = Resource(body: body, etag: "\"c\"")
            slow.faults.throttleBytesPerSecond = 150_000
            // Never done, however slowly this test looks: each answer stops there (a retry goes on further).
            slow.faults.stallAfterBytes = 100_000
            server.serve("/c", slow)
            let session = try await DownloadSession(identifier: "continue-rm", configuration: sessionConfiguration(sandbox, concurrent: 3))
            let lengths = [1, 70_000, 300_000]
            for (n, length) in lengths.enumerated() { sandbox.write(Array(body.prefix(length)), to: "c\(n).bin") }
            try await session.add(try lengths.indices.map { n in
                try request(server.url("/c") + "?n=\(n)", sandbox.path("c\(n).bin"), id: "c\(n)") { $0.settings.continuePartial = true }
            })
            try await waitFor("all past the user's bytes") {
                let tasks = try await session.tasks()
                return tasks.allSatisfy { task in
                    let n = Int(task.id.dropFirst()) ?? 0
                    return task.state == .running && task.bytes > Int64(lengths[n]) + 20_000
                }
            }
            try await session.pause(lengths.indices.map { "c\($0)" })
            try await waitFor("all paused") { try await session.tasks().allSatisfy { $0.state == .paused } }
            let said = try await session.remove(lengths.indices.map { "c\($0)" })
            for (n, length) in lengths.enumerated() {
                let path = sandbox.path("c\(n).bin")
                #expect(sandbox.contents("c\(n).bin") == Array(body.prefix(length)), "the user's \(length) bytes, as they were")
                #expect(!sandbox.exists("c\(n).bin.haul-part"))
                #expect(said.contains(RemovedFile(id: "c\(n)", path: path, outcome: .givenBack,
                                                  message: "gave back the file given to --continue: \(path) is back as it was (\(length) bytes)")), "\(said)")
            }
            await session.close()
        }
    }

    /// A running `--continue` task removed at once (not paused first): its end gives the user's file back, and the
    /// removal says so.
    @Test func removingARunningContinueTaskGivesTheUsersFileBack() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(900_000, seed: 63)
            var slow = Resource(body: body, etag: "\"r\"")
            slow.faults.throttleBytesPerSecond = 150_000
            slow.faults.stallAfterBytes = 100_000
            server.serve("/r", slow)
            let session = try await DownloadSession(identifier: "continue-running-rm", configuration: sessionConfiguration(sandbox))
            let mine = Array(body.prefix(200_000))
            sandbox.write(mine, to: "r.bin")
            try await session.add([try request(server.url("/r"), sandbox.path("r.bin"), id: "r") { $0.settings.continuePartial = true }])
            try await waitFor("past the user's bytes") {
                try await session.task("r").map { $0.state == .running && $0.bytes > 230_000 } ?? false
            }
            let said = try await session.remove(["r"])
            let path = sandbox.path("r.bin")
            #expect(said == [RemovedFile(id: "r", path: path, outcome: .givenBack,
                                         message: "gave back the file given to --continue: \(path) is back as it was (200000 bytes)")])
            #expect(sandbox.contents("r.bin") == mine)
            #expect(!sandbox.exists("r.bin.haul-part"))
            await session.close()
        }
    }
}
