import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An unfinished download whose destination holds a file it is not to replace: the rerun without `--overwrite` is
/// refused before any request (it used to fetch the rest, then refuse to publish), keeps its bytes, and a rerun with
/// `--overwrite` finishes in the file's place.
@Suite struct UnfinishedBesideExistingCLITests {
    static let size = 4 << 20

    /// How the file came to be at the destination: the first run was to replace it (`--overwrite`), or it came
    /// while the first run was stopped.
    enum Arrival: String, CaseIterable, Sendable {
        case replacedByTheFirstRun, cameWhileStopped
    }

    @Test(arguments: Arrival.allCases)
    func aRerunWithoutOverwriteIsRefusedBeforeAnyRequest(_ arrival: Arrival) async throws {
        try await withTestServer { server in
            let source = TestData.bytes(Self.size, seed: 303)
            var resource = Resource(body: source, etag: "\"u1\"")
            resource.faults.throttleBytesPerSecond = 1 << 20
            server.serve("/file.bin", resource)
            try await Sandbox.with { box in
                let destination = box.path("file.bin"), partial = destination + ".haul-part"
                let old = Array("someone's file\n".utf8)
                if arrival == .replacedByTheFirstRun { try Data(old).write(to: URL(fileURLWithPath: destination)) }
                let args = ["get", server.url("/file.bin"), "-o", destination, "--quiet"]
                let first = try box.start(args + (arrival == .replacedByTheFirstRun ? ["--overwrite"] : []))
                try await signalWhen(first, SIGINT, "the partial file holds ≥ 512 KiB") { (fileSize(partial) ?? 0) >= 512 << 10 }
                let paused = try await first.wait(timeout: .seconds(10))
                #expect(paused.exitCode == 130, "\(paused)")
                let held = try #require(fileSize(partial))
                if arrival == .cameWhileStopped { try Data(old).write(to: URL(fileURLWithPath: destination)) }
                server.serve("/file.bin", Resource(body: source, etag: "\"u1\""))

                let before = server.requests("/file.bin").count
                let refused = try await box.run(args)
                #expect(refused.exitCode == 2, "\(refused)")
                #expect(refused.stderr.contains("already exists, and this URL's unfinished download of it is kept in \(partial)"), "\(refused.stderr)")
                #expect(refused.stderr.contains("add --overwrite"), "\(refused.stderr)")
                #expect(!refused.stderr.contains("--continue"), "\(refused.stderr)")
                #expect(refused.stderr.split(separator: "\n").count == 1, "one line: \(refused.stderr)")
                #expect(server.requests("/file.bin").count == before, "no request before the refusal")
                #expect(contentMismatch(destination, expected: old) == nil, "the file is left as it was")
                #expect(fileSize(partial) == held, "the download's bytes are kept")

                let replaced = try await box.run(args + ["--overwrite"])
                #expect(replaced.exitCode == 0, "\(replaced)")
                #expect(contentMismatch(destination, expected: source) == nil)
                #expect(!fileExists(partial))
                let resume = try #require(server.requests("/file.bin").dropFirst(before).first)
                #expect(resume.header("Range") != nil, "the rerun with --overwrite continues the bytes held")
            }
        }
    }
}
