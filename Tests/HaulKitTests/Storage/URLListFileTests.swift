import Foundation
import Glibc
import Testing
@testable import HaulKit

/// The `-i` list held for a batch's two readings: a file by the descriptor opened once, a pipe kept first in a
/// private file that has no name, anything else refused.
@Suite struct URLListFileTests {
    func folder() throws -> String {
        let path = NSTemporaryDirectory() + "haul-list-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func urls(_ list: URLListFile) throws -> [String] {
        let cursor = URLListCursor(list)
        var all: [String] = []
        for _ in 0..<100 {
            let part = try cursor.next(2)
            if part.isEmpty { break }
            all += part.map(\.url)
        }
        return all
    }

    @Test func aFileIsReadTwiceByTheDescriptorOpenedOnce() async throws {
        let root = try folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let spool = root + "/spool"
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        try "\u{FEFF}https://a.test/1\r\nhttps://a.test/2\nhttps://a.test/3\n".write(toFile: root + "/list.txt", atomically: false, encoding: .utf8)
        let list = try await URLListFile.open(root + "/list.txt", name: "the URL list", spoolFolder: { spool })
        // Another file put in its place after it was opened is not what is read.
        try "https://other.test/\n".write(toFile: root + "/list.txt", atomically: true, encoding: .utf8)
        let expected = ["https://a.test/1", "https://a.test/2", "https://a.test/3"]
        #expect(try urls(list) == expected)
        #expect(try urls(list) == expected)
        #expect(try FileManager.default.contentsOfDirectory(atPath: spool).isEmpty)
    }

    @Test(arguments: [0, 5, 200])
    func aNamedPipeIsKeptAndReadTwice(_ count: Int) async throws {
        let root = try folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fifo = root + "/list.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let text = (0..<count).map { "https://p.test/\($0)\n" }.joined()
        // The writer comes after the list is opened (its open waits for a reader), and writes in pieces.
        let writer = Thread {
            let fd = open(fifo, O_WRONLY)
            guard fd >= 0 else { return }
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let piece = bytes.prefix(37)
                _ = Array(piece).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                bytes = bytes.dropFirst(piece.count)
            }
            close(fd)
        }
        writer.start()
        let list = try await URLListFile.open(fifo, name: "the URL list", spoolFolder: { root })
        let expected = (0..<count).map { "https://p.test/\($0)" }
        #expect(try urls(list) == expected)
        #expect(try urls(list) == expected)
        // Kept in a file without a name: nothing beside the FIFO.
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == ["list.fifo"])
    }

    @Test(arguments: ["/dev/zero", "/dev/urandom"])
    func aDeviceIsRefused(_ device: String) async throws {
        await #expect(throws: HaulError.self) {
            _ = try await URLListFile.open(device, name: "the URL list \(device)", spoolFolder: { NSTemporaryDirectory() })
        }
    }
}
