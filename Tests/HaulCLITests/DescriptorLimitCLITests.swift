import Foundation
import HaulTestSupport
import Testing

#if os(Linux)
/// `haul` raises its soft limit on open descriptors to the hard one (as Go's runtime does): a list over more hosts
/// than 1,024, each with a connection, does not run out of descriptors under a login shell's soft limit.
@Suite struct DescriptorLimitCLITests {
    /// The soft and hard "Max open files" of the process `pid`, from /proc.
    private func openFileLimits(_ pid: Int32) -> (soft: String, hard: String)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Max open files") }) else { return nil }
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 5 else { return nil }
        return (String(fields[3]), String(fields[4]))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit"), "needs prlimit (util-linux)"))
    func theSoftDescriptorLimitIsRaisedToTheHardOne() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(120_000, seed: 31)
            var resource = Resource(body: body, etag: "\"d\"")
            resource.faults.throttleBytesPerSecond = 60_000
            server.serve("/slow.bin", resource)
            try await Sandbox.with { box in
                let run = try box.start(
                    ["--nofile=256:4096", "--", try HaulBinary.path(), "get", server.url("/slow.bin"), "-o", "slow.bin"],
                    binary: "/usr/bin/prlimit")
                var seen: (soft: String, hard: String)?
                try await eventuallyAsync("haul runs with a soft limit of 4096 (seen: \(String(describing: seen)))", timeout: .seconds(30)) {
                    seen = openFileLimits(run.pid)
                    return seen?.soft == "4096" && seen?.hard == "4096"
                }
                let result = try await run.wait(timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(box.path("slow.bin"), expected: body) == nil)
            }
        }
    }
}
#endif
