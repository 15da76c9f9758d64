import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// HTTPS against a real nginx (``HTTPSNginx``) with a private CA made by `openssl` (``TestCertificates``):
/// trust options (`--cacert`, `--capath`, `SSL_CERT_FILE`, `SSL_CERT_DIR`, `-k`), certificate failures
/// (unknown issuer, expired, wrong host name) and how they are reported, client certificates, Basic
/// authentication over TLS, and segments over HTTPS + HTTP/2.
@Suite(.enabled(if: HTTPSNginx.enabled, "needs nginx and openssl (apt-get install nginx-light openssl; scripts/test installs them)"))
struct TLSTests {
    /// Runs `haul ARGS` in `box`, with `environment` added to the sandbox's (through `/usr/bin/env`).
    /// The generous timeout lets a failure that is retried (which it must not be) show as a failed
    /// expectation rather than as a killed process.
    func haul(
        _ box: Sandbox, _ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(90)
    ) async throws -> HaulResult {
        if environment.isEmpty { return try await box.run(arguments, timeout: timeout) }
        let assignments = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try await box.start(assignments + [try HaulBinary.path()] + arguments, binary: "/usr/bin/env").wait(timeout: timeout)
    }

    /// A certificate failure: exit 3 and exactly one line on stderr
    /// (`haul: TLS certificate of 127.0.0.1:PORT …: <cause>`) naming the host and `cause` (any case), and
    /// nothing of the TLS library's insides (source files, build paths, BoringSSL error stacks).
    func expectCertificateFailure(
        _ result: HaulResult, cause: String, destination: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(result.exitCode == 3, "exit \(result.exitCode); stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderrLines.count == 1, "one line on stderr: \(result.stderr)", sourceLocation: sourceLocation)
        let line = result.stderrLines.first ?? ""
        #expect(line.contains("127.0.0.1"), "the line names the host: \(line)", sourceLocation: sourceLocation)
        #expect(line.lowercased().contains(cause), "the line names the cause (\(cause)): \(line)", sourceLocation: sourceLocation)
        for inside in ["handshake.cc", ".build", "BoringSSL", "boringssl"] {
            #expect(!result.stderr.contains(inside), "no \(inside) in: \(result.stderr)", sourceLocation: sourceLocation)
        }
        #expect(!fileExists(destination), "nothing at the destination", sourceLocation: sourceLocation)
    }

    @Test func anUnknownIssuerIsExit3WithOneLineNamingHostAndCause() async throws {
        try await HTTPSNginx.with { nginx in
            try await Sandbox.with { box in
                let result = try await haul(box, ["get", nginx.url("/file.bin"), "-o", "a.bin"])
                expectCertificateFailure(result, cause: "unknown issuer", destination: box.path("a.bin"))
            }
        }
    }

    /// The server's own certificate given as --cacert (curl accepts it through OpenSSL's partial chains; BoringSSL
    /// does not): still refused, and the advice says which certificate to give instead of repeating --cacert.
    @Test func theServersOwnCertificateAsCacertSaysToGiveItsCA() async throws {
        try await HTTPSNginx.with { nginx in
            try await Sandbox.with { box in
                let result = try await haul(box, ["get", nginx.url("/file.bin"), "-o", "a.bin", "--cacert", nginx.certificates.serverCertificate])
                expectCertificateFailure(result, cause: "unknown issuer", destination: box.path("a.bin"))
                #expect(result.stderr.contains("the CA that signed it") && result.stderr.contains("own certificate there is not enough"), "\(result.stderr)")
            }
        }
    }

    @Test func theCAFromCacertOrSSLCertFileIsTrusted() async throws {
        try await HTTPSNginx.with { nginx in
            try await Sandbox.with { box in
                let flag = try await haul(box, ["get", nginx.url("/file.bin"), "-o", "a.bin", "--cacert", nginx.certificates.caCertificate])
                #expect(flag.exitCode == 0, "\(flag.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: nginx.file) == nil)

                let environment = try await haul(
                    box, ["get", nginx.url("/file.bin"), "-o", "b.bin"],
                    environment: ["SSL_CERT_FILE": nginx.certificates.caCertificate])
                #expect(environment.exitCode == 0, "\(environment.stderr)")
                #expect(contentMismatch(box.path("b.bin"), expected: nginx.file) == nil)
            }
        }
    }

    @Test func aHashedCADirectoryFromCapathOrSSLCertDirIsTrusted() async throws {
        try await HTTPSNginx.with { nginx in
            try await Sandbox.with { box in
                let flag = try await haul(box, ["get", nginx.url("/file.bin"), "-o", "a.bin", "--capath", nginx.certificates.caDirectory])
                #expect(flag.exitCode == 0, "\(flag.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: nginx.file) == nil)

                let environment = try await haul(
                    box, ["get", nginx.url("/file.bin"), "-o", "b.bin"],
                    environment: ["SSL_CERT_DIR": nginx.certificates.caDirectory])
                #expect(environment.exitCode == 0, "\(environment.stderr)")
                #expect(contentMismatch(box.path("b.bin"), expected: nginx.file) == nil)
            }
        }
    }

    @Test func anExpiredCertificateFailsAndSaysExpired() async throws {
        try await HTTPSNginx.with { nginx in
            try await Sandbox.with { box in
                let result = try await haul(
                    box, ["get", nginx.url("/file.bin", .expired), "-o", "a.bin", "--cacert", nginx.certificates.caCertificate])
                expectCertificateFailure(result, cause: "expired", destination: box.path("a.bin"))
            }
        }
    }

    @Test func aCertificateForAnotherNameFailsAndSaysHostName() async throws {
        try await HTTPSNginx.with { nginx in
            try await Sandbox.with { box in
                let result = try await haul(
                    box, ["get", nginx.url("/file.bin", .wrongName), "-o", "a.bin", "--cacert", nginx.certificates.caCertificate])
                expectCertificateFailure(result, cause: "host name", destination: box.path("a.bin"))
            }
        }
    }

    /// With the default retries, a certificate failure ends at once: no retry line, no `retrying` event.
    @Test func certificateFailuresAreNotRetried() async throws {
        try await HTTPSNginx.with { nginx in
            try await Sandbox.with { box in
                let plain = try await haul(box, ["get", nginx.url("/file.bin"), "-o", "a.bin"])
                #expect(plain.exitCode == 3, "\(plain.stderr)")
                #expect(!plain.stderr.lowercased().contains("retry"), "no retry: \(plain.stderr)")

                let json = try await haul(
                    box, ["get", nginx.url("/file.bin", .expired), "-o", "b.bin", "--cacert", nginx.certificates.caCertificate, "--json"])
                #expect(json.exitCode == 3, "\(json.stderr)")
                #expect(!json.stderr.lowercased().contains("retry"), "no retry: \(json.stderr)")
                let events = try json.jsonEvents()
                #expect(!events.contains { $0["type"] as? String == "retrying" }, "events: \(json.stdout)")
                let failed = events.filter { $0["type"] as? String == "failed" }
                #expect(failed.count == 1, "one failed event: \(json.stdout)")
                #expect((failed.first?["exitCode"] as? NSNumber)?.intValue == 3, "events: \(json.stdout)")
            }
        }
    }

    /// `-k`/`--insecure` accept the untrusted server, and say so once, even with `--quiet`.
    @Test func insecureAcceptsAnyCertificateWithOneWarning() async throws {
        try await HTTPSNginx.with { nginx in
            try await Sandbox.with { box in
                for (flag, name) in [("-k", "a.bin"), ("--insecure", "b.bin")] {
                    let result = try await haul(box, ["get", nginx.url("/file.bin"), "-o", name, flag, "--quiet"])
                    #expect(result.exitCode == 0, "\(flag): \(result.stderr)")
                    #expect(contentMismatch(box.path(name), expected: nginx.file) == nil, "\(flag)")
                    #expect(result.stderrLines.count == 1, "\(flag): one line on stderr: \(result.stderr)")
                    #expect(result.stderrLines.first?.lowercased().contains("insecure") == true, "\(flag): a warning: \(result.stderr)")
                }
            }
        }
    }

    /// One daemon, one server it does not trust: a task added with `-k` gets the file, and a task added after it
    /// without `-k` is refused, not carried over the connection the first one opened (each trust has its clients).
    @Test func aTaskWithoutInsecureIsRefusedAfterOneWithItOnTheSameServer() async throws {
        try await HTTPSNginx.with { nginx in
            try await Sandbox.with { box in
                let daemon = try await startDaemon(box)
                let trusting = try await box.run(["add", nginx.url("/file.bin"), "-o", "a.bin", "-k", "--no-autostart"])
                let a = try #require(trusting.stdoutLines.first, "\(trusting)")
                let first = try await box.run(["wait", a, "--no-autostart"])
                #expect(first.exitCode == 0, "\(first)")
                #expect(contentMismatch(box.path("a.bin"), expected: nginx.file) == nil)
                let verifying = try await box.run(["add", nginx.url("/file.bin"), "-o", "b.bin", "--no-autostart"])
                let b = try #require(verifying.stdoutLines.first, "\(verifying)")
                let second = try await box.run(["wait", b, "--no-autostart"])
                #expect(second.exitCode != 0, "\(second)")
                #expect(!fileExists(box.path("b.bin")), "nothing at the destination")
                let shown = try await box.run(["ls", "--json", "--no-autostart"])
                #expect(shown.stdout.lowercased().contains("unknown issuer") || shown.stdout.lowercased().contains("certificate"), "\(shown.stdout)")
                daemon.signal(SIGTERM)
                try await daemon.wait(timeout: .seconds(10))
            }
        }
    }

    @Test func aClientCertificateIsPresentedWhenTheServerRequiresOne() async throws {
        try await HTTPSNginx.with { nginx in
            let certificates = nginx.certificates
            try await Sandbox.with { box in
                let with = try await haul(box, [
                    "get", nginx.url("/file.bin", .clientCertificate), "-o", "a.bin", "--cacert", certificates.caCertificate,
                    "--cert", certificates.clientCertificate, "--key", certificates.clientKey,
                ])
                #expect(with.exitCode == 0, "\(with.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: nginx.file) == nil)

                // nginx answers 400 "No required SSL certificate was sent".
                let without = try await haul(
                    box, ["get", nginx.url("/file.bin", .clientCertificate), "-o", "b.bin", "--cacert", certificates.caCertificate])
                #expect(without.exitCode != 0, "\(without.stderr)")
                #expect(!fileExists(box.path("b.bin")))
            }
        }
    }

    @Test func basicAuthenticationOverTLSFromFlagURLAndNetrc() async throws {
        try await HTTPSNginx.with { nginx in
            let trust = ["--cacert", nginx.certificates.caCertificate]
            let (user, password) = (HTTPSNginx.user, HTTPSNginx.password)
            try await Sandbox.with { box in
                let flag = try await haul(box, ["get", nginx.url("/auth/file.bin"), "-o", "a.bin", "-u", "\(user):\(password)"] + trust)
                #expect(flag.exitCode == 0, "\(flag.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: nginx.file) == nil)

                let inURL = "https://\(user):\(password)@127.0.0.1:\(nginx.port(.valid))/auth/file.bin"
                let url = try await haul(box, ["get", inURL, "-o", "b.bin"] + trust)
                #expect(url.exitCode == 0, "\(url.stderr)")
                #expect(contentMismatch(box.path("b.bin"), expected: nginx.file) == nil)

                let wrongPassword = "not-\(password)-9"
                let wrong = try await haul(box, ["get", nginx.url("/auth/file.bin"), "-o", "c.bin", "-u", "\(user):\(wrongPassword)"] + trust)
                #expect(wrong.exitCode == 4, "\(wrong.stderr)")
                #expect(!wrong.stderr.contains(wrongPassword) && !wrong.stdout.contains(wrongPassword), "the password is never printed: \(wrong.stderr)")
                #expect(!fileExists(box.path("c.bin")))

                let netrc = box.root + "/netrc"
                try "machine 127.0.0.1 login \(user) password \(password)\n".write(toFile: netrc, atomically: true, encoding: .utf8)
                chmod(netrc, 0o600)
                let fromNetrc = try await haul(box, ["get", nginx.url("/auth/file.bin"), "-o", "d.bin", "--netrc-file", netrc] + trust)
                #expect(fromNetrc.exitCode == 0, "\(fromNetrc.stderr)")
                #expect(contentMismatch(box.path("d.bin"), expected: nginx.file) == nil)

                let granted = await nginx.loggedRequests(.valid, uri: "/auth/file.bin", atLeast: 3).filter { (200...299).contains($0.status) }
                #expect(granted.count >= 3 && granted.allSatisfy { !$0.authorization.isEmpty }, "log: \(nginx.accessLog())")
            }
        }
    }

    /// `/auth/moved` answers 302 to another origin (same host, another port) only once authenticated; the
    /// credentials (from `-u` or from the URL) are sent to the first origin and never to the second.
    @Test func aRedirectToAnotherOriginDoesNotCarryTheCredentials() async throws {
        try await HTTPSNginx.with { nginx in
            let trust = ["--cacert", nginx.certificates.caCertificate]
            let (user, password) = (HTTPSNginx.user, HTTPSNginx.password)
            try await Sandbox.with { box in
                let flag = try await haul(box, ["get", nginx.url("/auth/moved"), "-o", "a.bin", "-u", "\(user):\(password)"] + trust)
                #expect(flag.exitCode == 0, "\(flag.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: nginx.file) == nil)

                let inURL = "https://\(user):\(password)@127.0.0.1:\(nginx.port(.valid))/auth/moved"
                let url = try await haul(box, ["get", inURL, "-o", "b.bin"] + trust)
                #expect(url.exitCode == 0, "\(url.stderr)")
                #expect(contentMismatch(box.path("b.bin"), expected: nginx.file) == nil)

                let redirected = await nginx.loggedRequests(.valid, uri: "/auth/moved", atLeast: 2).filter { $0.status == 302 }
                #expect(redirected.count >= 2 && redirected.allSatisfy { !$0.authorization.isEmpty },
                        "the first origin got the credentials: \(nginx.accessLog())")
                let landed = await nginx.loggedRequests(.otherOrigin, uri: "/file.bin", atLeast: 2)
                #expect(landed.count >= 2, "the other origin served the file: \(nginx.accessLog())")
                #expect(landed.allSatisfy { $0.authorization.isEmpty }, "no Authorization at the other origin: \(landed)")
            }
        }
    }

