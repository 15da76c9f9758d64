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
        // SOCKS5 with a user name and password (RFC 1929): each at most 255 bytes, the name not empty.
        let socks = try ProxyEndpoint(parsing: "socks5://u%3Ax:p%40w@h:1080")
        #expect(socks.kind == .socks5 && socks.user == "u:x" && socks.password == "p@w" && !socks.resolvesNames)
        #expect(try ProxyEndpoint(parsing: "socks5h://u:p@h").resolvesNames)
        #expect(throws: InputError.self) { try ProxyEndpoint(parsing: "socks5://\(String(repeating: "u", count: 256)):p@h:1080") }
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
        // CIDR ranges (curl 7.86): addresses in the range, never names, never tail matches of addresses.
        ("127.0.0.1", "127.0.0.0/8", true), ("127.255.1.2", "10.0.0.0/8,127.0.0.0/8", true), ("128.0.0.1", "127.0.0.0/8", false),
        ("localhost", "127.0.0.0/8", false), ("10.1.2.3", "10.1.0.0/16", true), ("10.2.0.0", "10.1.0.0/16", false),
        ("[::1]", "::1/128", true), ("[fd00::5]", "fd00::/8", true), ("[fe80::1]", "fd00::/8", false), ("[::1]", "[::1]/128", true),
        ("[::ffff:127.0.0.1]", "127.0.0.0/8", true), ("1.2.3.4", "0.0.0.0/0", true), ("[::2]", "0.0.0.0/0", false),
        ("10.0.0.1", "0.1", false), ("10.0.0.1", "10.0.0.1/33", false), ("10.0.0.1", "10.0.0.1/x", false),
    ])
    func noProxyMatching(host: String, list: String, excepted: Bool) {
        #expect(ProxyChoice.matches(host: host, noProxy: list) == excepted, "\(host) in \(list)")
    }

    @Test func plainHTTPIsForwardedAndOnlyHTTPSOrATunnelRequestUsesConnect() throws {
        let http = try ProxyEndpoint(parsing: "http://p:3128"), socks = try ProxyEndpoint(parsing: "socks5h://s:1080")
        #expect(ProxyRoute(url: url("http://a/f"), proxy: http) == .forward(http))
        #expect(ProxyRoute(url: url("HTTPS://a/f"), proxy: http) == .tunnel(http))
        #expect(ProxyRoute(url: url("http://a/f"), proxy: http, tunnel: true) == .tunnel(http))
        #expect(ProxyRoute(url: url("http://a/f"), proxy: socks) == .socks(socks))
        #expect(ProxyRoute(url: url("https://a/f"), proxy: nil) == .direct)
        #expect(ProxyRoute(url: url("https://a/f"), proxy: socks).proxy == socks)
    }

    @Test func aMalformedProxyIsAnErrorNeverADirectConnection() {
        #expect(throws: InputError.self) { try ProxyChoice(environment: ["https_proxy": "gopher://x"]).proxy(for: self.url("https://a/")) }
    }
}
