import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Proxies as offices and labs run them, started by the tests: squid with its stock `CONNECT` rule and tinyproxy
/// with Debian's `ConnectPort` lines (plain http in absolute form, https through a tunnel to an allowed port, a
/// refusal in one line that is not retried), and dante's SOCKS5 without and with a user name and password.
@Suite(.enabled(if: Squid.enabled, "needs squid (apt-get install squid; scripts/test installs it)"),
       .enabled(if: HTTPSNginx.enabled, "needs nginx-light and openssl (scripts/test installs them)"))
struct SquidProxyTests {
    @Test func plainHTTPReachesSquidInAbsoluteFormAndHTTPSThroughItsTunnel() async throws {
        try await HTTPSNginx.with(fileSize: 3 << 20) { nginx in
            let squid = try Squid(tlsPorts: [nginx.port(.valid)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                let plain = try await box.run(["get", nginx.url("/file.bin", .plain), "-o", "plain.bin", "--proxy", "127.0.0.1:\(squid.port)"])
                #expect(plain.exitCode == 0, "\(plain.stderr)")
                #expect(contentMismatch(box.path("plain.bin"), expected: nginx.file) == nil)
                // Over four connections, each its own tunnel.
                let tls = try await box.run([
                    "get", nginx.url("/file.bin"), "-o", "tls.bin", "--cacert", nginx.certificates.caCertificate,
                    "--proxy", "http://127.0.0.1:\(squid.port)", "--segments", "4", "--min-segment-size", "256K",
                ])
                #expect(tls.exitCode == 0, "\(tls.stderr)")
                #expect(contentMismatch(box.path("tls.bin"), expected: nginx.file) == nil)
                let logged = await squid.loggedRequests(atLeast: 2)
                let plainURL = nginx.url("/file.bin", .plain)
                #expect(logged.contains { $0.hasPrefix("GET \(plainURL) 20") }, "\(logged)")
                #expect(!logged.contains { $0.hasPrefix("CONNECT 127.0.0.1:\(nginx.port(.plain))") }, "plain http was tunnelled: \(logged)")
                #expect(logged.filter { $0.hasPrefix("CONNECT 127.0.0.1:\(nginx.port(.valid)) 200") }.count >= 2, "the segments' tunnels: \(logged)")
            }
        }
    }

    @Test func aTunnelTheStockRuleRefusesIsOneLineNamingTheProxyAndNeverRetried() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            let squid = try Squid()
            defer { squid.stop() }
            try await Sandbox.with { box in
                let refused = try await box.run([
                    "get", nginx.url("/file.bin"), "-o", "a.bin", "--cacert", nginx.certificates.caCertificate,
                    "--proxy", "127.0.0.1:\(squid.port)",
                ])
                #expect(refused.exitCode == 3, "\(refused.stderr)")
                let lines = refused.stderr.split(separator: "\n")
                #expect(lines.count == 1, "\(refused.stderr)")
                #expect(refused.stderr.contains("the proxy http://127.0.0.1:\(squid.port) refused to connect to 127.0.0.1:\(nginx.port(.valid)): 403"),
                        "\(refused.stderr)")
                #expect(!refused.stderr.contains("retry"), "\(refused.stderr)")
                // --proxytunnel asks for CONNECT for plain http too, which the same rule refuses.
                let tunnelled = try await box.run(["get", nginx.url("/file.bin", .plain), "-o", "b.bin", "--proxy", "127.0.0.1:\(squid.port)", "--proxytunnel"])
                #expect(tunnelled.exitCode == 3 && tunnelled.stderr.contains("403"), "\(tunnelled.stderr)")
                let logged = await squid.loggedRequests(atLeast: 2)
                #expect(logged.filter { $0.hasPrefix("CONNECT") }.count == 2, "each refusal is asked once: \(logged)")
                #expect(!fileExists(box.path("a.bin")) && !fileExists(box.path("b.bin")))
            }
        }
    }

    @Test func aServerCertificateIsCheckedAgainstTheServerNotTheProxy() async throws {
        // Through a tunnel the connection's peer is the proxy (127.0.0.1 here too): the certificate must still name
        // the server's address. wrong.example's does not.
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            let squid = try Squid(tlsPorts: [nginx.port(.wrongName), nginx.port(.valid), nginx.port(.expired)])
            defer { squid.stop() }
            try await Sandbox.with { box in
                let wrong = try await box.run([
                    "get", nginx.url("/file.bin", .wrongName), "-o", "a.bin", "--cacert", nginx.certificates.caCertificate,
                    "--proxy", "127.0.0.1:\(squid.port)",
                ])
                #expect(wrong.exitCode == 3, "\(wrong.stderr)")
                // The words of a direct connection's refusal: the names the certificate has, and the cause.
                #expect(wrong.stderr.contains("TLS certificate of 127.0.0.1:\(nginx.port(.wrongName)) is for wrong.example")
                        && wrong.stderr.contains("(wrong host name)"), "\(wrong.stderr)")
                #expect(!fileExists(box.path("a.bin")))
                let untrusted = try await box.run(["get", nginx.url("/file.bin"), "-o", "b.bin", "--proxy", "127.0.0.1:\(squid.port)", "--retries", "0"])
                #expect(untrusted.exitCode == 3, "the test CA is not trusted without --cacert: \(untrusted.stderr)")
                // The cause and the advice, as without the proxy, from the certificate the tunnel's handshake received.
                #expect(untrusted.stderrLines.count == 1, "\(untrusted.stderr)")
                #expect(untrusted.stderr.contains("TLS certificate of 127.0.0.1:\(nginx.port(.valid)) is signed by an unknown issuer")
                        && untrusted.stderr.contains("--cacert FILE"), "\(untrusted.stderr)")
                let expired = try await box.run([
                    "get", nginx.url("/file.bin", .expired), "-o", "c.bin", "--cacert", nginx.certificates.caCertificate,
                    "--proxy", "127.0.0.1:\(squid.port)",
                ])
                #expect(expired.exitCode == 3 && expired.stderr.contains("TLS certificate of 127.0.0.1:\(nginx.port(.expired)) has expired"),
                        "\(expired.stderr)")
            }
        }
    }
}

