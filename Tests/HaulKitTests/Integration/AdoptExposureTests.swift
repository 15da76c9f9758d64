import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// A file Haul continues and publishes is one nobody else can change: a file given to `--continue` that another
/// account could write (its owner, another name of it, its mode) is refused as it is, and Haul's own partial file is
/// private (0600) until it is published with the umask's mode.
@Suite struct AdoptExposureTests {
    static let body = TestData.bytes(400_000, seed: 7_301)
    static let held = Array(body.prefix(150_000))

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    static func continuing(_ url: String, _ path: String) throws -> DownloadOptions {
        var options = try testOptions(url, .file(path))
        options.continuePartial = true
        return options
    }

    /// Refuses each of `names` (prepared by the caller) with a line holding its words: before any request, nothing
    /// written, renamed or recorded, the file's bytes and mode as they were.
    static func expectRefused(_ cases: [(name: String, words: String)], server: TestServer, engine: TransferEngine, sandbox: Sandbox) async throws {
        let before = sandbox.listing()
        for (name, words) in cases {
            let mode = Self.mode(sandbox.path(name))
            for segments in [1, 4] {
                var options = try continuing(server.url("/f"), sandbox.path(name))
                options.segments = segments
                options.minSegmentSize = 16 * 1024
                let error = await expectHaulError(.usage) { _ = try await engine.download(options) }
                let message = error?.message ?? ""
                #expect(message.contains(words) && message.contains(sandbox.path(name)) && !message.contains("\n"), "\(name): \(message)")
                #expect(sandbox.contents(name) == held, "\(name) is left as it was")
                #expect(Self.mode(sandbox.path(name)) == mode, "\(name)'s mode is left as it was")
            }
        }
        #expect(server.requests("/f").isEmpty, "refused before any request")
        #expect(sandbox.listing() == before, "nothing created or renamed")
        #expect(sandbox.records().isEmpty, "nothing recorded")
    }

