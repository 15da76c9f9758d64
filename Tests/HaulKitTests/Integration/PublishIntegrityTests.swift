import Crypto
import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// Only Haul's own verified bytes reach a destination: whatever stale file lies at the partial path, whatever is
/// swapped in while the download runs, and whatever the validators claim.
@Suite struct PublishIntegrityTests {
    /// Bodies of `count` bytes that differ from each other at every position.
    static func body(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 7 &+ ($0 >> 9)) }
    }

    // MARK: Stale partial files

    @Test func aStalePartialWithoutARecordIsNeverContinuedNorRemoved() async throws {
        // Any stale file: longer, shorter, as long, empty, of another resource's bytes; with a checksum or without;
        // one connection or several. One with bytes is refused and left as it is (whoever's it is); once it is
        // gone, or when it is empty, the download publishes exactly the server's bytes.
        try await withHarness { server, engine, sandbox in
            var random = SplitMix(seed: 23)
            for round in 0..<10 {
                let size = [0, 1, 65_536, 100_000, 300_000][round % 5] + Int.random(in: 0...1000, using: &random)
                let stale = Self.body(round % 4 == 3 ? 0 : Int.random(in: 1...400_000, using: &random), seed: 200)
                let body = Self.body(size, seed: UInt8(round))
                server.serve("/r\(round)", Resource(body: body, etag: "\"r\(round)\""))
                let name = "stale\(round).bin"
                sandbox.write(stale, to: name + ".haul-part")
                var options = try testOptions(server.url("/r\(round)"), .file(sandbox.path(name)))
                if round % 2 == 0 { options.checksum = Checksum(algorithm: .sha256, hex: sha256Hex(body)) }
                if round % 3 == 0 {
                    options.segments = 4
                    options.minSegmentSize = 16 * 1024
                }
                if !stale.isEmpty {
                    let error = await expectHaulError(.usage) { _ = try await engine.download(options) }
                    #expect(error?.reason == .unknownPartialFile(partialPath: sandbox.path(name + ".haul-part")), "round \(round)")
                    #expect(sandbox.contents(name + ".haul-part") == stale, "round \(round): the stale bytes are left as they were")
                    #expect(!sandbox.exists(name))
                    try FileManager.default.removeItem(atPath: sandbox.path(name + ".haul-part"))
                }
                let result = try await engine.download(options)
                #expect(sandbox.contents(name) == body, "round \(round): \(stale.count) stale bytes, \(body.count) served")
                #expect(result.bytes == Int64(body.count))
                #expect(!sandbox.exists(name + ".haul-part"))
            }
        }
    }

    /// Another user's file at the partial file's name (their download into a folder both may write): left as it is,
    /// theirs; this download writes a partial file of its own and publishes exactly the server's bytes.
    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another user"))
    func anotherUsersPartialIsLeftAlone() async throws {
        try await withHarness { server, engine, sandbox in
            let body = Self.body(150_000, seed: 3), theirs = Self.body(90_000, seed: 4)
            server.serve("/n", Resource(body: body, etag: "\"n\""))
            sandbox.write(theirs, to: "n.bin.haul-part")
            #expect(chown(sandbox.path("n.bin.haul-part"), 65534, 65534) == 0)
            let result = try await engine.download(try testOptions(server.url("/n"), .file(sandbox.path("n.bin"))))
            #expect(result.bytes == Int64(body.count))
            let published = sandbox.contents("n.bin") == body, kept = sandbox.contents("n.bin.haul-part") == theirs
            #expect(published && kept)
            var info = stat()
            #expect(lstat(sandbox.path("n.bin.haul-part"), &info) == 0 && info.st_uid == 65534)
            #expect(sandbox.listing() == ["n.bin", "n.bin.haul-part"], "nothing of this download is left over")
        }
    }

    @Test func aLinkOrHardLinkAtThePartialPathIsReplacedNeverWrittenThrough() async throws {
        try await withHarness { server, engine, sandbox in
            let body = Self.body(120_000, seed: 1)
            server.serve("/f", Resource(body: body, etag: "\"f\""))
            let canary = Self.body(50_000, seed: 9)
            sandbox.write(canary, to: "canary")
            try FileManager.default.createSymbolicLink(atPath: sandbox.path("a.bin.haul-part"), withDestinationPath: sandbox.path("canary"))
            try FileManager.default.linkItem(atPath: sandbox.path("canary"), toPath: sandbox.path("b.bin.haul-part"))
            for name in ["a.bin", "b.bin"] {
                try await engine.download(try testOptions(server.url("/f"), .file(sandbox.path(name))))
                #expect(sandbox.contents(name) == body)
            }
            #expect(sandbox.contents("canary") == canary, "the file a planted link pointed to is untouched")
        }
    }

    // MARK: The publish check

    /// Plants an intruder at `partial` once: the partial file moved away, then a link to `canary`, a hard link of
    /// it, or a copy of it put in its place.
    static func plant(_ kind: Int, at partial: String, canary: String) {
        let manager = FileManager.default
        guard (try? manager.moveItem(atPath: partial, toPath: partial + ".moved")) != nil else { return }
        switch kind % 3 {
        case 0: try? manager.createSymbolicLink(atPath: partial, withDestinationPath: canary)
        case 1: try? manager.linkItem(atPath: canary, toPath: partial)
        default: try? manager.copyItem(atPath: canary, toPath: partial)
        }
    }

    @Test(arguments: [0, 1, 2])
    func anIntruderAtThePartialPathIsNeverPublished(kind: Int) async throws {
        try await withHarness { server, engine, sandbox in
            let body = Self.body(400_000, seed: 2)
            for segmented in [false, true] {
                var resource = Resource(body: body, etag: "\"p\"")
                resource.faults.throttleBytesPerSecond = 400_000
                server.serve("/p", resource)
                let canary = Self.body(30_000, seed: 7)
                sandbox.write(canary, to: "canary")
                let name = "p\(kind)-\(segmented).bin"
                let partial = sandbox.path(name + ".haul-part"), canaryPath = sandbox.path("canary")
                var options = try testOptions(server.url("/p"), .file(sandbox.path(name)))
                options.progressInterval = .milliseconds(10)
                if segmented {
                    options.segments = 4
                    options.minSegmentSize = 16 * 1024
                }
                let planted = OnceFlag()
                let log = EventLog { event in
                    if case .progress(let progress) = event, progress.bytes > 0, planted.setOnce() {
                        Self.plant(kind, at: partial, canary: canaryPath)
                    }
                }
                let error = await expectHaulError(.fileSystem) { _ = try await engine.download(options, events: log.append) }
                #expect(error?.reason == .replacedWhileDownloading(path: partial), "\(error?.message ?? "")")
                #expect(!sandbox.exists(name), "nothing published")
                #expect(sandbox.contents("canary") == canary, "the intruder's target is untouched")
                var info = stat()
                #expect(lstat(partial, &info) == 0, "the intruder stays where it was")
            }
        }
    }

    @Test func aSwapLoopWhileDownloadsRunNeverPublishesAnythingButTheDownload() async throws {
        // A loop swaps the partial file with intruders and back while downloads run over one connection and
        // several, with the server dropping connections: whatever the timing, the destination is either the exact
        // download or absent, and never the intruder.
        try await withHarness { server, engine, sandbox in
            let body = Self.body(600_000, seed: 3)
            var resource = Resource(body: body, etag: "\"s\"")
            resource.faults.throttleBytesPerSecond = 1_000_000
            resource.faults.dropAfterBytes = 150_000
            resource.faults.dropOnRequests = 2
            server.serve("/s", resource)
            let canary = Self.body(20_000, seed: 5)
            sandbox.write(canary, to: "canary")
            for (index, segmented) in [false, true, false, true].enumerated() {
                let name = "s\(index).bin"
                let partial = sandbox.path(name + ".haul-part"), canaryPath = sandbox.path("canary")
                var options = try testOptions(server.url("/s"), .file(sandbox.path(name)))
                if segmented {
                    options.segments = 3
                    options.minSegmentSize = 16 * 1024
                }
                let stop = OnceFlag()
                let swapper = Thread {
                    var round = 0
                    // Bounded: at most 20,000 swaps, each a few syscalls.
                    while !stop.isSet, round < 20_000 {
                        Self.plant(round + index, at: partial, canary: canaryPath)
                        // Put the real partial back, so that the download may also end with its own file in place.
                        if FileManager.default.fileExists(atPath: partial + ".moved") {
                            try? FileManager.default.removeItem(atPath: partial)
                            try? FileManager.default.moveItem(atPath: partial + ".moved", toPath: partial)
                        }
                        round += 1
                        usleep(200)
                    }
                }
                swapper.start()
                let outcome: Result<DownloadResult, any Error>
                do { outcome = .success(try await engine.download(options)) } catch { outcome = .failure(error) }
                stop.set()
                while !swapper.isFinished { try await Task.sleep(for: .milliseconds(5)) }
                var info = stat()
                switch outcome {
                case .success:
                    #expect(sandbox.contents(name) == body, "published, so it is the download")
                    #expect(lstat(sandbox.path(name), &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_nlink == 1)
                case .failure(let error as HaulError):
                    #expect(error.reason == .replacedWhileDownloading(path: partial), "\(error.message)")
                    if lstat(sandbox.path(name), &info) == 0 { Issue.record("\(name) exists after a failed publish") }
                case .failure(let error):
                    Issue.record("unexpected \(error)")
                }
                #expect(sandbox.contents("canary") == canary)
            }
        }
    }

    @Test func aFolderSwappedForALinkWhileDownloadingNeverRedirectsTheFile() async throws {
        try await withHarness { server, engine, sandbox in
            let body = Self.body(300_000, seed: 4)
            var resource = Resource(body: body, etag: "\"d\"")
            resource.faults.throttleBytesPerSecond = 300_000
            server.serve("/d", resource)
            let manager = FileManager.default
            try manager.createDirectory(atPath: sandbox.path("dl"), withIntermediateDirectories: true)
            try manager.createDirectory(atPath: sandbox.path("elsewhere"), withIntermediateDirectories: true)
            var options = try testOptions(server.url("/d"), .file(sandbox.path("dl/b.bin")))
            options.progressInterval = .milliseconds(10)
            let swapped = OnceFlag()
            let root = sandbox.files
            let log = EventLog { event in
                if case .progress(let progress) = event, progress.bytes > 0, swapped.setOnce() {
                    try? manager.moveItem(atPath: root + "/dl", toPath: root + "/dl.moved")
                    try? manager.createSymbolicLink(atPath: root + "/dl", withDestinationPath: root + "/elsewhere")
                }
            }
            try await engine.download(options, events: log.append)
            #expect(swapped.isSet)
            #expect(try manager.contentsOfDirectory(atPath: sandbox.path("elsewhere")).isEmpty, "no write reached the link's target")
            #expect(sandbox.contents("dl.moved/b.bin") == body, "the file is in the folder it was started in")
        }
    }

    // MARK: Names

    @Test func collidingNamesUnderConcurrencyGetAFileEach() async throws {
        // Many downloads, few names, all at once into one folder: each gets a name of its own, no file is
        // overwritten, and a second run finds every file complete where the first put it.
        var random = SplitMix(seed: 31)
        for round in 0..<4 {
            try await withHarness { server, engine, sandbox in
                let count = Int.random(in: 6...14, using: &random)
                let names = ["ok", "ok.tar.gz", "data"].prefix(Int.random(in: 1...3, using: &random))
                var bodies: [String: [UInt8]] = [:]
                for index in 0..<count {
                    let name = names[index % names.count]
                    let path = "/u\(index)/\(name)"
                    let body = Self.body(2_000 + index * 997, seed: UInt8(index + 40 * round))
                    bodies[path] = body
                    server.serve(path, Resource(body: body, etag: "\"u\(index)\""))
                }
                for run in 0..<2 {
                    let results = try await withThrowingTaskGroup(of: (String, DownloadResult).self) { group in
                        for path in bodies.keys {
                            let options = try testOptions(server.url(path), .directory(sandbox.files))
                            group.addTask { (path, try await engine.download(options)) }
                        }
                        return try await group.reduce(into: [(String, DownloadResult)]()) { $0.append($1) }
                    }
                    #expect(Set(results.map(\.1.path)).count == count, "round \(round) run \(run): a file each")
                    for (path, result) in results {
                        #expect(FileManager.default.contents(atPath: result.path).map(Array.init) == bodies[path], "\(path) → \(result.path)")
                        #expect(result.alreadyComplete == (run == 1))
                    }
                    #expect(sandbox.listing().count == count, "\(sandbox.listing())")
                }
            }
        }
    }

    @Test func twoDownloadsOfOneProcessToOnePathAreToldApartFromAnotherProcess() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: Self.body(200_000, seed: 6), etag: "\"o\"")
            resource.faults.throttleBytesPerSecond = 200_000
            server.serve("/o", resource)
            let options = try testOptions(server.url("/o"), .file(sandbox.path("o.bin")))
            let started = OnceFlag()
            let first = Task { try await engine.download(options, events: { if case .started = $0 { started.set() } }) }
            for _ in 0..<1000 where !started.isSet { try await Task.sleep(for: .milliseconds(5)) }
            let error = await expectHaulError(.busy) { _ = try await engine.download(options) }
            #expect(error?.message.contains("another download of this process") == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("another haul process") == false)
            first.cancel()
            _ = try? await first.value
        }
    }

    // MARK: Validators that do not change

    @Test func anInPlaceRewriteKeepingTheETagIsCaughtByTheBytes() async throws {
        // The server's ETag stays the same (as nginx's, made of size and time, does after `touch -r`): only the
        // bytes show the change, and the download starts over instead of mixing two versions.
        for segmented in [false, true] {
            try await withHarness { server, engine, sandbox in
                let old = Self.body(1_000_000, seed: 10), new = Self.body(1_000_000, seed: 11)
                var resource = Resource(body: old, etag: "\"same\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
                // About 4 s for the whole file: a loaded machine still cancels it part-way (at 1 MiB/s a busy CI run
                // once saw it finish before the cancel landed).
                resource.faults.throttleBytesPerSecond = 256 * 1024
                server.serve("/w", resource)
                var options = try testOptions(server.url("/w"), .file(sandbox.path("w.bin")))
                options.progressInterval = .milliseconds(10)
                options.checkpointInterval = .milliseconds(10)
                if segmented {
                    options.segments = 4
                    options.minSegmentSize = 64 * 1024
                }
                let box = TaskBox()
                let log = EventLog { event in
                    if case .progress(let progress) = event, progress.bytes >= 300_000 { box.cancel() }
                }
                let first = options
                let task = Task { try await engine.download(first, events: log.append) }
                box.set(task)
                await expectHaulError(.interrupted) { _ = try await task.value }
                #expect((sandbox.records().first?.offset ?? 0) > 0)

                server.serve("/w", Resource(body: new, etag: "\"same\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"))
                let resumed = EventLog()
                try await engine.download(options, events: resumed.append)
                #expect(sandbox.contents("w.bin") == new, "segmented: \(segmented)")
                #expect(resumed.restarts.count == 1, "\(resumed.restarts)")
            }
        }
    }

    // MARK: RFC 9530 digests

    static func digestField(_ body: [UInt8], sha512: Bool = false) -> String {
        sha512 ? "sha-512=:\(Data(SHA512.hash(data: body)).base64EncodedString()):"
            : "sha-256=:\(Data(SHA256.hash(data: body)).base64EncodedString()):"
    }

    @Test func aServersReprDigestIsVerifiedAndAMismatchPublishesNothing() async throws {
        try await withHarness { server, engine, sandbox in
            let body = Self.body(150_000, seed: 12)
            var good = Resource(body: body, etag: "\"g\"")
            good.extraHeaders = [("Repr-Digest", "md5=:AAAA:, " + Self.digestField(body, sha512: true))]
            server.serve("/good", good)
            try await engine.download(try testOptions(server.url("/good"), .file(sandbox.path("good"))))
            #expect(sandbox.contents("good") == body)

            var bad = Resource(body: body, etag: "\"b\"")
            bad.extraHeaders = [("Repr-Digest", Self.digestField(Array(body.dropLast())))]
            server.serve("/bad", bad)
            let error = await expectHaulError(.checksum) {
                _ = try await engine.download(try testOptions(server.url("/bad"), .file(sandbox.path("bad"))))
            }
            #expect(error?.message.contains("does not have the digest the server announced (sha256 ") == true, "\(error?.message ?? "")")
            #expect(!sandbox.exists("bad") && !sandbox.exists("bad.haul-part"))

            // A Content-Digest describes a 200's whole content: the file.
            server.route("/content") { _ in
                ResponsePlan(status: 200, headers: [("Content-Digest", Self.digestField([1, 2, 3]))], body: body)
            }
            await expectHaulError(.checksum) {
                _ = try await engine.download(try testOptions(server.url("/content"), .file(sandbox.path("content"))))
            }
            #expect(!sandbox.exists("content"))
        }
    }

    @Test func aResumedDownloadIsVerifiedAgainstTheDigestItStartedWith() async throws {
        try await withHarness { server, engine, sandbox in
            let body = Self.body(600_000, seed: 13)
            var resource = Resource(body: body, etag: "\"v\"")
            resource.extraHeaders = [("Repr-Digest", Self.digestField(body))]
            resource.faults.throttleBytesPerSecond = 1 << 20
            server.serve("/v", resource)
            var options = try testOptions(server.url("/v"), .file(sandbox.path("v.bin")))
            options.progressInterval = .milliseconds(10)
            options.checkpointInterval = .milliseconds(10)
            let box = TaskBox()
            let log = EventLog { event in
                if case .progress(let progress) = event, progress.bytes >= 200_000 { box.cancel() }
            }
            let first = options
            let task = Task { try await engine.download(first, events: log.append) }
            box.set(task)
            await expectHaulError(.interrupted) { _ = try await task.value }
            #expect(sandbox.records().first?.reprDigest == "sha256:" + sha256Hex(body))
            // A byte held early on changes where no overlap looks, and the answers now carry no digest: the one
            // recorded still binds the file, so the mix is caught and nothing is published.
            let handle = try #require(FileHandle(forUpdatingAtPath: sandbox.path("v.bin.haul-part")))
            try handle.seek(toOffset: 10)
            try handle.write(contentsOf: Data([body[10] ^ 0xFF]))
            try handle.close()
            server.serve("/v", Resource(body: body, etag: "\"v\""))
            await expectHaulError(.checksum) { _ = try await engine.download(options) }
            #expect(!sandbox.exists("v.bin"))
            // Run again, it starts afresh and ends exact.
            try await engine.download(options)
            #expect(sandbox.contents("v.bin") == body)
        }
    }
}

/// A flag set once, from any thread.
final class OnceFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }

    /// Sets the flag; `true` only for the caller that set it first.
    func setOnce() -> Bool {
        lock.withLock {
            defer { value = true }
            return !value
        }
    }
}
