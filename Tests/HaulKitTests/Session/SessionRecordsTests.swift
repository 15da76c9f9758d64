import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// A session task's progress lives in the session's store (``SessionRecords``): its resume record and the name a
/// `--dir` task chose are rows beside the task, not files under `HAUL_HOME/transfers/`, and they carry a resume
/// across a closed and reopened session exactly as the record files do for `haul get`.
@Suite struct SessionRecordsTests {
    func storePath(_ sandbox: Sandbox, _ identifier: String) -> String {
        LocalSession.folder(identifier, home: sandbox.home) + "/tasks.sqlite"
    }

    /// The files under `transfers/` with `suffix`.
    func transferFiles(_ sandbox: Sandbox, _ suffix: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: sandbox.home.transfersPath)) ?? []).filter { $0.hasSuffix(suffix) }
    }

    @Test func aDirectoryTaskResumesFromTheSessionStoreAfterTheSessionIsReopened() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(1_000_000, seed: 160)
            var throttled = Resource(body: body, etag: "\"s\"")
            throttled.faults.throttleBytesPerSecond = 100_000
            server.serve("/named.bin", throttled)
            let url = try UserInput.url(server.url("/named.bin"))
            let folder = sandbox.path("in")
            var session: DownloadSession? = try await DownloadSession(identifier: "records", configuration: sessionConfiguration(sandbox))
            let task = try await session?.add(DownloadRequest(url: url, destination: .directory(folder)))
            let id = try #require(task?.id)
            let store = try TaskStore(path: storePath(sandbox, "records"))
            let records = SessionRecords(store: store, files: TransferRecordStore(home: sandbox.home))
            let destination = folder + "/named.bin"
            try await waitFor("durable bytes recorded in the session's store") {
                (try records.load(TransferRecord.key(destinationPath: destination))?.offset ?? 0) > 0
            }
            try await session?.pause([id])
            await session?.close()
            session = nil

            let saved = try #require(try records.load(TransferRecord.key(destinationPath: destination)))
            #expect(saved.state == .paused && saved.offset > 0 && saved.entityTag == "\"s\"", "\(saved)")
            #expect(records.chosenDestination(url: url, directory: folder) == destination, "the name chosen is kept in the store")
            #expect(transferFiles(sandbox, ".json").isEmpty, "no record file for a session's task")
            #expect(transferFiles(sandbox, ".lock").isEmpty, "no lock file of the name choice (the destination's lock is a byte of transfers/locks)")

            server.serve("/named.bin", Resource(body: body, etag: "\"s\""))
            let reopened = try await DownloadSession(identifier: "records", configuration: sessionConfiguration(sandbox))
            try await reopened.resume([id])
            await reopened.waitUntilIdle()
            #expect(try await reopened.task(id)?.state == .finished)
            await reopened.close()
            #expect(sandbox.contents("in/named.bin") == body)
            #expect(!sandbox.exists("in/named.bin.haul-part"))
            #expect(server.requests("/named.bin").last?.header("Range") == "bytes=\(saved.offset)-", "resumed from the stored offset")
            #expect(try records.load(TransferRecord.key(destinationPath: destination))?.state == .finished)
        }
    }

    @Test func aSessionTaskContinuesTheBytesAHaulGetLeft() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(1_000_000, seed: 161)
            var dropping = Resource(body: body, etag: "\"g\"")
            dropping.faults.dropAfterBytes = 300_000
            dropping.faults.dropOnRequests = .max
            server.serve("/g", dropping)
            let url = try UserInput.url(server.url("/g"))
            let engine = TransferEngine(home: sandbox.home)
            var options = DownloadOptions(url: url, destination: .file(sandbox.path("g")))
            options.segments = 1
            options.retry = RetryPolicy(maxRetries: 0, baseDelay: .milliseconds(10), maxDelay: .milliseconds(10))
            await #expect(throws: HaulError.self) { try await engine.download(options) }
            try await engine.shutdown()
            let held = try #require(sandbox.records().first { $0.destinationPath == sandbox.path("g") }?.offset)
            #expect(held > 0)

            server.serve("/g", Resource(body: body, etag: "\"g\""))
            let session = try await DownloadSession(identifier: "after-get", configuration: sessionConfiguration(sandbox))
            let task = try await session.add(DownloadRequest(url: url, destination: .file(sandbox.path("g"))))
            await session.waitUntilIdle()
            #expect(try await session.task(task.id)?.state == .finished)
            await session.close()
            #expect(sandbox.contents("g") == body)
            #expect(server.requests("/g").last?.header("Range") == "bytes=\(held)-", "the record file of haul get was read")
        }
    }
}