    /// Segments over HTTPS each have a connection of their own (HTTP/1.1), so a server's per-connection limits
    /// apply to each, although the server offers HTTP/2.
    @Test func eightSegmentsOverHTTPSComeOnSeveralConnections() async throws {
        try await HTTPSNginx.with { nginx in
            let body = TestData.bytes(32 << 20, seed: 1202)
            try nginx.put("big.bin", body)
            try await Sandbox.with { box in
                let result = try await haul(
                    box, ["get", nginx.url("/big.bin"), "-o", "big.bin", "--segments", "8", "--quiet", "--cacert", nginx.certificates.caCertificate])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(box.path("big.bin"), expected: body) == nil)
                let partials = await nginx.loggedRequests(.valid, uri: "/big.bin", atLeast: 2).filter { $0.status == 206 }
                let connections = Set(partials.map(\.connection))
                #expect(connections.count >= 2, "range requests on ≥ 2 connections: \(partials)")
                #expect(partials.allSatisfy { $0.protocolVersion == "HTTP/1.1" }, "segments as streams of one HTTP/2 connection: \(partials)")
            }
        }
    }

    /// One connection speaks HTTP/1.1 too, although the server offers HTTP/2: with AsyncHTTPClient it was 2.8×
    /// faster for one large file, with a quarter of the CPU (bench/https-segments.sh).
    @Test func oneSegmentOverHTTPSUsesHTTP11() async throws {
        try await HTTPSNginx.with { nginx in
            try await Sandbox.with { box in
                let result = try await haul(
                    box, ["get", nginx.url("/file.bin"), "-o", "a.bin", "--segments", "1", "--quiet", "--cacert", nginx.certificates.caCertificate])
                #expect(result.exitCode == 0, "\(result.stderr)")
                #expect(contentMismatch(box.path("a.bin"), expected: nginx.file) == nil)
                let requests = await nginx.loggedRequests(.valid, uri: "/file.bin")
                #expect(!requests.isEmpty && requests.allSatisfy { $0.protocolVersion == "HTTP/1.1" }, "log: \(requests)")
            }
        }
    }
}
