import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct TLSTrustTests {
    let day: Int64 = 86_400
    func certificate(dns: [String] = [], ips: [String] = [], commonName: String? = nil, from: Int64 = 0, to: Int64 = 1_000 * 86_400) -> PeerCertificate {
        PeerCertificate(notValidBefore: from, notValidAfter: to, dnsNames: dns, ipAddresses: ips, commonName: commonName)
    }

    @Test func optionsWinOverTheEnvironmentAsInCurl() {
        let environment = ["SSL_CERT_FILE": "/env/ca.pem", "SSL_CERT_DIR": "/env/certs"]
        #expect(TLSTrust.resolving(TLSTrust(), environment: environment) == TLSTrust(caFile: "/env/ca.pem", caDirectory: "/env/certs"))
        #expect(TLSTrust.resolving(TLSTrust(caFile: "/mine.pem"), environment: environment) == TLSTrust(caFile: "/mine.pem"))
        #expect(TLSTrust.resolving(TLSTrust(caDirectory: "/mine"), environment: environment) == TLSTrust(caDirectory: "/mine"))
        #expect(TLSTrust.resolving(TLSTrust(insecure: true), environment: ["SSL_CERT_FILE": ""]) == TLSTrust(insecure: true))
        #expect(TLSTrust.resolving(TLSTrust(), environment: [:]).isDefault)
    }

    @Test func validationNamesTheOption() {
        #expect(throws: InputError("--key needs --cert: the certificate the key belongs to")) { try TLSTrust(clientKey: "/k").validate() }
        #expect(throws: InputError("--cacert needs a path")) { try TLSTrust(caFile: "").validate() }
        #expect(throws: Never.self) { try TLSTrust(clientCertificate: "/c", clientKey: "/k").validate() }
    }

    @Test func hostNamesMatchAsRFC6125Says() {
        let wildcard = certificate(dns: ["*.example.com", "example.com"])
        #expect(wildcard.matches(host: "a.example.com") && wildcard.matches(host: "EXAMPLE.com.") && wildcard.matches(host: "example.com"))
        #expect(!wildcard.matches(host: "a.b.example.com") && !wildcard.matches(host: "badexample.com") && !wildcard.matches(host: "com"))
        let addresses = certificate(dns: ["localhost"], ips: ["127.0.0.1", "::1"])
        #expect(addresses.matches(host: "127.0.0.1") && addresses.matches(host: "[::1]") && addresses.matches(host: "localhost"))
        #expect(!addresses.matches(host: "127.0.0.2"))
        // A DNS name never stands for an address.
        #expect(!certificate(dns: ["127.0.0.1"]).matches(host: "127.0.0.1"))
        // The common name counts only without alternative names.
        #expect(certificate(commonName: "files.local").matches(host: "files.local"))
        #expect(!certificate(dns: ["other.local"], commonName: "files.local").matches(host: "files.local"))
        #expect(certificate(dns: ["a"], ips: ["10.0.0.1"], commonName: "c").names == ["a", "10.0.0.1"])
        #expect(certificate(commonName: "c").names == ["c"])
    }

    @Test func diagnosisPrefersTheMostSpecificCause() {
        let now = 500 * day
        #expect(CertificateProblem.diagnose(certificate(dns: ["h"], to: now - 1), host: "h", now: now) == .expired(notValidAfter: now - 1))
        #expect(CertificateProblem.diagnose(certificate(dns: ["h"], from: now + 1), host: "h", now: now) == .notYetValid(notValidBefore: now + 1))
        #expect(CertificateProblem.diagnose(certificate(dns: ["x"]), host: "h", now: now) == .wrongHostName(certificateNames: ["x"]))
        #expect(CertificateProblem.diagnose(certificate(dns: ["h"]), host: "h", now: now) == .unknownIssuer)
        // Expired and for another name: the date is said first.
        #expect(CertificateProblem.diagnose(certificate(dns: ["x"], to: now - 1), host: "h", now: now) == .expired(notValidAfter: now - 1))
    }

    @Test func messagesNameTheCauseAndTheServer() {
        let server = "127.0.0.1:8443"
        #expect(CertificateProblem.expired(notValidAfter: 1_609_459_200).message(server: server)
            == "TLS certificate of 127.0.0.1:8443 has expired (on 2021-01-01); refusing to connect")
        #expect(CertificateProblem.wrongHostName(certificateNames: ["wrong.example"]).message(server: server).contains("wrong.example, not this host name (wrong host name)"))
        #expect(CertificateProblem.unknownIssuer.message(server: server).contains("unknown issuer"))
        // A hostile certificate's names reach the terminal only as short printable ASCII.
        let hostile = CertificateProblem.wrongHostName(certificateNames: ["evil\u{1b}[2J.example", String(repeating: "a", count: 100)]).message(server: server)
        #expect(hostile.contains("evil?[2J.example, " + String(repeating: "a", count: 64) + "…"), "\(hostile)")
        #expect(!hostile.unicodeScalars.contains { $0.value < 0x20 })
        #expect(CertificateProblem.handshake("tlsv1 alert protocol version").message(server: server)
            == "TLS handshake with 127.0.0.1:8443 failed: tlsv1 alert protocol version")
    }

    @Test func libraryTextBecomesWordsWithoutPaths() {
        let text = "sslError([Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED at /work/.build/checkouts/swift-nio-ssl/Sources/CNIOBoringSSL/ssl/handshake.cc:320])"
        #expect(CertificateProblem.reason(fromLibraryText: text) == "certificate verify failed")
        let plain = CertificateProblem.reason(fromLibraryText: "uncleanShutdown at /x/y.swift:12")
        #expect(!plain.contains("/") && plain.hasPrefix("uncleanShutdown"))
        #expect(CertificateProblem.reason(fromLibraryText: "") == "unknown error")
    }

    @Test func daysAreCivilDates() {
        #expect(HTTPDate.day(0) == "1970-01-01")
        #expect(HTTPDate.day(951_782_400) == "2000-02-29")
        #expect(HTTPDate.day(1_609_459_199) == "2020-12-31")
        #expect(HTTPDate.day(-1) == "1969-12-31")
        // Round trip with the HTTP-date parser over many days.
        var random = SplitMix(seed: 7)
        for _ in 0..<500 {
            let seconds = Int64(random.next() % 10_000_000_000)
            let text = HTTPDate.day(seconds)
            let parts = text.split(separator: "-")
            let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
            guard parts.count == 3, let month = Int(parts[1]), let dayOfMonth = Int(parts[2]) else {
                Issue.record("not a date: \(text)")
                continue
            }
            let parsed = HTTPDate.parse("Mon, \(dayOfMonth < 10 ? "0" : "")\(dayOfMonth) \(months[month - 1]) \(parts[0]) 00:00:00 GMT")
            #expect(parsed == seconds - seconds % 86_400, "\(seconds) → \(text)")
        }
    }

    @Test func proxyChoicesKeepOnlyTheProxyVariablesAndRoundTrip() throws {
        let choice = ProxyChoice.from(
            explicit: try ProxyEndpoint(parsing: "http://u%40x:p%3Aw@proxy.local:3128"), noProxy: ".internal",
            environment: ["https_proxy": "s:1", "HTTP_PROXY": "evil:1", "PATH": "/bin", "no_proxy": "a"])
        #expect(choice.environment == ["https_proxy": "s:1", "no_proxy": "a"])
        let endpoint = try #require(choice.explicit)
        #expect(try ProxyEndpoint(parsing: endpoint.url) == endpoint)
        #expect(try ProxyEndpoint(parsing: ProxyEndpoint(parsing: "socks5h://[::1]:9050").url).host == "::1")
        let decoded = try JSONDecoder().decode(ProxyChoice.self, from: JSONEncoder().encode(choice))
        #expect(decoded == choice)
    }
}
