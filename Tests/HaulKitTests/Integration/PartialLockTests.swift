import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// A partial file a download writes is locked (`flock`) while it is open: a download of another HAUL_HOME (whose
/// destination locks are elsewhere) that meets it beside the same destination says it is busy and leaves it, rather
/// than removing it as a stale partial file.
@Suite struct PartialLockTests {
    static let body = TestData.bytes(300_000, seed: 7_401)

    /// Opens `path` and holds its lock as a download of another home does; closed by ``release()``.
    final class HeldPartial: @unchecked Sendable {
        private let lock = NSLock()
        private var fd: Int32 = -1

        func hold(_ path: String) {
            lock.withLock {
                fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                #expect(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
            }
        }

        func release() {
            lock.withLock {
                if fd >= 0 { close(fd) }
                fd = -1
            }
        }
    }

    @Test func aPartialFileAnotherDownloadWritesIsLeftAndTheDownloadIsBusy() async throws {
        try await withHarness { server, engine, sandbox in
            server.serve("/g", Resource(body: Self.body, etag: "\"g\""))
            let theirs = TestData.bytes(120_000, seed: 7_402)
            sandbox.write(theirs, to: "g.haul-part")
            let other = HeldPartial()
            other.hold(sandbox.path("g.haul-part"))
            for overwrite in [false, true] {
                var options = try testOptions(server.url("/g"), .file(sandbox.path("g")))
                options.overwrite = overwrite
                let error = await expectHaulError(.busy) { _ = try await engine.download(options) }
                #expect(error?.reason == .busy)
                #expect(error?.message.contains("already") == true && error?.message.contains(sandbox.path("g")) == true, "\(error?.message ?? "")")
            }
            #expect(sandbox.contents("g.haul-part") == theirs, "the other download's bytes are untouched")
            #expect(server.requests("/g").isEmpty, "busy before any request")
            #expect(sandbox.records().isEmpty, "nothing recorded")
            // Once nobody writes it, it is a partial file no record of this download knows: refused, left as it is.
            other.release()
            let unknown = await expectHaulError(.usage) { _ = try await engine.download(try testOptions(server.url("/g"), .file(sandbox.path("g")))) }
            #expect(unknown?.reason == .unknownPartialFile(partialPath: sandbox.path("g.haul-part")))
            #expect(sandbox.contents("g.haul-part") == theirs)
            // Moved away by its owner, the name is free.
            try FileManager.default.removeItem(atPath: sandbox.path("g.haul-part"))
            try await engine.download(try testOptions(server.url("/g"), .file(sandbox.path("g"))))
            #expect(sandbox.contents("g") == Self.body)
            #expect(sandbox.listing() == ["g"])
        }
    }

    /// The other download starts after this one looked (while its request is out): the partial file it creates is
    /// found when this one creates its own, and left.
    @Test func aPartialFileAnotherDownloadCreatesMeanwhileIsLeftToo() async throws {
        try await withHarness { server, engine, sandbox in
            let other = HeldPartial(), partial = sandbox.path("h.haul-part")
            let body = Self.body
            server.route("/h") { _ in
                other.hold(partial)
                return ResponsePlan(status: 200, headers: [("ETag", "\"h\"")], body: body)
            }
            let error = await expectHaulError(.busy) {
                _ = try await engine.download(try testOptions(server.url("/h"), .file(sandbox.path("h"))))
            }
            #expect(error?.message.contains("already") == true, "\(error?.message ?? "")")
            #expect(sandbox.listing() == ["h.haul-part"] && sandbox.contents("h.haul-part") == [], "its file is left as it is")
            #expect(sandbox.records().isEmpty, "no record of a download that holds nothing")
            other.release()
        }
    }
}
