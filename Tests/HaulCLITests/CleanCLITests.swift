import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `haul clean`: what finished downloads left in HAUL_HOME goes; what a running or interrupted one needs stays.
@Suite struct CleanCLITests {
    static let size = 4 << 20

    /// The names under HAUL_HOME (recursively), to see that a dry run changes nothing.
    func homeContents(_ box: Sandbox) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: box.home)
        var names: [String] = []
        while let name = enumerator?.nextObject() as? String { names.append(name) }
        return names.sorted()
    }

    /// The decoded record of the download to `path`, if any.
    func record(_ box: Sandbox, for path: String) -> [String: Any]? {
        box.records().first { $0["destinationPath"] as? String == path }
    }

    /// Starts `haul get URL -o name` and interrupts it (SIGINT) once part of the file is durably held.
    func interrupt(_ box: Sandbox, _ url: String, _ name: String) async throws {
        let run = try box.start(["get", url, "-o", name])
        let path = box.path(name)
        try await signalWhen(run, SIGINT, "\(name) holds recorded bytes") {
            ((record(box, for: path)?["offset"] as? NSNumber)?.intValue ?? 0) > 0
        }
        let result = try await run.wait()
        #expect(result.exitCode == 130, "\(result)")
    }

    @Test func removesWhatIsFinishedOrStaleAndKeepsWhatCanResume() async throws {
        try await withTestServer { server in
            for name in ["done", "paused", "gone", "live", "b1", "b2"] {
                var resource = Resource(body: TestData.bytes(Self.size, seed: 1501), etag: "\"\(name)\"")
                if ["paused", "gone", "live"].contains(name) { resource.faults.throttleBytesPerSecond = 256 << 10 }
                server.serve("/\(name).bin", resource)
            }
            try await Sandbox.with { box in
                #expect(try await box.run(["get", server.url("/done.bin"), "-o", "done.bin"]).exitCode == 0)
                #expect(try await box.run(["get", server.url("/b1.bin"), server.url("/b2.bin"), "--dir", "batch"]).exitCode == 0)
                try await interrupt(box, server.url("/paused.bin"), "paused.bin")
                try await interrupt(box, server.url("/gone.bin"), "gone.bin")
                unlink(box.path("gone.bin.haul-part"))
                // Left by processes that died: a record half-replaced, a lock of a download never begun.
                let transfers = box.home + "/transfers"
                try writeBytes(Array("{".utf8), to: transfers + "/" + String(repeating: "a", count: 64) + ".json.tmp")
                try writeBytes([], to: transfers + "/" + String(repeating: "b", count: 64) + ".lock")
                // A download running while haul clean runs.
                let live = try box.start(["get", server.url("/live.bin"), "-o", "live.bin"])
                try await eventually("the live download has its record") { record(box, for: box.path("live.bin")) != nil }

                let before = homeContents(box)
                let dry = try await box.run(["clean", "--dry-run"])
                #expect(dry.exitCode == 0, "\(dry)")
                #expect(homeContents(box) == before, "a dry run removes nothing")
                let would = dry.stdoutLines.dropLast()
                #expect(would.allSatisfy { $0.hasPrefix("would remove ") }, "\(dry.stdout)")

                let clean = try await box.run(["clean"])
                #expect(clean.exitCode == 0, "\(clean)")
                let removed = clean.stdoutLines.dropLast()
                #expect(removed.map { $0.replacingOccurrences(of: "removed ", with: "would remove ") } == Array(would), "\(clean.stdout)")
                let lines = clean.stdout
                #expect(lines.contains("removed the resume record of \(box.path("done.bin")) (finished)"), "\(lines)")
                #expect(lines.contains("removed the resume record of \(box.path("gone.bin")) (its partial file is gone)"), "\(lines)")
                #expect(lines.contains(".json.tmp") && lines.contains("the stale lock transfers/" + String(repeating: "b", count: 64) + ".lock"), "\(lines)")
                #expect(removed.filter { $0.contains("finished batch session sessions/get-") }.count == 1, "\(lines)")
                // The batch's records are in its session's store, which goes with the finished session.
                #expect(removed.filter { $0.contains("(finished)") }.count == 1, "done.bin's record: \(lines)")
                #expect(clean.stdoutLines.last?.hasPrefix("haul clean: removed ") == true, "\(lines)")
                #expect(clean.stdoutLines.last?.contains("kept 2 resume records") == true, "the paused and the live download: \(lines)")

                // What an interrupted or running download owns is all still there.
                #expect(record(box, for: box.path("paused.bin")) != nil && fileExists(box.path("paused.bin.haul-part")))
                #expect(record(box, for: box.path("live.bin")) != nil)
                #expect(record(box, for: box.path("done.bin")) == nil && record(box, for: box.path("gone.bin")) == nil)
                #expect(!FileManager.default.fileExists(atPath: box.home + "/sessions") || DaemonHarness.sessionFolders(box).isEmpty)
                #expect(contentMismatch(box.path("done.bin"), expected: TestData.bytes(Self.size, seed: 1501)) == nil, "finished files stay")

                // The live download goes on to the end; the interrupted one resumes where it stopped.
                live.signal(SIGINT)
                #expect(try await live.wait().exitCode == 130)
                let offset = try #require((record(box, for: box.path("paused.bin"))?["offset"] as? NSNumber)?.intValue)
                server.serve("/paused.bin", Resource(body: TestData.bytes(Self.size, seed: 1501), etag: "\"paused\""))
                let resumed = try await box.run(["get", server.url("/paused.bin"), "-o", "paused.bin"])
                #expect(resumed.exitCode == 0, "\(resumed)")
                #expect(server.requests("/paused.bin").last?.header("Range") == "bytes=\(resumeStart(Int(offset)))-")
                #expect(contentMismatch(box.path("paused.bin"), expected: TestData.bytes(Self.size, seed: 1501)) == nil)

                let again = try await box.run(["clean"])
                #expect(again.exitCode == 0 && again.stdoutLines.last?.hasPrefix("haul clean: removed") == true, "\(again)")
            }
        }
    }

    @Test func anEmptyHomeHasNothingToRemove() async throws {
        try await Sandbox.with { box in
            let result = try await box.run(["clean"])
            #expect(result.exitCode == 0, "\(result)")
            #expect(result.stdoutLines == ["haul clean: nothing to remove"], "\(result.stdout)")
        }
    }
}
