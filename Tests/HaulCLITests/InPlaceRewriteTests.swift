import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// nginx, apache2, lighttpd and caddy make their ETags from a file's size and modification time (lighttpd also
/// from its inode). A file rewritten in place with both kept (`rsync --inplace -t`, `touch -r`, a regeneration
/// within one second) keeps its ETag and Last-Modified: nothing but the bytes tells the versions apart. Killed
/// part-way, rewritten so, and run again, `haul get` must give exactly the new version, over one connection and
/// several: never a mix.
@Suite(.serialized) struct InPlaceRewriteTests {
    static let date = Date(timeIntervalSince1970: 1_700_000_000)

    @Test(.enabled(if: ExternalTools.nginx != nil || ExternalTools.inCI, "needs nginx (apt-get install nginx-light)"))
    func nginx() async throws {
        try await withNginx { try await Self.rewriteInPlace($0) }
    }

    @Test(.enabled(if: RealServer.apache.testsEnabled, "needs apache2 (apt-get install apache2)"))
    func apache() async throws {
        try await withApache { try await Self.rewriteInPlace($0) }
    }

    @Test(.enabled(if: RealServer.lighttpd.testsEnabled, "needs lighttpd (apt-get install lighttpd)"))
    func lighttpd() async throws {
        try await withLighttpd { try await Self.rewriteInPlace($0) }
    }

    @Test(.enabled(if: RealServerTools.caddy != nil || ExternalTools.inCI, "needs caddy (apt-get install caddy)"))
    func caddy() async throws {
        try await withCaddy { try await Self.rewriteInPlace($0) }
    }

    /// Writes `bytes` over the served file in place (same inode, as `rsync --inplace`), then gives it `date` as its
    /// modification time again (as `touch -r`).
    static func rewrite(_ server: ExternalServer, _ name: String, _ bytes: [UInt8]) throws {
        let path = server.documentRoot + "/" + name
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(bytes))
        try handle.close()
        try FileManager.default.setAttributes([.modificationDate: date, .posixPermissions: 0o644], ofItemAtPath: path)
    }

    static func rewriteInPlace(_ server: ExternalServer) async throws {
        for segmented in [false, true] {
            let name = segmented ? "seg.bin" : "one.bin"
            let size = segmented ? 4 << 20 : 2 << 20
            let old = TestData.bytes(size, seed: segmented ? 901 : 902)
            let new = TestData.bytes(size, seed: segmented ? 903 : 904)
            try server.put(name, old, modified: date)
            let before = try #require(server.request("/" + name, headers: ["Range: bytes=0-15"]), "\(server.name) answers")
            try await Sandbox.with { box in
                let destination = box.path(name), partial = destination + ".haul-part"
                let options = segmented
                    ? ["--segments", "4", "--min-segment-size", "256K", "--limit-rate", "1M"]
                    : ["--segments", "1", "--limit-rate", "400K"]
                let args = ["get", server.url("/" + name), "-o", destination, "--json"] + options
                let run = try box.start(args)
                let threshold = segmented ? 512 << 10 : 256 << 10
                try await signalWhen(run, SIGKILL, "a checkpoint records ≥ \(threshold) bytes", timeout: .seconds(30)) {
                    (box.recordedOffset() ?? 0) >= threshold && (fileSize(partial) ?? 0) >= threshold
                }
                _ = try await run.wait(timeout: .seconds(10))
                try rewrite(server, name, new)
                let after = try #require(server.request("/" + name, headers: ["Range: bytes=0-15"]))
                #expect(after.body == Array(new[0..<16]), "\(server.name) serves the new bytes")
                #expect(after.headers["etag"] != nil && after.headers["etag"] == before.headers["etag"],
                        "the premise: \(server.name)'s ETag survives the rewrite: \(before.headers) → \(after.headers)")
                #expect(after.headers["last-modified"] == before.headers["last-modified"])

                let result = try await box.run(args, timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(server.name), segmented \(segmented): \(result.stderr)")
                let mismatch = contentMismatch(destination, expected: new)
                #expect(mismatch == nil, "\(server.name), segmented \(segmented): never a mix of both versions; \(mismatch ?? "")")
                #expect(box.workContents() == [name], "\(box.workContents())")
            }
        }
    }
}
