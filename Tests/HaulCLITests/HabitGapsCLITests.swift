import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// More of what curl, wget and aria2c users type, done as those tools do it (docs/compatibility.md): the redirect
/// limit, curl's rules for `-H 'Name:'` and `-H 'Name;'`, URLs without a scheme, wget's `-nc`, and a standard output
/// closed by the reader (`| head`).
@Suite struct HabitGapsCLITests {
    /// `--max-redirs N` (curl) and `--max-redirect N` (wget): N redirects are followed and no more are asked for;
    /// the one line said when the limit is hit names the option. Without it, Haul's 10.
    @Test func theRedirectLimitIsCurlsAndWgetsOption() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(20_000, seed: 260)
            server.serve("/end.bin", Resource(body: body, etag: "\"r\""))
            // /hop/0 → /hop/1 → … → /hop/11 → /end.bin: 12 redirects.
            for hop in 0..<12 {
                let next = hop == 11 ? "/end.bin" : "/hop/\(hop + 1)"
                server.route("/hop/\(hop)") { _ in ResponsePlan(status: 302, headers: [("Location", next)]) }
            }
            try await Sandbox.with { box in
                let limited = try await box.run(["get", server.url("/hop/9"), "-o", "a.bin", "--max-redirs", "2"])
                #expect(limited.exitCode == 4, "\(limited.stderr)")
                #expect(limited.stderrLines.count == 1 && limited.stderr.contains("--max-redirs"), "\(limited.stderr)")
                #expect(server.requests("/hop/11").count == 1 && server.requests("/end.bin").isEmpty, "a redirect past the limit was followed")
                #expect(!fileExists(box.path("a.bin")))

                let enough = try await box.run(["get", server.url("/hop/9"), "-o", "b.bin", "--max-redirect=3"])
                #expect(enough.exitCode == 0, "\(enough.stderr)")
                #expect(contentMismatch(box.path("b.bin"), expected: body) == nil)

                let none = try await box.run(["get", server.url("/hop/11"), "-o", "c.bin", "--max-redirs", "0"])
                #expect(none.exitCode == 4 && none.stderrLines.count == 1 && none.stderr.contains("--max-redirs"), "\(none.stderr)")

                let byDefault = try await box.run(["get", server.url("/hop/0"), "-o", "d.bin"])
                #expect(byDefault.exitCode == 4 && byDefault.stderr.contains("stopped after 10 redirects"), "\(byDefault.stderr)")
                let raised = try await box.run(["get", server.url("/hop/0"), "-o", "d.bin", "--max-redirs", "12"])
                #expect(raised.exitCode == 0, "\(raised.stderr)")
                #expect(contentMismatch(box.path("d.bin"), expected: body) == nil)

                let negative = try await box.run(["get", server.url("/hop/0"), "-o", "e.bin", "--max-redirs", "-1"])
                #expect(negative.exitCode == 2 && negative.stderrLines.count == 1 && negative.stderr.contains("--max-redirs"), "\(negative.stderr)")
            }
        }
    }
}
