import Foundation
import Testing

/// The fixtures themselves, checked with `openssl verify` and curl (not haul): a failure here is the harness's,
/// not the product's.
@Suite(.enabled(if: HTTPSNginx.enabled, "needs nginx and openssl (apt-get install nginx-light openssl; scripts/test installs them)"))
struct TLSHarnessTests {
    static let curlBinary = ExternalTools.find("curl", also: ["/usr/bin"])

    /// `curl -s -o /dev/null -w '%{http_code} %{http_version}' ARGS`: that output ("200 2") when curl exits 0,
    /// else `exit N` with curl's exit code (60: the peer's certificate could not be verified).
    func curl(_ arguments: [String], in folder: String) throws -> String {
        guard let curl = Self.curlBinary else { throw HarnessError("curl is not installed: apt-get install curl") }
        do {
            return try runTool(curl, ["-q", "-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version}", "--max-time", "20"] + arguments, in: folder)
        } catch let error as HarnessError {
            // runTool throws on a nonzero exit, naming the code: "… failed (60): …".
            return error.description.firstMatch(of: #/failed \((\d+)\)/#).map { "exit \($0.1)" } ?? error.description
        }
    }

    /// Expects `curl ARGS` to give `expected` (see ``curl(_:in:)``).
    func expectCurl(_ arguments: [String], gives expected: String, in folder: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let answer = try curl(arguments, in: folder)
        #expect(answer == expected, "curl \(arguments.joined(separator: " "))", sourceLocation: sourceLocation)
    }

    @Test func theCertificatesAreWhatTheySayTheyAre() async throws {
        let folder = NSTemporaryDirectory() + "haul-certs-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let certificates = try TestCertificates.make(in: folder)
        let openssl = try #require(TestCertificates.openssl)
        func verify(_ arguments: [String]) -> String {
            do { return try runTool(openssl, ["verify"] + arguments, in: folder) } catch { return "\(error)" }
        }
        let ca = ["-CAfile", certificates.caCertificate]
        #expect(verify(ca + ["-verify_ip", "127.0.0.1", certificates.serverCertificate]).contains(": OK"))
        #expect(verify(ca + ["-verify_hostname", "localhost", certificates.serverCertificate]).contains(": OK"))
        #expect(verify(["-CApath", certificates.caDirectory, certificates.serverCertificate]).contains(": OK"))
        #expect(verify(ca + ["-purpose", "sslclient", certificates.clientCertificate]).contains(": OK"))
        #expect(verify(ca + [certificates.expiredCertificate]).contains("certificate has expired"))
        let wrongName = verify(ca + ["-verify_ip", "127.0.0.1", certificates.wrongNameCertificate])
        #expect(wrongName.contains("IP address mismatch"), "\(wrongName)")
        #expect(verify(ca + [certificates.wrongNameCertificate]).contains(": OK"), "signed by the CA, only the name is wrong")
    }

    @Test(.enabled(if: curlBinary != nil || ExternalTools.inCI, "needs curl (apt-get install curl; scripts/test installs it)"))
    func nginxServesEachRoleAsDescribed() async throws {
        try await HTTPSNginx.with { nginx in
            let folder = nginx.prefix
            let ca = ["--cacert", nginx.certificates.caCertificate]
            let credentials = ["-u", "\(HTTPSNginx.user):\(HTTPSNginx.password)"]
            try expectCurl(ca + [nginx.url("/file.bin")], gives: "200 2", in: folder)
            try expectCurl(ca + ["--http1.1", "-r", "0-99", nginx.url("/file.bin")], gives: "206 1.1", in: folder)
            try expectCurl([nginx.url("/file.bin")], gives: "exit 60", in: folder)
            try expectCurl(ca + [nginx.url("/file.bin", .expired)], gives: "exit 60", in: folder)
            try expectCurl(ca + [nginx.url("/file.bin", .wrongName)], gives: "exit 60", in: folder)
            try expectCurl(ca + [nginx.url("/file.bin", .clientCertificate)], gives: "400 2", in: folder)
            let client = ["--cert", nginx.certificates.clientCertificate, "--key", nginx.certificates.clientKey]
            try expectCurl(ca + client + [nginx.url("/file.bin", .clientCertificate)], gives: "200 2", in: folder)
            try expectCurl(ca + [nginx.url("/auth/file.bin")], gives: "401 2", in: folder)
            try expectCurl(ca + credentials + [nginx.url("/auth/file.bin")], gives: "200 2", in: folder)
            try expectCurl(ca + [nginx.url("/auth/moved")], gives: "401 2", in: folder)
            try expectCurl(ca + credentials + [nginx.url("/auth/moved")], gives: "302 2", in: folder)
            try expectCurl(ca + [nginx.url("/file.bin", .otherOrigin)], gives: "200 2", in: folder)

            let moved = await nginx.loggedRequests(.valid, uri: "/auth/moved", atLeast: 2)
            #expect(moved.map(\.status).sorted() == [302, 401], "\(moved)")
            #expect(moved.first { $0.status == 302 }?.authorization.hasPrefix("Basic ") == true, "\(moved)")
            let ranged = await nginx.loggedRequests(.valid, uri: "/file.bin", atLeast: 2)
            #expect(ranged.contains { $0.status == 206 && $0.range == "bytes=0-99" && $0.protocolVersion == "HTTP/1.1" }, "\(ranged)")
            #expect(ranged.contains { $0.status == 200 && $0.protocolVersion == "HTTP/2.0" && $0.bytesSent == nginx.file.count }, "\(ranged)")
        }
    }
}
