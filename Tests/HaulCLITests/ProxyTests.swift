import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real forward proxy (tinyproxy from Debian) started on a free loopback port for each test.
final class Tinyproxy: @unchecked Sendable {
    static let binary = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var enabled: Bool { binary != nil || ExternalTools.inCI }

    let port: Int
    let folder: String
    private let process = ChildProcess()

    /// `connectPorts`: as Debian's stock configuration (`ConnectPort 443`, `ConnectPort 563`) plus these; `nil`
    /// allows CONNECT to any port (tinyproxy's behaviour without ConnectPort lines).
    init(basicAuth: (String, String)? = nil, connectPorts: [Int]? = nil) throws {
        guard let binary = Self.binary else { throw HarnessError("tinyproxy is not installed: apt-get install tinyproxy") }
        port = try freeLoopbackPort()
        folder = NSTemporaryDirectory() + "haul-tinyproxy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var config = """
            Port \(port)
            Listen 127.0.0.1
            Timeout 30
            Allow 127.0.0.1
            LogLevel Info
            LogFile "\(folder)/tinyproxy.log"
            MaxClients 20
            DisableViaHeader Yes

            """
        if geteuid() == 0 { config += "User root\nGroup root\n" }
        if let (user, password) = basicAuth { config += "BasicAuth \(user) \(password)\n" }
        if let connectPorts { config += ([443, 563] + connectPorts).map { "ConnectPort \($0)\n" }.joined() }
        try config.write(toFile: folder + "/tinyproxy.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-d", "-c", folder + "/tinyproxy.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<200 {
            if rawHTTPGet(port: port, path: "/") != nil { return }
            usleep(20_000)
        }
        stop()
        throw HarnessError("tinyproxy did not start on port \(port)")
    }

    var log: String { (try? String(contentsOfFile: folder + "/tinyproxy.log", encoding: .utf8)) ?? "" }

    func stop() {
        // SIGKILL: a child of the test process inherits a mask that blocks SIGTERM.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

@Suite(.enabled(if: Tinyproxy.enabled, "needs tinyproxy (apt-get install tinyproxy; scripts/test installs it)"))
struct ProxyTests {
    @Test func downloadsGoThroughTheProxyGivenByFlagOrEnvironment() async throws {
        let proxy = try Tinyproxy()
        defer { proxy.stop() }
        try await withTestServer { server in
            let body = TestData.bytes(300_000, seed: 160)
            server.serve("/f.bin", Resource(body: body, etag: "\"p\""))
            try await Sandbox.with { box in
                let viaFlag = try await box.run(["get", server.url("/f.bin"), "-o", "a.bin", "--proxy", "http://127.0.0.1:\(proxy.port)"])
                #expect(viaFlag.exitCode == 0, "\(viaFlag.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: body) == nil)
                let served = server.requests("/f.bin").count
                #expect(served >= 1)
                #expect(proxy.log.contains("127.0.0.1:\(server.port)"), "the proxy saw nothing: \(proxy.log)")
                let logged = proxy.log.components(separatedBy: "127.0.0.1:\(server.port)").count
                let viaEnvironment = try await box.start(
                    ["-c", "http_proxy=http://127.0.0.1:\(proxy.port) exec \"$0\" \"$@\"", try HaulBinary.path(), "get", server.url("/f.bin"), "-o", "b.bin"],
                    binary: "/bin/sh").wait()
                #expect(viaEnvironment.exitCode == 0, "\(viaEnvironment.stderr)")
                #expect(contentMismatch(box.path("b.bin"), expected: body) == nil)
                #expect(proxy.log.components(separatedBy: "127.0.0.1:\(server.port)").count > logged, "http_proxy was not used")
            }
        }
    }

    @Test func anUnreachableProxyIsAnErrorNeverADirectConnection() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(1000, seed: 161), etag: "\"d\""))
            let refusing = try RefusingPort()
            defer { refusing.close() }
            let dead = refusing.port
            try await Sandbox.with { box in
                let result = try await box.run(["get", server.url("/f.bin"), "-o", "a.bin", "--proxy", "127.0.0.1:\(dead)"])
                #expect(result.exitCode == 3, "\(result.stderr)")
                #expect(result.stderr.contains("proxy http://127.0.0.1:\(dead)"), "\(result.stderr)")
                #expect(server.requests("/f.bin").isEmpty, "Haul connected directly around the proxy")
                // no_proxy lets the same host through directly.
                let excepted = try await box.run(["get", server.url("/f.bin"), "-o", "b.bin", "--proxy", "127.0.0.1:\(dead)", "--noproxy", "127.0.0.1"])
                #expect(excepted.exitCode == 0, "\(excepted.stderr)")
            }
        }
    }

    /// A proxy that takes the connection and never answers a plain `http://` request (sent to it in absolute form):
    /// the error names the proxy, not the server it was asked for, and nothing goes around it.
    @Test func aSilentProxyIsNamedAsTheOneThatDidNotAnswer() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(1000, seed: 162), etag: "\"d\""))
            let silent = try RefusingPort()
            defer { silent.close() }
            try silent.listenSilently()
            try await Sandbox.with { box in
                let result = try await box.run(
                    ["get", server.url("/f.bin"), "-o", "a.bin", "--proxy", "127.0.0.1:\(silent.port)", "-T", "1", "--retries", "0"])
                #expect(result.exitCode == 3, "\(result.stderr)")
                #expect(result.stderr.contains("the proxy http://127.0.0.1:\(silent.port) did not answer in time"), "\(result.stderr)")
                #expect(server.requests("/f.bin").isEmpty, "Haul connected directly around the proxy")
            }
        }
    }

    @Test func proxyAuthenticationFromTheProxyURLAndNeverPrinted() async throws {
        let proxy = try Tinyproxy(basicAuth: ("pu", "ppass"))
        defer { proxy.stop() }
        try await withTestServer { server in
            let body = TestData.bytes(100_000, seed: 162)
            server.serve("/f.bin", Resource(body: body, etag: "\"a\""))
            try await Sandbox.with { box in
                let refused = try await box.run(["get", server.url("/f.bin"), "-o", "a.bin", "--proxy", "http://127.0.0.1:\(proxy.port)", "--retries", "0"])
                #expect(refused.exitCode == 3, "\(refused.stderr)")
                let accepted = try await box.run(["get", server.url("/f.bin"), "-o", "a.bin", "--proxy", "http://pu:ppass@127.0.0.1:\(proxy.port)"])
                #expect(accepted.exitCode == 0, "\(accepted.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: body) == nil)
                #expect(!refused.stderr.contains("ppass") && !accepted.stderr.contains("ppass"))
            }
        }
    }

    @Test func haulAddCarriesItsProxyToTheDaemon() async throws {
        let proxy = try Tinyproxy()
        defer { proxy.stop() }
        try await withTestServer { server in
            let body = TestData.bytes(200_000, seed: 163)
            server.serve("/d.bin", Resource(body: body, etag: "\"d\""))
            try await Sandbox.with { box in
                // The daemon is started without any proxy variable; the task must still use the proxy that was in
                // the environment of the `haul add` that queued it.
                _ = try await startDaemon(box)
                let added = try await box.start(
                    ["-c", "http_proxy=http://127.0.0.1:\(proxy.port) exec \"$0\" \"$@\"", try HaulBinary.path(),
                     "add", server.url("/d.bin"), "-o", "d.bin", "--no-autostart"],
                    binary: "/bin/sh").wait()
                let id = try #require(added.stdoutLines.first, "add: \(added.stderr)")
                let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "wait: \(waited.stderr)")
                #expect(contentMismatch(box.path("d.bin"), expected: body) == nil)
                #expect(proxy.log.contains("127.0.0.1:\(server.port)"), "the daemon went around the proxy: \(proxy.log)")
            }
        }
    }
}

/// A SOCKS5 proxy that takes only a user name and password, given none: one line naming it, whose advice is in the
/// proxy's own form (`socks5://user:password@…`), not an `http://` example first. (DanteProxyTests meets a real one.)
@Suite struct SOCKS5LoginAdviceTests {
    @Test func aSOCKS5ProxyThatWantsALoginIsGivenOneInItsOwnForm() async throws {
        // Version 5, no acceptable method (0xFF): how such a proxy answers a greeting that offers no authentication.
        let proxy = try RawResponder(answer: [5, 0xFF], maxConnections: 4)
        defer { proxy.stop() }
        try await Sandbox.with { box in
            let socks = "socks5://127.0.0.1:\(proxy.port)"
            let result = try await box.run(["get", "http://127.0.0.1:9/f.bin", "-o", "f.bin", "--proxy", socks])
            #expect(result.exitCode == 3, "\(result.stderr)")
            // One line, no retry: the proxy's rule does not change by asking again.
            #expect(result.stderrLines == [
                "haul: error: the SOCKS5 proxy \(socks) requires a user name and password; give them in the proxy's URL: "
                    + "--proxy socks5://user:password@127.0.0.1:\(proxy.port) (or in the proxy variable)",
            ], "\(result.stderr)")
            #expect(!fileExists(box.path("f.bin")))
        }
    }
}