@Suite(.enabled(if: Tinyproxy.enabled, "needs tinyproxy (apt-get install tinyproxy; scripts/test installs it)"),
       .enabled(if: HTTPSNginx.enabled, "needs nginx-light and openssl (scripts/test installs them)"))
struct TinyproxyTests {
    @Test func debiansConnectPortsAllowHTTPAsAbsoluteRequestsAndHTTPSToAnAllowedPort() async throws {
        try await HTTPSNginx.with(fileSize: 2 << 20) { nginx in
            let proxy = try Tinyproxy(connectPorts: [nginx.port(.valid)])
            defer { proxy.stop() }
            try await Sandbox.with { box in
                let plain = try await box.start(
                    ["-c", "http_proxy=http://127.0.0.1:\(proxy.port) exec \"$0\" \"$@\"", try HaulBinary.path(), "get", nginx.url("/file.bin", .plain), "-o", "plain.bin"],
                    binary: "/bin/sh").wait()
                #expect(plain.exitCode == 0, "\(plain.stderr)")
                #expect(contentMismatch(box.path("plain.bin"), expected: nginx.file) == nil)
                #expect(proxy.log.contains("GET \(nginx.url("/file.bin", .plain))"), "not an absolute-form request: \(proxy.log)")
                let tls = try await box.start(
                    ["-c", "https_proxy=http://127.0.0.1:\(proxy.port) exec \"$0\" \"$@\"", try HaulBinary.path(), "get", nginx.url("/file.bin"), "-o", "tls.bin",
                     "--cacert", nginx.certificates.caCertificate],
                    binary: "/bin/sh").wait()
                #expect(tls.exitCode == 0, "\(tls.stderr)")
                #expect(contentMismatch(box.path("tls.bin"), expected: nginx.file) == nil)
                #expect(proxy.log.contains("CONNECT 127.0.0.1:\(nginx.port(.valid))"), "\(proxy.log)")
            }
        }
    }

