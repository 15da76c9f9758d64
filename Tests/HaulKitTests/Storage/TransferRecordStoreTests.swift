import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

/// Resume records on disk: replaced atomically when durable, written in place when not, and readable either way.
@Suite struct TransferRecordStoreTests {
    private func withStore(_ body: (TransferRecordStore, String) throws -> Void) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("haul-records-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try body(TransferRecordStore(home: HaulHome(path: root)), root)
    }

    private func record(segments: Int) -> TransferRecord {
        var record = TransferRecord(
            url: "http://h/f", destinationPath: "/d/f", partialPath: "/d/f.haul-part", offset: 10, state: .running, adopted: false)
        record.totalLength = 1 << 20
        record.segments = segments == 0 ? nil : (0..<segments).map {
            Segment(id: $0, start: Int64($0) * 1000, end: Int64($0 + 1) * 1000, done: 5)
        }
        return record
    }

    /// A session's store writes records by hand: what it writes is what `Codable` reads, every member included.
    @Test func theHandWrittenJSONOfARecordIsWhatCodableReads() throws {
        var full = record(segments: 3)
        full.finalURL = "https://mirror/f?sig=\"a\\b\"&n=\n\t\u{1}é😀"
        full.entityTag = "\"v1\""
        full.lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"
        full.contentEncoding = "gzip"
        full.reprDigest = "sha256:" + String(repeating: "ab", count: 32)
        full.adopted = true
        full.state = .paused
        full.offset = (1 << 40) + 7
        full.fileID = "2049:123456789"
        for candidate in [record(segments: 0), full] {
            let decoded = try JSONDecoder().decode(TransferRecord.self, from: Data(candidate.jsonText.utf8))
            #expect(decoded == candidate)
            let viaEncoder = try JSONDecoder().decode(TransferRecord.self, from: JSONEncoder().encode(candidate))
            #expect(decoded == viaEncoder)
        }
    }

    @Test func aShorterRecordWrittenInPlaceOverALongerOneReadsBackExactly() throws {
        try withStore { store, _ in
            let long = record(segments: 40)
            try store.save(long, durable: true)
            var finished = record(segments: 0)
            finished.state = .finished
            try store.save(finished, durable: false)
            #expect(try store.load(finished.key) == finished, "the old record's tail is padding, not data")
            let size = (try FileManager.default.attributesOfItem(atPath: store.recordPath(finished.key))[.size] as? NSNumber)?.intValue
            #expect(size ?? 0 > 0)
            #expect(!FileManager.default.fileExists(atPath: store.recordPath(finished.key) + ".tmp"), "no temporary file in place")
            // And the other way round: a longer record in place over a shorter one.
            try store.save(long, durable: false)
            #expect(try store.load(long.key) == long)
        }
    }

    @Test func aRecordIsPrivateAndItsFolderIsMadeAgainIfItWentAway() throws {
        try withStore { store, root in
            let first = record(segments: 2)
            try store.save(first, durable: false)
            let mode = (try FileManager.default.attributesOfItem(atPath: store.recordPath(first.key))[.posixPermissions] as? NSNumber)?.intValue
            #expect(mode == 0o600)
            try FileManager.default.removeItem(atPath: root)
            try store.save(first, durable: true)
            #expect(try store.load(first.key) == first)
            let lock = try store.lock("k", what: "/d/f")
            lock.release()
        }
    }
}
