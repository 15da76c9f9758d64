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
        SessionFolder.path(identifier, home: sandbox.home) + "/tasks.sqlite"
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
            #expect(server.requests("/named.bin").last?.header("Range") == resumeRange(from: saved.offset), "resumed from the stored offset")
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
            #expect(server.requests("/g").last?.header("Range") == resumeRange(from: held), "the record file of haul get was read")
        }
    }
    /// A session writes a finished download's final record in the transaction that concludes the task. Should the
    /// process die between the file's move into place and that transaction, the first record (partial file gone,
    /// destination of its whole length) is enough for a rerun to recognise the file as complete.
    @Test func aFinalRecordLostWithTheProcessIsRecognisedFromTheCompleteFile() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(40_000, seed: 162)
            server.serve("/whole.bin", Resource(body: body, etag: "\"w\""))
            let url = try UserInput.url(server.url("/whole.bin"))
            let store = try TaskStore(path: storePath(sandbox, "finals"))
            let destination = sandbox.path("whole.bin")
            let key = TransferRecord.key(destinationPath: destination)
            let options = DownloadOptions(url: url, destination: .file(destination))

            // The engine finishes; the session that would conclude the task never does (its process died).
            let first = TransferEngine(records: SessionRecords(store: store, files: TransferRecordStore(home: sandbox.home)))
            let done = try await first.download(options)
            try await first.shutdown()
            #expect(!done.alreadyComplete && sandbox.contents("whole.bin") == body)
            let left = try #require(try SessionRecords(store: store, files: TransferRecordStore(home: sandbox.home)).load(key))
            #expect(left.state == .running && left.totalLength == Int64(body.count), "only the first record was written: \(left)")

            // The next process: the file is complete, nothing is fetched again.
            let records = SessionRecords(store: store, files: TransferRecordStore(home: sandbox.home))
            let again = TransferEngine(records: records)
            let requests = server.requests("/whole.bin").count
            let result = try await again.download(options)
            try await again.shutdown()
            #expect(result.alreadyComplete && result.bytes == Int64(body.count))
            #expect(server.requests("/whole.bin").count == requests, "no request for a complete file")
            #expect(try records.load(key)?.state == .finished)
        }
    }

    @Test func onlyAFinalRecordOfAKnownLengthWaitsAndItIsWrittenOnceWithTheConclusion() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let store = try TaskStore(path: storePath(sandbox, "waiting"))
        let task = try store.add(DownloadRequest(url: URL(string: "https://example.com/a")!, destination: .file(sandbox.path("a")))).task
        /// Concludes the task as the session does, with the final record kept for `destination`, if any.
        func conclude(_ destination: String) async throws {
            _ = try await store.conclude(
                id: task.id, lease: nil, journaling: nil, payload: { _ in "" }, finalRecord: records.takeFinal(destinationPath: destination),
                { $0.state = .finished })
        }
        let records = SessionRecords(store: store, files: TransferRecordStore(home: sandbox.home))
        var final = TransferRecord(
            url: "https://example.com/a", destinationPath: sandbox.path("a"), partialPath: sandbox.path("a.haul-part"),
            offset: 10, totalLength: 10, state: .finished, adopted: false)
        var unknownLength = final
        unknownLength.totalLength = nil
        #expect(!records.deferFinal(unknownLength), "without a length a rerun could not recognise the file: saved now")
        var running = final
        running.state = .running
        #expect(!records.deferFinal(running))
        #expect(records.deferFinal(final))
        #expect(try records.load(final.key) == nil, "kept, not written yet")
        try await conclude(final.destinationPath)
        #expect(try records.load(final.key) == final)
        records.remove(final.key)
        final.offset = 11
        #expect(records.deferFinal(final))
        records.remove(final.key)
        try await conclude(final.destinationPath)
        #expect(try records.load(final.key) == nil, "a removed record's waiting final record is dropped too")
    }
}