    @Test func wrongProxyCredentialsAreOneLineNeverRetriedNeverPrinted() async throws {
        try await HTTPSNginx.with(fileSize: 100_000) { nginx in
            let proxy = try Tinyproxy(basicAuth: ("pu", "right-pass"), connectPorts: [nginx.port(.valid)])
            defer { proxy.stop() }
            try await Sandbox.with { box in
                for url in [nginx.url("/file.bin", .plain), nginx.url("/file.bin")] {
                    let wrong = try await box.run([
                        "get", url, "-o", "a.bin", "--cacert", nginx.certificates.caCertificate, "--proxy", "http://pu:wrong-pass@127.0.0.1:\(proxy.port)",
                    ])
                    if url.hasPrefix("https") {
                        // Before a tunnel opens, the answer is the proxy's: tinyproxy refuses a wrong password with 401.
                        #expect(wrong.exitCode == 3, "\(url): \(wrong.stderr)")
                        #expect(wrong.stderr.contains("the proxy http://127.0.0.1:\(proxy.port) answered 401"), "\(url): \(wrong.stderr)")
                        #expect(wrong.stderr.contains("wrong user or password"), "\(url): \(wrong.stderr)")
                    } else {
                        // A forwarded request's 401 could be the server's: it is named with the proxy that may have sent it.
                        #expect(wrong.exitCode == 4, "\(url): \(wrong.stderr)")
                        #expect(wrong.stderr.contains("401") && wrong.stderr.contains("through the proxy http://127.0.0.1:\(proxy.port), which may be refusing its own user and password"),
                                "\(url): \(wrong.stderr)")
                        // The advice is the proxy's login first; -u only for a server that asks for its own.
                        #expect(wrong.stderr.contains("check the user and password in --proxy"), "\(url): \(wrong.stderr)")
                        #expect(!wrong.stderr.contains("give them with -u"), "\(url): \(wrong.stderr)")
                    }
                    #expect(wrong.stderr.split(separator: "\n").count == 1 && !wrong.stderr.contains("retry"), "\(url): \(wrong.stderr)")
                    #expect(!wrong.stderr.contains("wrong-pass") && !wrong.stdout.contains("wrong-pass"))
                    if !url.hasPrefix("https") {
                        // Streamed to standard output: the same words.
                        let streamed = try await box.run(["get", url, "-o", "-", "--proxy", "http://pu:wrong-pass@127.0.0.1:\(proxy.port)"])
                        #expect(streamed.exitCode == 4 && streamed.stderr.contains("which may be refusing its own user and password"), "\(streamed.stderr)")
                        #expect(!streamed.stderr.contains("give them with -u") && !streamed.stderr.contains("wrong-pass"), "\(streamed.stderr)")
                    }
                    let none = try await box.run(["get", url, "-o", "a.bin", "--cacert", nginx.certificates.caCertificate, "--proxy", "127.0.0.1:\(proxy.port)"])
                    #expect(none.exitCode == 3 && none.stderr.contains("asks for a user and password"), "\(url): \(none.stderr)")
                    #expect(none.stderr.contains("--proxy http://user:password@127.0.0.1:\(proxy.port) "), "\(url): \(none.stderr)")
                }
                // Counted in nginx's log: no request got past the proxy.
                #expect(nginx.accessLog().filter { $0.uri == "/file.bin" }.isEmpty)
            }
        }
    }
}

@Suite(.enabled(if: Dante.enabled, "needs danted (apt-get install dante-server; scripts/test installs it)"),
       .enabled(if: HTTPSNginx.enabled, "needs nginx-light and openssl (scripts/test installs them)"))