    @Test func aFileWithAnotherNameOrWritableByEveryoneIsRefused() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: Self.body, etag: "\"f\""))
            sandbox.write(Self.held, to: "linked")
            #expect(link(sandbox.path("linked"), sandbox.path("elsewhere")) == 0)
            sandbox.write(Self.held, to: "open")
            #expect(chmod(sandbox.path("open"), 0o666) == 0)
            try await Self.expectRefused(
                [("linked", "has 1 other name (hard links)"), ("open", "can be written by every user")],
                server: server, engine: engine, sandbox: sandbox)
        }
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another user or group"))
    func anotherUsersFileOrOneAnotherGroupMayWriteIsRefused() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/f", Resource(body: Self.body, etag: "\"f\""))
            sandbox.write(Self.held, to: "theirs")
            #expect(chown(sandbox.path("theirs"), 65534, 65534) == 0)
            sandbox.write(Self.held, to: "shared")
            #expect(chown(sandbox.path("shared"), geteuid(), 65534) == 0 && chmod(sandbox.path("shared"), 0o664) == 0)
            try await Self.expectRefused(
                [("theirs", "belongs to another user (uid 65534)"), ("shared", "group 65534")],
                server: server, engine: engine, sandbox: sandbox)
        }
    }

    /// The usual file given to `--continue` (curl's, under a umask of 002: group-writable by the user's own group) is
    /// continued; from the moment it is shown to be the server's it is private, and it is published with the
    /// umask's mode. Over one connection and several.
    @Test(arguments: [1, 4])
    func aFileOfThisUserAloneIsContinuedPrivatelyAndPublishedWithTheUmasksMode(segments: Int) async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: Self.body, etag: "\"f\"")
            resource.faults.throttleBytesPerSecond = 400_000
            server.serve("/f", resource)
            sandbox.write(Self.held, to: "mine")
            #expect(chmod(sandbox.path("mine"), 0o664) == 0)
            let partial = sandbox.path("mine.haul-part")
            let modes = ModeLog()
            let log = EventLog { event in
                if case .progress(let progress) = event, progress.bytes > Int64(Self.held.count) { modes.note(Self.mode(partial)) }
            }
            var options = try Self.continuing(server.url("/f"), sandbox.path("mine"))
            options.progressInterval = .milliseconds(10)
            options.segments = segments
            options.minSegmentSize = 16 * 1024
            let result = try await engine.download(options, events: log.append)
            #expect(sandbox.contents("mine") == Self.body)
            #expect(result.fetchedBytes < Int64(Self.body.count), "the bytes held were continued")
            #expect(!modes.seen.isEmpty && modes.seen.allSatisfy { $0 == 0o600 }, "\(modes.seen.map { String($0, radix: 8) })")
            #expect(Self.mode(sandbox.path("mine")) == DownloadFileMode.published)
        }
    }

    /// A download's own partial file is created 0600 and keeps that mode until it is renamed into place, over one
    /// connection and several; the finished file has 0666 less the umask, as curl and wget create files.
    @Test(arguments: [1, 4])
    func aPartialFileIsPrivateUntilPublished(segments: Int) async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: Self.body, etag: "\"p\"")
            resource.faults.throttleBytesPerSecond = 400_000
            server.serve("/p", resource)
            let modes = ModeLog()
            let partial = sandbox.path("p.bin.haul-part")
            let log = EventLog { event in
                if case .progress(let progress) = event, progress.bytes > 0 { modes.note(Self.mode(partial)) }
            }
            var options = try testOptions(server.url("/p"), .file(sandbox.path("p.bin")))
            options.progressInterval = .milliseconds(10)
            options.segments = segments
            options.minSegmentSize = 16 * 1024
            try await engine.download(options, events: log.append)
            #expect(sandbox.contents("p.bin") == Self.body)
            #expect(!modes.seen.isEmpty && modes.seen.allSatisfy { $0 == 0o600 }, "\(modes.seen.map { String($0, radix: 8) })")
            // The umask as /proc says it: setting it to read it would change it for the tests running alongside.
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
            if let mask = line.flatMap({ mode_t($0.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) }) {
                #expect(DownloadFileMode.published == 0o666 & ~mask)
            }
            #expect(Self.mode(sandbox.path("p.bin")) == DownloadFileMode.published)
        }
    }

    /// Interrupts a download of `/NAME` into `name` once 100,000 bytes are written (its response stalls there): its
    /// partial file and record stay, as after Ctrl-C. The resource is then served whole.
    static func interrupted(_ name: String, server: TestServer, engine: TransferEngine, sandbox: Sandbox) async throws {
        var stalling = Resource(body: body, etag: "\"r\"")
        stalling.faults.stallAfterBytes = 100_000
        server.serve("/" + name, stalling)
        let options = try testOptions(server.url("/" + name), .file(sandbox.path(name)))
        let running = Task { try await engine.download(options) }
        let partial = sandbox.path(name + ".haul-part")
        func written() -> Int {
            var info = stat()
            return lstat(partial, &info) == 0 ? Int(info.st_size) : 0
        }
        // Bounded: the 100,000 bytes arrive at once from a local server.
        for _ in 0..<2_000 where written() < 100_000 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(written() >= 100_000)
        running.cancel()
        await expectHaulError(.interrupted) { _ = try await running.value }
        server.serve("/" + name, Resource(body: body, etag: "\"r\""))
        #expect((sandbox.contents(name + ".haul-part")?.count ?? 0) >= 100_000)
    }

    /// An earlier run's partial file that others could have written (an older Haul's, made 0666 under a umask of
    /// 000), or that has another name, is not continued: the download starts it afresh, and the other name keeps its
    /// bytes. One of the user's own group (0664 under 002) is continued, and made private.
    @Test func anEarlierPartialOthersCouldChangeIsStartedAfresh() async throws {
        try await withHarness { server, engine, sandbox in
            for (name, change) in [("open", 0), ("linked", 1), ("usual", 2)] {
                try await Self.interrupted(name, server: server, engine: engine, sandbox: sandbox)
                let partial = sandbox.path(name + ".haul-part")
                let before = sandbox.contents(name + ".haul-part")
                switch change {
                case 0: #expect(chmod(partial, 0o666) == 0)
                case 1: #expect(link(partial, sandbox.path(name + ".kept")) == 0)
                default: #expect(chmod(partial, 0o664) == 0)
                }
                let modes = ModeLog()
                let log = EventLog { event in
                    if case .progress = event { modes.note(Self.mode(partial)) }
                }
                var options = try testOptions(server.url("/" + name), .file(sandbox.path(name)))
                options.progressInterval = .milliseconds(1)
                let result = try await engine.download(options, events: log.append)
                #expect(sandbox.contents(name) == Self.body, "\(name)")
                #expect((result.fetchedBytes == Int64(Self.body.count)) == (change != 2), "\(name): fetched \(result.fetchedBytes)")
                #expect(!modes.seen.isEmpty && modes.seen.allSatisfy { $0 == 0o600 }, "\(name): \(modes.seen.map { String($0, radix: 8) })")
                if change == 1 { #expect(sandbox.contents(name + ".kept") == before, "the other name keeps its bytes") }
            }
        }
    }
}

/// The modes seen of a file, from any thread.
final class ModeLog: @unchecked Sendable {
    private let lock = NSLock()
    private var modes: [mode_t] = []

    func note(_ mode: mode_t?) {
        guard let mode else { return }
        lock.withLock { modes.append(mode) }
    }

    var seen: [mode_t] { lock.withLock { modes } }
}
