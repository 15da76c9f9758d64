#if os(Linux)
import Foundation
import Testing

/// The dashboard over HTTPS (`--web-cert`, `--web-key`), on 127.0.0.1: the certificate is served, the cookie gets
/// `Secure`, and the dashboard's own origin is `https://…`. Talks TLS through `openssl s_client`.
@Suite(.enabled(if: TestCertificates.enabled, "needs openssl (apt-get install openssl; scripts/test installs it)"))
struct WebTLSTests {
    /// One request over TLS, verified against the test CA for `localhost`; the raw answer.
    func https(_ port: Int, _ request: String, certificates: TestCertificates, in folder: String) throws -> String {
        let openssl = try #require(TestCertificates.openssl)
        let file = folder + "/request-\(UUID().uuidString).txt"
        try request.write(toFile: file, atomically: true, encoding: .utf8)
        let command = "'\(openssl)' s_client -quiet -verify_return_error -connect 127.0.0.1:\(port) -servername localhost "
            + "-verify_hostname localhost -CAfile '\(certificates.caCertificate)' < '\(file)'"
        let result = try runCommand("/bin/sh", ["-c", command], in: folder, timeout: .seconds(20))
        guard result.stdout.hasPrefix("HTTP/1.1") else { throw HarnessError("openssl s_client: \(result.status) \(result.stdout) \(result.stderr)") }
        return result.stdout
    }

    @Test func overHTTPSTheCookieIsSecureAndTheOriginIsHTTPS() async throws {
        try await Sandbox.with { sandbox in
            let certificates = try TestCertificates.make(in: sandbox.root + "/certs")
            let daemon = try await DaemonHarness.start(sandbox, [
                "--web", "127.0.0.1:0", "--web-cert", certificates.serverCertificate, "--web-key", certificates.serverKey,
            ])
            let link = try await WebDashboardHarness.loginLink(sandbox, socket: DaemonHarness.socket(sandbox))
            #expect(link.hasPrefix("https://127.0.0.1:"), "\(link)")
            let port = try #require(URLComponents(string: link)?.port)
            let target = WebDashboardHarness.target(link)
            let host = "localhost:\(port)"
            let login = try https(port, "GET \(target) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n", certificates: certificates, in: sandbox.work)
            #expect(login.hasPrefix("HTTP/1.1 303"), "\(login)")
            let cookieLine = try #require(login.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("set-cookie:") })
            #expect(cookieLine.contains("; Secure") && cookieLine.contains("HttpOnly") && cookieLine.contains("SameSite=Strict"), "\(cookieLine)")
            let cookie = try #require(cookieLine.split(separator: " ").dropFirst().first.map { String($0.dropLast()) })
            let locationLine = try #require(login.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("location: /#key=") }, "\(login)")
            let key = String(locationLine.dropFirst("location: /#key=".count))
            let me = try https(port, "GET /api/me HTTP/1.1\r\nHost: \(host)\r\nCookie: \(cookie)\r\nX-Haul-Key: \(key)\r\nConnection: close\r\n\r\n",
                               certificates: certificates, in: sandbox.work)
            let csrf = try #require(me.range(of: #""csrf":"[0-9a-f]+""#, options: .regularExpression).map { String(me[$0].dropFirst(8).dropLast()) }, "\(me)")
            func status(origin: String) throws -> String {
                let body = #"{"method":"daemon.status"}"#
                let request = "POST /api/rpc HTTP/1.1\r\nHost: \(host)\r\nCookie: \(cookie)\r\nX-Haul-Key: \(key)\r\nX-CSRF-Token: \(csrf)\r\nOrigin: \(origin)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
                return try https(port, request, certificates: certificates, in: sandbox.work)
            }
            #expect(try status(origin: "https://\(host)").hasPrefix("HTTP/1.1 200"))
            #expect(try status(origin: "http://\(host)").hasPrefix("HTTP/1.1 403"), "plain http is another origin")
            try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
        }
    }
}
#endif
