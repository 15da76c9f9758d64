import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

#if canImport(Glibc)
import Glibc
#endif

/// Between two runs, anyone may put another file where Haul's was: at the partial file's name, or at the destination
/// of a finished download. Bytes Haul did not write are never continued nor called complete, whatever the file's size
/// and however well its last bytes match (the overlap check sees only them): the record names the very file
/// (`fileID`), and a file another user owns is never Haul's.
@Suite struct HeldFileIdentityTests {
    let body = TestData.bytes(400_000, seed: 71)

    /// What is put at the partial file's name between the runs.
    enum Swap: String, CaseIterable, Sendable {
        /// A copy of the same bytes: another file, though an honest one.
        case copyOfTheSameBytes
        /// Other bytes, with the real ones over the last 100 KB: what the overlap check compares matches.
        case otherBytesWithTheRealTail
        /// A link to a file with the held bytes.
        case linkToTheBytes
        /// The same file, given to another user (root only).
        case sameFileOfAnotherUser
    }

    /// A download interrupted with bytes held: its partial file's path and its record.
    private func interrupted(_ server: TestServer, _ engine: TransferEngine, _ sandbox: Sandbox) async throws -> (String, TransferRecord) {
        var resource = Resource(body: body, etag: "\"v\"")
        resource.faults.dropAfterBytes = 300_000
        resource.faults.dropOnRequests = 1
        server.serve("/f", resource)
        await expectHaulError(.network) {
            _ = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin")), retries: 0))
        }
        let record = try #require(sandbox.records().first)
        #expect(record.offset > 100_000 && record.fileID != nil, "\(record)")
        return (sandbox.path("f.bin.haul-part"), record)
    }

    @Test(arguments: Swap.allCases)
    func aPartialFileReplacedBetweenRunsIsNeverContinued(_ swap: Swap) async throws {
        if swap == .sameFileOfAnotherUser, geteuid() != 0 { return }
        try await withHarness { server, engine, sandbox in
            let (partial, record) = try await interrupted(server, engine, sandbox)
            let held = Int(record.offset)
            let manager = FileManager.default
            switch swap {
            case .copyOfTheSameBytes:
                let bytes = try #require(manager.contents(atPath: partial))
                try manager.removeItem(atPath: partial)
                #expect(manager.createFile(atPath: partial, contents: bytes))
            case .otherBytesWithTheRealTail:
                let forged = [UInt8](repeating: 0x45, count: held - 100_000) + Array(body[(held - 100_000)..<held])
                try manager.removeItem(atPath: partial)
                #expect(manager.createFile(atPath: partial, contents: Data(forged)))
            case .linkToTheBytes:
                let elsewhere = sandbox.root + "/elsewhere.bin"
                try manager.moveItem(atPath: partial, toPath: elsewhere)
                try manager.createSymbolicLink(atPath: partial, withDestinationPath: elsewhere)
            case .sameFileOfAnotherUser:
                #expect(chown(partial, 65534, 65534) == 0)
            }
            let before = server.requests("/f").count
            server.serve("/f", Resource(body: body, etag: "\"v\""))
            let result = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))))
            #expect(!result.alreadyComplete)
            let exact = sandbox.contents("f.bin") == body
            #expect(exact, "\(swap): the published file is exactly the server's")
            let rerun = Array(server.requests("/f").dropFirst(before))
            #expect(rerun.first?.header("Range") == nil || rerun.first?.header("Range") == "bytes=0-", "\(swap): started afresh, not at byte \(held)")
            if let info = try? manager.attributesOfItem(atPath: sandbox.path("f.bin")) {
                #expect((info[.ownerAccountID] as? NSNumber)?.uint32Value == geteuid(), "the published file is this user's")
            }
        }
    }

    /// The untouched partial file is continued where it stopped: the check above is not a restart of everything.
    @Test func theSamePartialFileIsContinued() async throws {
        try await withHarness { server, engine, sandbox in
            let (_, record) = try await interrupted(server, engine, sandbox)
            let before = server.requests("/f").count
            server.serve("/f", Resource(body: body, etag: "\"v\""))
            _ = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))))
            let exact = sandbox.contents("f.bin") == body
            #expect(exact)
            let range = try #require(server.requests("/f").dropFirst(before).first?.header("Range"))
            let start = try #require(Int(range.dropFirst("bytes=".count).dropLast()))
            #expect(start > 0 && start <= Int(record.offset))
        }
    }

    /// Another file of the same size put at a finished download's destination is not "already complete": `-o` refuses
    /// it as any existing file, `--dir` chooses another name.
    @Test func anotherFileAtAFinishedDestinationIsNotComplete() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/g/k.bin", Resource(body: body, etag: "\"k\""))
            let forged = [UInt8](repeating: 0x58, count: body.count)
            _ = try await engine.download(try testOptions(server.url("/g/k.bin"), .file(sandbox.path("k.bin"))))
            try FileManager.default.removeItem(atPath: sandbox.path("k.bin"))
            sandbox.write(forged, to: "k.bin")
            let refused = await expectHaulError(.usage) {
                _ = try await engine.download(try testOptions(server.url("/g/k.bin"), .file(sandbox.path("k.bin"))))
            }
            #expect(refused?.message.contains("already exists") == true, "\(String(describing: refused))")
            let kept = sandbox.contents("k.bin") == forged
            #expect(kept)

            let folder = sandbox.files + "/dir"
            let options = try testOptions(server.url("/g/k.bin"), .directory(folder))
            _ = try await engine.download(options)
            try FileManager.default.removeItem(atPath: folder + "/k.bin")
            #expect(FileManager.default.createFile(atPath: folder + "/k.bin", contents: Data(forged)))
            let again = try await engine.download(options)
            #expect(!again.alreadyComplete)
            #expect(again.path == folder + "/k (1).bin")
            let downloaded = FileManager.default.contents(atPath: folder + "/k (1).bin") == Data(body)
            let untouched = FileManager.default.contents(atPath: folder + "/k.bin") == Data(forged)
            #expect(downloaded && untouched)
        }
    }

    /// Interrupted, its partial file gone, and a file of the whole length at the destination: not taken for the
    /// partial file moved into place (a kill between the move and its record), since it is not that file.
    @Test func aFileOfTheRightSizeAtTheDestinationIsNotTheMovedPartial() async throws {
        try await withHarness { server, engine, sandbox in
            let (partial, _) = try await interrupted(server, engine, sandbox)
            try FileManager.default.removeItem(atPath: partial)
            let forged = [UInt8](repeating: 0x59, count: body.count)
            sandbox.write(forged, to: "f.bin")
            server.serve("/f", Resource(body: body, etag: "\"v\""))
            do {
                let result = try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path("f.bin"))))
                Issue.record("taken for the download: \(result)")
            } catch let error as HaulError {
                // Downloaded again, and not published over the file found there.
                #expect(error.message.contains("f.bin"), "\(error)")
            }
            let untouched = sandbox.contents("f.bin") == forged
            #expect(untouched)
        }
    }
}
