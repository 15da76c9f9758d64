import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct ProxyChoiceTests {
    func url(_ text: String) -> URL { URL(string: text)! }

    @Test func parsesProxiesAsCurlDoes() throws {
        let plain = try ProxyEndpoint(parsing: "proxy.local")
        #expect(plain.kind == .http && plain.host == "proxy.local" && plain.port == 1080 && plain.user == nil)
        let full = try ProxyEndpoint(parsing: "http://u%40x:p%3Aw@10.0.0.1:3128")
        #expect(full.port == 3128 && full.user == "u@x" && full.password == "p:w")
        #expect(full.description == "http://10.0.0.1:3128")
        #expect(try ProxyEndpoint(parsing: "socks5h://[::1]:9050").host == "::1")
        #expect(throws: InputError.self) { try ProxyEndpoint(parsing: "ftp://p:21") }
        #expect(throws: InputError.self) { try ProxyEndpoint(parsing: "https://p:443") }
        #expect(throws: InputError.self) { try ProxyEndpoint(parsing: "socks5://u:p@h:1080") }
        #expect(throws: InputError.self) { try ProxyEndpoint(parsing: "p:70000") }
        #expect(throws: InputError.self) { try ProxyEndpoint(parsing: "  ") }
    }

    @Test func environmentVariablesBySchemeWithHttpoxyRule() throws {
        let env = ["HTTP_PROXY": "evil:1", "https_proxy": "s:2", "ALL_PROXY": "a:3"]
        let choice = ProxyChoice(environment: env)
        // HTTP_PROXY (upper case) is never read: a CGI request header could set it (httpoxy).
        #expect(try choice.proxy(for: url("http://example.com/"))?.host == "a")
        #expect(try choice.proxy(for: url("https://example.com/"))?.host == "s")
        #expect(try ProxyChoice(environment: ["http_proxy": "h:4"]).proxy(for: url("http://x/"))?.port == 4)
        #expect(try ProxyChoice(environment: ["HTTPS_PROXY": "S:5"]).proxy(for: url("https://x/"))?.port == 5)
        #expect(try ProxyChoice(environment: ["all_proxy": "socks5://a:6"]).proxy(for: url("https://x/"))?.kind == .socks5)
        #expect(try ProxyChoice().proxy(for: url("https://x/")) == nil)
    }

    @Test func explicitProxyWinsButNoProxyStillExcepts() throws {
        let explicit = try ProxyEndpoint(parsing: "p:8080")
        let choice = ProxyChoice(explicit: explicit, noProxy: "internal.example", environment: ["https_proxy": "e:1", "no_proxy": "*"])
        #expect(try choice.proxy(for: url("https://example.com/")) == explicit)
        #expect(try choice.proxy(for: url("https://a.internal.example/")) == nil)
    }

    @Test(arguments: [
        ("example.com", "example.com", true), ("www.example.com", "example.com", true), ("www.example.com", ".example.com", true),
        ("badexample.com", "example.com", false), ("example.com", "www.example.com", false), ("anything", "*", true),
        ("127.0.0.1", "localhost, 127.0.0.1", true), ("127.0.0.10", "127.0.0.1", false), ("[::1]", "::1", true),
        ("host", "host:8080", true), ("EXAMPLE.com.", "example.COM", true), ("x", "", false), ("x", " , ,", false),
    ])
    func noProxyMatching(host: String, list: String, excepted: Bool) {
        #expect(ProxyChoice.matches(host: host, noProxy: list) == excepted, "\(host) in \(list)")
    }

    @Test func aMalformedProxyIsAnErrorNeverADirectConnection() {
        #expect(throws: InputError.self) { try ProxyChoice(environment: ["https_proxy": "gopher://x"]).proxy(for: self.url("https://a/")) }
    }
}
