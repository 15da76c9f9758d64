import Foundation
import HaulTestSupport
import Testing
@testable import haul

/// What another user's `ps` sees of a running `haul` (its `/proc/PID/cmdline`): no password, token, signature,
/// credential header or cookie, whatever the option's spelling; everything else as typed.
@Suite struct ArgumentSecretsTests {
    static func masked(_ argument: String, after option: String) -> String {
        String(decoding: ArgumentSecrets.masked(Array(argument.utf8), after: option), as: UTF8.self)
    }

    @Test(arguments: [
        ("-u", "alice:SEKRET", "alice:******"),
        ("", "--user=alice:SEKRET", "--user=alice:******"),
        ("-H", "Authorization: Bearer SEKRET", "Authorization:" + String(repeating: "*", count: 14)),
        ("-H", "X-Plain: visible", "X-Plain: visible"),
        ("", "--header=Cookie: sid=SEKRET", "--header=Cookie:***********"),
        ("-b", "sid=SEKRET; b=SEKRET", "sid=" + String(repeating: "*", count: 16)),
        ("-b", "cookies.txt", "cookies.txt"),
        ("", "http://bob:SEKRET@host/f?X-Amz-Signature=SEKRET&part=1", "http://**********@host/f?X-Amz-Signature=******&part=1"),
        ("--proxy", "http://p:SEKRET@proxy:3128", "http://********@proxy:3128"),
        ("-o", "file.bin", "file.bin"),
        ("-v", "bob:SEKRET@host/f?token=SEKRET", "**********@host/f?token=******"),
        ("--proxy", "p:SEKRET@proxy:3128", "********@proxy:3128"),
        ("-o", "me@host.bin", "me@host.bin"),
        ("", "https://example.com/@scope/pkg.tgz", "https://example.com/@scope/pkg.tgz"),
        // Values attached to their letter, alone or after other letters of a cluster.
        ("", "-ubob:SEKRET", "-ubob:******"),
        ("", "-qubob:SEKRET", "-qubob:******"),
        ("", "-bsid=SEKRET", "-bsid=******"),
        ("", "-HAuthorization: Bearer SEKRET", "-HAuthorization:" + String(repeating: "*", count: 14)),
        ("", "-HX-Plain: visible", "-HX-Plain: visible"),
        ("", "-ofile.bin", "-ofile.bin"),
        ("", "-x16", "-x16"),
    ])
    func secretsAreMaskedInPlace(_ option: String, _ argument: String, _ expected: String) {
        let shown = Self.masked(argument, after: option)
        #expect(shown == expected)
        #expect(shown.utf8.count == argument.utf8.count)
    }

    /// A refusal of the command line that quotes an argument (ArgumentParser's "unknown option '-qubob:pw'") masks
    /// its secrets as `ps` would show them.
    @Test func aRefusalQuotingAnArgumentShowsNoSecret() async throws {
        try await Sandbox.with { box in
            for arguments in [["get", "-qubob:SEKRET", "http://127.0.0.1:9/f"], ["get", "http://127.0.0.1:9/f", "--nope", "-ubob:SEKRET", "-u"]] {
                let result = try await box.run(arguments)
                #expect(result.exitCode == 2 && !result.stderr.contains("SEKRET"), "\(arguments): \(result.stderr)")
            }
        }
    }

    #if os(Linux)
    /// A real `haul get` that waits on a server: its command line, as `ps` reads it, holds none of the secrets.
    @Test func aRunningHaulShowsNoSecretInItsCommandLine() async throws {
        try await withTestServer { server in
            var resource = Resource(body: TestData.bytes(2 << 20, seed: 253), etag: "\"a\"")
            resource.faults.throttleBytesPerSecond = 128 << 10
            server.serve("/a.bin", resource)
            try await Sandbox.with { box in
                let url = server.url("/a.bin").replacingOccurrences(of: "http://", with: "http://u:SEKRETURL@") + "?sig=SEKRETSIG"
                let run = try box.start(["get", url, "-o", "a.bin", "-H", "Authorization: Bearer SEKRETHEADER", "-b", "sid=SEKRETCOOKIE"])
                defer { run.signal(SIGKILL) }
                try await eventually("the download runs", timeout: .seconds(30)) { !server.requests("/a.bin").isEmpty }
                let cmdline = try String(decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(run.pid)/cmdline")), as: UTF8.self)
                #expect(cmdline.contains("a.bin") && cmdline.contains("Authorization:"), "\(cmdline)")
                for secret in ["SEKRETURL", "SEKRETSIG", "SEKRETHEADER", "SEKRETCOOKIE"] {
                    #expect(!cmdline.contains(secret), "\(secret) in \(cmdline)")
                }
                // And the request still carried them.
                let request = try #require(server.requests("/a.bin").first)
                #expect(request.header("Authorization") == "Bearer SEKRETHEADER")
                #expect(request.header("Cookie")?.contains("SEKRETCOOKIE") == true)
            }
        }
    }
    #endif
}
