import Crypto
import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// A file given to `--continue` is the user's: a download that ends without publishing it (a checksum that does not
/// match, the server's own wrong digest, a file changed on the server) gives the user's bytes back as they were, at
/// their own name, and never deletes them. aria2c keeps such a file too; curl and wget never check.
@Suite struct ContinueGiveBackTests {
    static func digestField(_ body: [UInt8]) -> String {
        "sha-256=:\(Data(SHA256.hash(data: body)).base64EncodedString()):"
    }

    /// Every length of the user's file (beyond the 64 KiB overlap Haul compares, so that a wrong byte before it goes
    /// unseen until the end), with a `--checksum` that does not match or a server's `Repr-Digest` that does not
    /// match: exit `.checksum`, the user's file back at its name byte for byte, nothing at the partial name, no record.
    @Test func aMismatchAfterAdoptingGivesTheUsersFileBackAsItWas() async throws {
        try await withHarness { server, engine, sandbox in
            let body = PublishIntegrityTests.body(400_000, seed: 41)
            var random = SplitMix(seed: 41)
            for round in 0..<6 {
                let length = Int.random(in: 70_000...390_000, using: &random)
                let name = "mine\(round).bin"
                var mine = Array(body.prefix(length))
                var options: DownloadOptions
                if round % 2 == 0 {
                    // The user's bytes are wrong early on, and the checksum given is the server's file's.
                    mine[100] ^= 0xFF
                    server.serve("/c\(round)", Resource(body: body, etag: "\"c\(round)\""))
                    options = try testOptions(server.url("/c\(round)"), .file(sandbox.path(name)))
                    options.checksum = Checksum(algorithm: .sha256, hex: sha256Hex(body))
                } else {
                    // The user's bytes are right; the server announces a digest its file does not have.
                    var wrong = Resource(body: body, etag: "\"d\(round)\"")
                    wrong.extraHeaders = [("Repr-Digest", Self.digestField(Array(body.dropLast())))]
                    server.serve("/d\(round)", wrong)
                    options = try testOptions(server.url("/d\(round)"), .file(sandbox.path(name)))
                }
                options.continuePartial = true
                if round % 3 == 2 {
                    options.segments = 3
                    options.minSegmentSize = 16 * 1024
                }
                sandbox.write(mine, to: name)
                let error = await expectHaulError(.checksum) { _ = try await engine.download(options) }
                #expect(sandbox.contents(name) == mine, "round \(round): the user's \(length) bytes are back as they were")
                #expect(!sandbox.exists(name + ".haul-part"), "round \(round)")
                #expect(error?.message.contains("\(sandbox.path(name)) is back as it was (\(length) bytes)") == true, "round \(round): \(error?.message ?? "")")
                #expect(error?.message.contains("discarded;") != true)
                #expect(!sandbox.records().contains { $0.destinationPath == sandbox.path(name) }, "round \(round)")
            }
        }
    }

    /// The name was taken while the download ran: the user's bytes stay at the partial file's name, said in the
    /// error, and what took the name is untouched.
    @Test func aTakenNameKeepsTheUsersBytesAtThePartialName() async throws {
        try await withHarness { server, engine, sandbox in
            let body = PublishIntegrityTests.body(300_000, seed: 42)
            var resource = Resource(body: body, etag: "\"t\"")
            resource.extraHeaders = [("Repr-Digest", Self.digestField([1, 2, 3]))]
            resource.faults.throttleBytesPerSecond = 400_000
            server.serve("/t", resource)
            let mine = Array(body.prefix(100_000))
            sandbox.write(mine, to: "t.bin")
            var options = try testOptions(server.url("/t"), .file(sandbox.path("t.bin")))
            options.continuePartial = true
            options.progressInterval = .milliseconds(10)
            let placed = ManagedFlag()
            let log = EventLog { event in
                // Once adopted (moved to the partial name), something else takes the user's name: at the first
                // progress past the user's bytes, which always comes (a busy machine may read the rest in one burst,
                // with no later progress before the end).
                if case .progress(let progress) = event, progress.bytes > 100_000, placed.setOnce() {
                    sandbox.write([7, 7, 7], to: "t.bin")
                }
            }
            let error = await expectHaulError(.checksum) { _ = try await engine.download(options, events: log.append) }
            #expect(placed.isSet)
            #expect(sandbox.contents("t.bin") == [7, 7, 7], "what took the name stays")
            #expect(sandbox.contents("t.bin.haul-part") == mine, "the user's bytes, as they were, at the partial name")
            #expect(error?.message.contains("are kept in \(sandbox.path("t.bin.haul-part"))") == true, "\(error?.message ?? "")")
        }
    }
}

/// Set once, from any thread.
final class ManagedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    /// `true` the first time only.
    func setOnce() -> Bool {
        lock.withLock {
            defer { value = true }
            return !value
        }
    }
}

/// A `--continue` download stopped after its file was adopted, then continued against another version of the file
/// (or a server that now sends the whole file): the bytes held are not this version's, and the user's are given back
/// at their name as they were, never truncated away.
@Suite struct ContinueChangedServerTests {
    @Test func anotherVersionOnTheServerGivesTheUsersFileBack() async throws {
        try await withHarness { server, engine, sandbox in
            let body = PublishIntegrityTests.body(600_000, seed: 43)
            for (round, length) in [70_000, 250_000].enumerated() {
                var first = Resource(body: body, etag: "\"v1\"")
                first.faults.throttleBytesPerSecond = 400_000
                server.serve("/v\(round)", first)
                let name = "v\(round).bin"
                let mine = Array(body.prefix(length))
                sandbox.write(mine, to: name)
                var options = try testOptions(server.url("/v\(round)"), .file(sandbox.path(name)))
                options.continuePartial = true
                options.progressInterval = .milliseconds(10)
                options.checkpointInterval = .milliseconds(10)
                let box = TaskBox()
                let log = EventLog { event in
                    if case .progress(let progress) = event, progress.bytes > Int64(length) + 60_000 { box.cancel() }
                }
                let running = options
                let task = Task { try await engine.download(running, events: log.append) }
                box.set(task)
                await expectHaulError(.interrupted) { _ = try await task.value }
                #expect(sandbox.exists(name + ".haul-part") && !sandbox.exists(name), "round \(round): adopted, then paused")
                // Another version now: its validators differ, so the server answers the range with the whole file.
                server.serve("/v\(round)", Resource(body: PublishIntegrityTests.body(600_000, seed: 44), etag: "\"v2\""))
                let error = await expectHaulError(.server) { _ = try await engine.download(options) }
                #expect(sandbox.contents(name) == mine, "round \(round): the user's \(length) bytes, as they were")
                #expect(!sandbox.exists(name + ".haul-part"), "round \(round)")
                #expect(error?.message.contains("\(sandbox.path(name)) is back as it was (\(length) bytes)") == true, "\(error?.message ?? "")")
            }
        }
    }
}