struct DanteProxyTests {
    @Test func socks5WithoutAuthenticationCarriesHTTPAndHTTPS() async throws {
        try await HTTPSNginx.with(fileSize: 3 << 20) { nginx in
            let dante = try Dante(authenticated: false)
            defer { dante.stop() }
            try await Sandbox.with { box in
                for (index, scheme) in ["socks5", "socks5h"].enumerated() {
                    let plain = try await box.run([
                        "get", nginx.url("/file.bin", .plain), "-o", "plain\(index).bin", "--proxy", dante.url(scheme: scheme), "--segments", "4",
                        "--min-segment-size", "256K",
                    ])
                    #expect(plain.exitCode == 0, "\(scheme): \(plain.stderr)")
                    #expect(contentMismatch(box.path("plain\(index).bin"), expected: nginx.file) == nil)
                    let tls = try await box.start(
                        ["-c", "all_proxy=\(dante.url(scheme: scheme)) exec \"$0\" \"$@\"", try HaulBinary.path(), "get", nginx.url("/file.bin"),
                         "-o", "tls\(index).bin", "--cacert", nginx.certificates.caCertificate],
                        binary: "/bin/sh").wait()
                    #expect(tls.exitCode == 0, "\(scheme): \(tls.stderr)")
                    #expect(contentMismatch(box.path("tls\(index).bin"), expected: nginx.file) == nil)
                }
                #expect(nginx.accessLog().contains { $0.port == nginx.port(.valid) && $0.uri == "/file.bin" })
                #expect(nginx.accessLog().filter { $0.port == nginx.port(.plain) && !$0.range.isEmpty }.count >= 4, "segments over SOCKS")
            }
        }
    }

    @Test(.enabled(if: LocalUser.available, "needs root to create a local user for dante's username method"))
    func socks5UserAndPasswordAreCheckedAndARefusalIsOneLine() async throws {
        try await HTTPSNginx.with(fileSize: 2 << 20) { nginx in
          try await LocalUser.with { local in
            let user = (name: local.name, password: try local.setPassword())
            let dante = try Dante(authenticated: true)
            defer { dante.stop() }
            try await Sandbox.with { box in
                let url = nginx.url("/file.bin", .plain)
                let none = try await box.run(["get", url, "-o", "a.bin", "--proxy", dante.url()])
                #expect(none.exitCode == 3, "\(none.stderr)")
                #expect(none.stderr.contains("the SOCKS5 proxy socks5://127.0.0.1:\(dante.port) requires a user name and password"), "\(none.stderr)")
                // The advice in the proxy's own form, not an http:// one first.
                #expect(none.stderr.contains("--proxy socks5://user:password@127.0.0.1:\(dante.port) ") && !none.stderr.contains("http://user"),
                        "\(none.stderr)")
                let wrong = try await box.run(["get", url, "-o", "a.bin", "--proxy", dante.url(user: user.name, password: "not-" + user.password)])
                #expect(wrong.exitCode == 3, "\(wrong.stderr)")
                #expect(wrong.stderr.contains("wrong user name or password"), "\(wrong.stderr)")
                #expect(wrong.stderr.split(separator: "\n").count == 1 && !wrong.stderr.contains("retry"), "\(wrong.stderr)")
                #expect(!fileExists(box.path("a.bin")))
                let right = try await box.run(["get", url, "-o", "a.bin", "--proxy", dante.url(user: user.name, password: user.password)])
                #expect(right.exitCode == 0, "\(right.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: nginx.file) == nil)
                let tls = try await box.run([
                    "get", nginx.url("/file.bin"), "-o", "b.bin", "--cacert", nginx.certificates.caCertificate,
                    "--proxy", dante.url(scheme: "socks5h", user: user.name, password: user.password),
                ])
                #expect(tls.exitCode == 0, "\(tls.stderr)")
                #expect(contentMismatch(box.path("b.bin"), expected: nginx.file) == nil)
                // The daemon gets the proxy with its credentials from `haul add`, and never shows them.
                _ = try await startDaemon(box)
                let added = try await box.run(["add", url, "-o", "d.bin", "--no-autostart", "--proxy", dante.url(user: user.name, password: user.password)])
                let id = try #require(added.stdoutLines.first, "add: \(added.stderr)")
                let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                #expect(contentMismatch(box.path("d.bin"), expected: nginx.file) == nil)
                let listed = try await box.run(["ls", "--json", "--no-autostart"])
                for result in [none, wrong, right, tls, added, waited, listed] {
                    #expect(!result.stderr.contains(user.password) && !result.stdout.contains(user.password))
                }
            }
          }
        }
    }
}

