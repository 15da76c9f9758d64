import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// A checkpoint that fails is never swallowed: the download stops with its error, over one connection or several,
/// and the record left behind is one whose bytes are durable.
@Suite struct CheckpointIntegrationTests {
    /// The real record files, whose durable saves of a record claiming bytes fail as a full disk would (those of
    /// a running download only, or every one).
    struct DiskFullAfterStart: ResumeRecords {
        let files: TransferRecordStore
        var always = false
        static let message = "no space left on the device holding the resume records (simulated)"

        func load(_ key: String) throws(HaulError) -> TransferRecord? { try files.load(key) }
        func save(_ record: TransferRecord, durable: Bool) throws(HaulError) {
            if durable, record.offset > 0, always || record.state == .running { throw HaulError(.fileSystem, Self.message) }
            try files.save(record, durable: durable)
        }
        func remove(_ key: String) { files.remove(key) }
        func lock(_ key: String, what: String) throws(HaulError) -> FileLock { try files.lock(key, what: what) }
        func choice(url: URL, directory: String) throws(HaulError) -> any DirectoryChoice { try files.choice(url: url, directory: directory) }
        func chosenDestination(url: URL, directory: String) -> String? { files.chosenDestination(url: url, directory: directory) }
    }

    func download(segments: Int, always: Bool = false) async throws {
        let server = try await TestServer.start()
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let body = TestData.bytes(4 << 20, seed: 281)
        var resource = Resource(body: body, etag: "\"c\"")
        // Slow enough for several checkpoints (every 50 ms) before the end, on a busy machine too.
        resource.faults.throttleBytesPerSecond = 1 << 20
        server.serve("/f", resource)
        let engine = TransferEngine(records: DiskFullAfterStart(files: TransferRecordStore(home: sandbox.home), always: always))
        var options = try testOptions(server.url("/f"), .file(sandbox.path("f")))
        options.segments = segments
        options.minSegmentSize = 256 * 1024
        let error = await expectHaulError(.fileSystem) { _ = try await engine.download(options) }
        if always {
            // Not even the record of where it stopped could be written: the error says a rerun resumes from the last
            // record saved.
            #expect(error?.message.hasPrefix(DiskFullAfterStart.message + "; the progress since the last save could not be recorded") == true,
                    "\(error?.message ?? "")")
        } else {
            #expect(error?.message == DiskFullAfterStart.message, "\(error?.message ?? "")")
        }
        #expect(!sandbox.exists("f"), "a download whose progress could not be recorded was published")
        // Whatever the record left behind claims is the server's bytes.
        let partial = sandbox.contents("f.haul-part") ?? []
        for record in sandbox.records() {
            let claimed = record.segments?.map { Int($0.start)..<Int($0.start + $0.done) } ?? [0..<Int(record.offset)]
            for range in claimed { #expect(partial.count >= range.upperBound && partial[range] == body[range], "\(range)") }
        }
        try await engine.shutdown()
        try await server.shutdown()
    }

    @Test func aFailedCheckpointOverOneConnectionStopsTheDownload() async throws {
        try await download(segments: 1)
    }

    @Test func aFailedCheckpointOfASegmentedDownloadStopsIt() async throws {
        try await download(segments: 4)
    }

    @Test func aFailedLastCheckpointIsSaidToo() async throws {
        try await download(segments: 4, always: true)
    }
}
