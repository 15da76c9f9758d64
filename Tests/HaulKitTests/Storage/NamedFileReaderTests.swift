import AsyncHTTPClient
import Foundation
import Glibc
import Testing
@testable import HaulKit

@Suite("Reading what a user names, and transport errors in words")
struct NamedFileReaderTests {
    func folder() throws -> String {
        let path = NSTemporaryDirectory() + "haul-named-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func aRegularFileIsReadAndAnythingElseIsRefusedWithoutBlocking() throws {
        let root = try folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try "machine h login u password p\n".write(toFile: root + "/netrc", atomically: true, encoding: .utf8)
        chmod(root + "/netrc", 0o640)
        let read = try NamedFileReader.readNow(root + "/netrc", as: .netrc)
        #expect(String(decoding: read.bytes, as: UTF8.self).hasPrefix("machine h") && read.permissions == 0o640)
        #expect(mkfifo(root + "/fifo", 0o600) == 0)
        #expect(symlink(root + "/fifo", root + "/link") == 0)
        for (path, fragment) in [(root + "/fifo", "is a FIFO"), (root + "/link", "is a FIFO"), ("/dev/zero", "is a device"), (root, "is a folder"),
                                 (root + "/missing", "does not exist")] {
            do {
                _ = try NamedFileReader.readNow(path, as: .caBundle)
                Issue.record("\(path) was read")
            } catch {
                #expect(error.kind == .usage && error.message.contains(fragment), "\(path): \(error.message)")
            }
        }
        // Haul's own file is never read through a link.
        #expect(symlink(root + "/netrc", root + "/api-key") == 0)
        #expect(throws: HaulError.self) { try NamedFileReader.readNow(root + "/api-key", as: .apiKey) }
    }

    @Test func aFileOverItsLimitIsRefusedWhateverItsSizeSaid() throws {
        let root = try folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/key"
        try Data(repeating: 65, count: NamedFile.apiKey.maxBytes + 1).write(to: URL(fileURLWithPath: path))
        #expect(throws: HaulError.self) { try NamedFileReader.readNow(path, as: .apiKey) }
        // /proc files say size 0 and have more: the read stops at the limit all the same.
        #expect(throws: HaulError.self) { try NamedFileReader.readNow("/proc/self/smaps", as: .apiKey) }
    }

    @Test func aHashedFolderGivesItsHashNamedFilesOnly() throws {
        let root = try folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try "one".write(toFile: root + "/bundle.pem", atomically: true, encoding: .utf8)
        #expect(symlink(root + "/bundle.pem", root + "/0123abcd.0") == 0)
        try "two".write(toFile: root + "/0123abcd.1", atomically: true, encoding: .utf8)
        let files = try NamedFileReader.readHashedFolder(root)
        #expect(files.map(\.name) == ["0123abcd.0", "0123abcd.1"])
        #expect(files.map { String(decoding: $0.bytes, as: UTF8.self) } == ["one", "two"])
        #expect(throws: HaulError.self) { try NamedFileReader.readHashedFolder(root + "/bundle.pem") }
    }

    @Test func aListIsReadAndCheckedLineByLine() throws {
        let root = try folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try "# urls\nhttps://a.example/1\n\nhttp://b.example/2\n".write(toFile: root + "/list", atomically: true, encoding: .utf8)
        #expect(try URLListReader.readNow(root + "/list", name: "the list").map(\.url) == ["https://a.example/1", "http://b.example/2"])
        try "https://a.example/1\nftp://b.example/2\n".write(toFile: root + "/bad", atomically: true, encoding: .utf8)
        do {
            _ = try URLListReader.readNow(root + "/bad", name: "the list")
            Issue.record("ftp:// was accepted")
        } catch {
            #expect(error.message.hasPrefix("the list, line 2: unsupported URL scheme"), "\(error.message)")
        }
    }

    @Test func aCancelledReadStopsWaitingAtOnce() async throws {
        let gate = DispatchSemaphore(value: 0)
        let task = Task { try await BlockingIO.runInterruptibly { gate.wait(); return 1 } }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        gate.signal()
    }

    @Test func handshakeAndOtherTimeoutsAreWords() throws {
        let url = URL(string: "https://127.0.0.1:8443/f")!
        let words: [(HTTPClientError, String)] = [
            (.tlsHandshakeTimeout, "the TLS handshake with 127.0.0.1:8443 timed out"),
            (.connectTimeout, "connecting to 127.0.0.1:8443 timed out"),
            (.socksHandshakeTimeout, "the SOCKS proxy did not connect to 127.0.0.1:8443 in time"),
        ]
        for (error, text) in words {
            let failure = try DownloadJob.classify(error, url: url) as? TransientFailure
            #expect(failure?.reason == text, "\(error)")
        }
        #expect(DownloadJob.words("HTTPClientError.serverOfferedUnsupportedApplicationProtocol") == "server offered unsupported application protocol")
        #expect(DownloadJob.words("the connection reset") == "the connection reset")
    }
}
