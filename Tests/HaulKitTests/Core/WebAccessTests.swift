import Testing
@testable import HaulKit

@Suite struct WebAccessTests {
    let access = WebAccess(port: 7711, extraHosts: ["dash.example", "Proxy.Example:443"])

    @Test func loopbackNamesWithOurPortOrNoneAreAllowed() {
        for host in ["127.0.0.1", "127.0.0.1:7711", "localhost", "LOCALHOST:7711", "[::1]", "[::1]:7711", "dash.example", "proxy.example:7711"] {
            #expect(access.allowsHost(host), "\(host)")
        }
    }

    @Test func everyOtherHostIsRefused() {
        let refused = [
            nil, "", "evil.example", "evil.example:7711", "127.0.0.1:7712", "localhost:80", "[::1]:1", "127.0.0.2",
            "localhost.", "127.0.0.1.nip.io", "::1", "[::1", "[::2]", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:99999",
            "127.0.0.1:77a1", "local host", "localhost\r\nX: y", "dash.example.evil", "xn--dash.example", "[fe80::1%eth0]",
            "localhost:7711:7711", "127.0.0.1@evil.example",
        ]
        for host in refused { #expect(!access.allowsHost(host), "\(host ?? "nil")") }
    }

    @Test func hostsParseIntoNameAndPort() {
        func parsed(_ text: String) -> String? { WebAccess.parseHost(text).map { "\($0.name) \($0.port.map(String.init) ?? "-")" } }
        #expect(parsed("[::1]:80") == "[::1] 80")
        #expect(parsed("Example.COM") == "example.com -")
        #expect(parsed("a:65535") == "a 65535")
        #expect(parsed("a:65536") == nil)
        #expect(parsed("[]") == nil)
        #expect(parsed("[::1]x") == nil)
    }

    @Test func theOriginMustBeOurOwnForTheHostTheBrowserSent() {
        #expect(access.isOwnOrigin("http://127.0.0.1:7711", host: "127.0.0.1:7711"))
        #expect(access.isOwnOrigin("http://localhost:7711", host: "localhost:7711"))
        #expect(access.isOwnOrigin("http://[::1]:7711", host: "[::1]:7711"))
        #expect(!access.isOwnOrigin("http://localhost:7711", host: "127.0.0.1:7711"))
        #expect(!access.isOwnOrigin("https://127.0.0.1:7711", host: "127.0.0.1:7711"))
        #expect(!access.isOwnOrigin("http://evil.example", host: "127.0.0.1:7711"))
        #expect(!access.isOwnOrigin("null", host: "127.0.0.1:7711"))
        #expect(!access.isOwnOrigin(nil, host: "127.0.0.1:7711"))
        #expect(!access.isOwnOrigin("http://evil.example:7711", host: "evil.example:7711"), "the Host must be allowed too")
        let tls = WebAccess(port: 443, secure: true, extraHosts: ["dash.example"])
        #expect(tls.isOwnOrigin("https://dash.example", host: "dash.example"))
        #expect(!tls.isOwnOrigin("http://dash.example", host: "dash.example"))
    }

    @Test func anAbsentOriginIsAllowedOnlyWhereOptional() {
        #expect(access.allowsOptionalOrigin(nil, host: "127.0.0.1:7711"))
        #expect(access.allowsOptionalOrigin("http://127.0.0.1:7711", host: "127.0.0.1:7711"))
        #expect(!access.allowsOptionalOrigin("http://evil.example", host: "127.0.0.1:7711"))
        #expect(!access.allowsOptionalOrigin("null", host: "127.0.0.1:7711"))
    }

    /// The page's files as the dashboard lists them (WebAssets): the policy is given the list, it does not keep one.
    let pageFiles: Set<String> = ["/", "/index.html", "/app.mjs", "/app.css"]

    @Test func onlyPostChangesStateAndGetReads() {
        #expect(WebAccess.route(method: "GET", path: "/", assets: pageFiles) == .asset("/"))
        #expect(WebAccess.route(method: "HEAD", path: "/app.mjs", assets: pageFiles) == .asset("/app.mjs"))
        #expect(WebAccess.route(method: "GET", path: "/login", assets: pageFiles) == .login)
        #expect(WebAccess.route(method: "POST", path: "/login", assets: pageFiles) == .methodNotAllowed(allow: "GET"))
        #expect(WebAccess.route(method: "GET", path: "/api/me", assets: pageFiles) == .me)
        #expect(WebAccess.route(method: "GET", path: "/api/events", assets: pageFiles) == .events)
        #expect(WebAccess.route(method: "POST", path: "/api/rpc", assets: pageFiles) == .rpc)
        for method in ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"] {
            #expect(WebAccess.route(method: method, path: "/api/rpc", assets: pageFiles) == .methodNotAllowed(allow: "POST"), "\(method)")
        }
        #expect(WebAccess.route(method: "POST", path: "/", assets: pageFiles) == .methodNotAllowed(allow: "GET, HEAD"))
        #expect(WebAccess.route(method: "GET", path: "/etc/passwd", assets: pageFiles) == .notFound)
        #expect(WebAccess.route(method: "GET", path: "/api/rpc/", assets: pageFiles) == .notFound)
    }

