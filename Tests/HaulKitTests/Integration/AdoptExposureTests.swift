import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// A file Haul continues and publishes is one nobody else can change: Haul's own partial file is private (0600)
/// until it is published with the umask's mode.
@Suite struct AdoptExposureTests {
    static let body = TestData.bytes(400_000, seed: 7_301)

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
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
