import Foundation
import PropertyBased
import Testing
@testable import HaulCore

/// `Set-Cookie` as RFC 6265 §5.2–5.3 reads it, for the hops of a redirect chain.
@Suite struct SetCookieTests {
    let url = URL(string: "https://dl.example.com/files/get/f.bin?x=1")!
    let now: Int64 = 1_800_000_000

    @Test func attributesAndDefaults() throws {
        guard case .keep(let plain)? = Cookie.setting("sid=abc; HttpOnly", from: url, now: now) else { Issue.record("not kept"); return }
        #expect(plain == Cookie(domain: "dl.example.com", includesSubdomains: false, path: "/files/get", secure: false, expires: 0, name: "sid", value: "abc"))
        guard case .keep(let full)? = Cookie.setting(" t = v=w ; Domain=.Example.COM; Path=/; Secure; Max-Age=60", from: url, now: now) else {
            Issue.record("not kept"); return
        }
        #expect(full == Cookie(domain: "example.com", includesSubdomains: true, path: "/", secure: true, expires: now + 60, name: "t", value: "v=w"))
        #expect(Cookie.setting("gone=1; Max-Age=0", from: url, now: now).map { if case .forget = $0 { true } else { false } } == true)
        #expect(Cookie.setting("old=1; Expires=Sun, 06 Nov 1994 08:49:37 GMT", from: url, now: now).map { if case .forget = $0 { true } else { false } } == true)
        // Max-Age wins over Expires, whichever comes first.
        guard case .keep(let both)? = Cookie.setting("b=1; Max-Age=10; Expires=Sun, 06 Nov 1994 08:49:37 GMT", from: url, now: now) else {
            Issue.record("not kept"); return
        }
        #expect(both.expires == now + 10)
    }

    @Test(arguments: ["novalue", "=v", "; Path=/", "a=b; Domain=other.com", "a=b; Domain=ample.com", "a=b; Domain=files.dl.example.com", "a=b\nc"])
    func ignored(_ field: String) {
        #expect(Cookie.setting(field, from: url, now: now) == nil)
    }

    @Test func anAddressSetsHostOnlyCookiesForItself() {
        let address = URL(string: "http://127.0.0.1:8080/a/b")!
        guard case .keep(let cookie)? = Cookie.setting("a=1; Domain=127.0.0.1", from: address, now: now) else { Issue.record("not kept"); return }
        #expect(!cookie.includesSubdomains && cookie.domain == "127.0.0.1")
        #expect(Cookie.setting("a=1; Domain=0.0.1", from: address, now: now) == nil)
    }

    @Test func aCookieSetAgainReplacesItsNamesakeAndAnExpiredOneRemovesIt() {
        var cookies: [Cookie] = []
        for field in ["a=1; Path=/", "b=2", "a=3; Path=/", "b=0; Max-Age=-1"] {
            if let setting = Cookie.setting(field, from: url, now: now) { cookies = Cookie.applying(setting, to: cookies) }
        }
        #expect(cookies.map(\.name) == ["a"] && cookies.first?.value == "3")
    }

    /// Whatever a server's `Set-Cookie` says, a cookie kept is one the URL that set it would be sent (its domain and
    /// path cover it, unless a Path elsewhere was asked for), and never one for a domain that does not cover the host.
    @Test func aKeptCookieCoversItsOwnHostAndNoOther() async {
        let hosts = Gen.element(of: ["a.example.com", "example.com", "b.a.example.com", "127.0.0.1", "localhost"]).map { $0 ?? "example.com" }
        let domains = Gen.element(of: ["", "example.com", ".example.com", "a.example.com", "com", "evil.com", "xample.com", "127.0.0.1", "0.0.1"]).map { $0 ?? "" }
        let paths = Gen.element(of: ["", "/", "/a", "/a/b/", "x"]).map { $0 ?? "" }
        await propertyCheck(input: hosts, domains, paths, Gen.bool) { host, domain, path, secure in
            let from = URL(string: "https://\(host)/a/b/file.bin")!
            var field = "n=v"
            if !domain.isEmpty { field += "; Domain=\(domain)" }
            if !path.isEmpty { field += "; Path=\(path)" }
            if secure { field += "; Secure" }
            guard case .keep(let cookie)? = Cookie.setting(field, from: from, now: now) else { return }
            #expect(Cookie.domainMatches(host: host, domain: cookie.domain, includesSubdomains: cookie.includesSubdomains), "\(field) from \(host): \(cookie)")
            if !path.hasPrefix("/") { #expect(Cookie.header(for: from, from: [cookie], now: now) == "n=v", "\(field): \(cookie)") }
            #expect(!Cookie.domainMatches(host: "evil.com", domain: cookie.domain, includesSubdomains: cookie.includesSubdomains))
        }
    }
}