    @Test func targetsSplitIntoPathAndDecodedQuery() throws {
        let split = try #require(WebAccess.splitTarget("/login?token=ab%2Fc&x=1+2&token=second"))
        #expect(split.path == "/login")
        #expect(split.query == ["token": "ab/c", "x": "1 2"])
        #expect(WebAccess.splitTarget("http://evil/") == nil)
        #expect(WebAccess.splitTarget("/a?b=%zz") == nil)
        #expect(WebAccess.splitTarget("/a?b=%ff") == nil, "not UTF-8")
        #expect(WebAccess.splitTarget("/api/events")?.query == [:])
    }

    @Test func theBridgePassesOnlyTheDashboardsMethods() {
        for method in ["tasks.add", "tasks.list", "tasks.remove", "tasks.segments", "session.setRateLimit", "session.configuration", "daemon.status", "journal.ack"] {
            #expect(WebAccess.bridges(method), "\(method)")
        }
        for method in ["web.start", "daemon.hello", "events.subscribe", "events.unsubscribe", "tasks.nope", "", "Tasks.add"] {
            #expect(!WebAccess.bridges(method), "\(method)")
        }
        for method in DaemonMethod.allCases where method.rawValue.hasPrefix("web.") { #expect(!WebAccess.bridges(method.rawValue)) }
    }

    @Test func secretsCompareWholly() {
        #expect(WebAccess.constantTimeEquals("abc", "abc"))
        #expect(!WebAccess.constantTimeEquals("abc", "abd"))
        #expect(!WebAccess.constantTimeEquals("abc", "abcd"))
        #expect(!WebAccess.constantTimeEquals("", "a"))
    }

    @Test func cookiesAndBearerTokensAreRead() {
        #expect(WebAccess.cookie("haul_session", in: "a=1; haul_session=xyz; b=2") == "xyz")
        #expect(WebAccess.cookie("haul_session", in: "haul_session_x=1") == nil)
        #expect(WebAccess.cookie("haul_session", in: nil) == nil)
        #expect(WebAccess.bearer("Bearer abc") == "abc")
        #expect(WebAccess.bearer("bearer  abc ") == "abc")
        #expect(WebAccess.bearer("Basic abc") == nil)
        #expect(WebAccess.bearer("Bearer") == nil)
    }

    @Test func theListenerStaysOnLoopbackUnlessAskedWithTLS() {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"] {
            #expect(WebListenPolicy.isLoopback(host), "\(host)")
            #expect(WebListenPolicy.refusal(host: host, allowRemote: false, hasTLS: false) == nil)
        }
        for host in ["0.0.0.0", "192.168.1.2", "::", "example.com", "127.0.0.256", "128.0.0.1"] {
            #expect(!WebListenPolicy.isLoopback(host), "\(host)")
            #expect(WebListenPolicy.refusal(host: host, allowRemote: false, hasTLS: true)?.contains("--web-allow-remote") == true)
            #expect(WebListenPolicy.refusal(host: host, allowRemote: true, hasTLS: false)?.contains("--web-cert") == true)
            #expect(WebListenPolicy.refusal(host: host, allowRemote: true, hasTLS: true) == nil)
        }
    }

    @Test func webAddressesParse() {
        func parsed(_ text: String) -> String? { WebListenPolicy.parseAddress(text).map { "\($0.host) \($0.port)" } }
        #expect(parsed("0") == "127.0.0.1 0")
        #expect(parsed("7711") == "127.0.0.1 7711")
        #expect(parsed("0.0.0.0:80") == "0.0.0.0 80")
        #expect(parsed("[::1]:8080") == "::1 8080")
        #expect(parsed("::1:8080") == "::1 8080")
        for bad in ["", "x", "70000", ":80", "a:", "[::1]", "1.2.3.4:80a"] { #expect(parsed(bad) == nil, "\(bad)") }
        #expect(WebListenPolicy.urlHost("::1") == "[::1]")
        #expect(WebListenPolicy.urlHost("0.0.0.0", fallback: "dash.example") == "dash.example")
        #expect(WebListenPolicy.urlHost("127.0.0.1") == "127.0.0.1")
    }
}