@Suite struct NoProxyRangeTests {
    @Test func aCIDRRangeInNoProxyOrNoproxyGoesDirect() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(50_000, seed: 240)
            server.serve("/f.bin", Resource(body: body, etag: "\"n\""))
            let refusing = try RefusingPort()
            defer { refusing.close() }
            try await Sandbox.with { box in
                let flag = try await box.run(["get", server.url("/f.bin"), "-o", "a.bin", "--proxy", "127.0.0.1:\(refusing.port)", "--noproxy", "10.0.0.0/8,127.0.0.0/8"])
                #expect(flag.exitCode == 0, "\(flag.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: body) == nil)
                let variable = try await box.start(
                    ["-c", "http_proxy=http://127.0.0.1:\(refusing.port) no_proxy=127.0.0.0/8 exec \"$0\" \"$@\"", try HaulBinary.path(),
                     "get", server.url("/f.bin"), "-o", "b.bin"],
                    binary: "/bin/sh").wait()
                #expect(variable.exitCode == 0, "\(variable.stderr)")
                let outside = try await box.run(["get", server.url("/f.bin"), "-o", "c.bin", "--proxy", "127.0.0.1:\(refusing.port)", "--noproxy", "10.0.0.0/8"])
                #expect(outside.exitCode == 3 && outside.stderr.contains("proxy http://127.0.0.1:\(refusing.port)"), "\(outside.stderr)")
            }
        }
    }
}

@Suite(.enabled(if: Squid.enabled, "needs squid (apt-get install squid; scripts/test installs it)"),
       .enabled(if: ExternalTools.nginxTestsEnabled, "needs nginx (apt-get install nginx-light; scripts/test installs it)"))
struct ProxiedResumeTests {
    /// Interrupted while the body streams through squid, a download stops at once and the next run continues the
    /// bytes held with a range request through the same proxy, byte-exact.
    @Test func anInterruptedProxiedDownloadResumesThroughTheProxy() async throws {
        try await withNginx(slowRate: "400k") { nginx in
            let body = TestData.bytes(3 << 20, seed: 280)
            try nginx.put("slow/f.bin", body)
            let squid = try Squid()
            defer { squid.stop() }
            try await Sandbox.with { box in
                let args = ["get", nginx.url("/slow/f.bin"), "-o", "f.bin", "--proxy", "127.0.0.1:\(squid.port)", "--segments", "1", "--quiet"]
                let first = try box.start(args)
                try await signalWhen(first, SIGINT, "the partial file holds ≥ 256 KiB") { (fileSize(box.path("f.bin.haul-part")) ?? 0) >= 256 << 10 }
                let stopped = try await first.wait(timeout: .seconds(10))
                #expect(stopped.exitCode == 130, "\(stopped.stderr)")
                let second = try await box.run(args, timeout: .seconds(60))
                #expect(second.exitCode == 0, "\(second.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: body) == nil)
                #expect(nginx.accessLog().contains { $0.hasPrefix("GET /slow/f.bin 206") }, "\(nginx.accessLog())")
            }
        }
    }
}
