import Foundation
import PropertyBased
import Testing
@testable import HaulCore
@testable import HaulKit

/// The Public Suffix List's rules, and what they keep a cookie from: a site setting a cookie for every other site
/// under `co.uk` or `github.io`, on a redirect or in a jar line.
@Suite struct PublicSuffixesTests {
    static let list = PublicSuffixes(listText: """
        // ===BEGIN ICANN DOMAINS===
        com
        uk
        co.uk
        // wildcards and their exceptions
        *.ck
        !www.ck
        公司.cn
        cn
        github.io   trailing words are ignored
        """)

    @Test func rulesWildcardsExceptionsAndTheImplicitRule() {
        for suffix in ["com", "co.uk", "uk", "github.io", "foo.ck", "ck", "xn--55qx5d.cn", "anything"] {
            #expect(Self.list.isPublicSuffix(suffix), "\(suffix)")
        }
        for site in ["example.com", "bank.co.uk", "www.ck", "a.foo.ck", "me.github.io", "example.xn--55qx5d.cn", "io.github"] {
            #expect(!Self.list.isPublicSuffix(site), "\(site)")
        }
        #expect(PublicSuffixes.topLevelOnly.isPublicSuffix("com") && !PublicSuffixes.topLevelOnly.isPublicSuffix("co.uk"))
        #expect(Self.list.ruleCount == 8)
    }

    /// RFC 3492's own examples and IDNA's usual ones.
    @Test func punycodeEncodesAsIDNADoes() {
        #expect(Punycode.asciiName("公司.cn") == "xn--55qx5d.cn")
        #expect(Punycode.asciiName("рф") == "xn--p1ai")
        #expect(Punycode.asciiName("bücher.example") == "xn--bcher-kva.example")
        #expect(Punycode.asciiName("münchen.de") == "xn--mnchen-3ya.de")
        #expect(Punycode.encode(Array("ليهمابتكلموشعربي؟".unicodeScalars.map(\.value))) == "egbpdaj6bu4bxfgehfvwxn")
        #expect(Punycode.asciiName("example.com") == "example.com")
    }

    /// Whatever the letters of a name, its ASCII form is ASCII, keeps its dots, and leaves ASCII labels as they are.
    @Test func anyNamesASCIIFormIsASCIIAndKeepsItsLabels() async {
        let letters = Gen.element(of: ["a", "z", "0", "-", "ü", "é", "日", "ф", "😀", "ß"]).map { $0 ?? "a" }
        let labels = letters.array(of: 1...8).map { $0.joined() }
        await propertyCheck(input: labels.array(of: 1...4)) { parts in
            let name = parts.joined(separator: ".")
            guard let ascii = Punycode.asciiName(name) else { Issue.record("\(name) not encoded"); return }
            #expect(ascii.utf8.allSatisfy { $0 < 0x80 }, "\(ascii)")
            let out = ascii.split(separator: ".", omittingEmptySubsequences: false)
            #expect(out.count == parts.count)
            for (label, encoded) in zip(parts, out) where label.utf8.allSatisfy({ $0 < 0x80 }) { #expect(String(encoded) == label) }
        }
    }

    /// RFC 6265 §5.3 step 5: a `Domain` that is a public suffix is ignored, unless it is the host itself, which then
    /// gets a cookie of its own only.
    @Test func aRedirectsCookieForAPublicSuffixIsIgnored() {
        let now: Int64 = 1_800_000_000
        func set(_ field: String, from host: String) -> Cookie? {
            guard case .keep(let cookie)? = Cookie.setting(field, from: URL(string: "https://\(host)/f")!, now: now, publicSuffixes: Self.list) else { return nil }
            return cookie
        }
        #expect(set("sid=x; Domain=co.uk", from: "a.evil.co.uk") == nil)
        #expect(set("sid=x; Domain=.github.io", from: "me.github.io") == nil)
        #expect(set("sid=x; Domain=foo.ck", from: "a.foo.ck") == nil)
        let own = set("sid=x; Domain=github.io", from: "github.io")
        #expect(own?.domain == "github.io" && own?.includesSubdomains == false)
        let site = set("sid=x; Domain=bank.co.uk", from: "www.bank.co.uk")
        #expect(site?.domain == "bank.co.uk" && site?.includesSubdomains == true)
        #expect(set("sid=x; Domain=www.ck", from: "a.www.ck")?.includesSubdomains == true)
        #expect(set("sid=x; Domain=127.0.0.1", from: "127.0.0.1")?.includesSubdomains == false)
    }

    /// Whatever host and `Domain`, a kept cookie that goes to other hosts never covers a public suffix.
    @Test func noKeptCookieCoversAPublicSuffix() async {
        let hosts = Gen.element(of: ["a.evil.co.uk", "www.bank.co.uk", "co.uk", "me.github.io", "github.io", "x.foo.ck", "a.www.ck", "example.com"]).map { $0 ?? "example.com" }
        let domains = Gen.element(of: ["co.uk", "uk", "bank.co.uk", "github.io", "me.github.io", "foo.ck", "www.ck", "ck", "com", "example.com", ""]).map { $0 ?? "" }
        await propertyCheck(input: hosts, domains) { host, domain in
            let field = domain.isEmpty ? "n=v" : "n=v; Domain=\(domain)"
            guard case .keep(let cookie)? = Cookie.setting(field, from: URL(string: "https://\(host)/f")!, now: 1_800_000_000, publicSuffixes: Self.list) else { return }
            if cookie.includesSubdomains { #expect(!Self.list.isPublicSuffix(cookie.domain), "\(field) from \(host): \(cookie)") }
            #expect(Cookie.domainMatches(host: host, domain: cookie.domain, includesSubdomains: cookie.includesSubdomains))
        }
    }

    /// A jar line for every site under a public suffix is dropped (curl and wget skip it); one for that host alone,
    /// or for a site, is kept.
    @Test func aJarLineForEverySiteUnderAPublicSuffixIsDropped() throws {
        let jar = try CookieJar.parse("com\tTRUE\t/\tFALSE\t0\ttld\tv7\n.co.uk\tTRUE\t/\tFALSE\t0\tuk\tv\ngithub.io\tFALSE\t/\tFALSE\t0\thost\tv\n.example.com\tTRUE\t/\tFALSE\t0\tsite\tv\n")
        let kept = CookieJar.withoutPublicSuffixDomains(jar, publicSuffixes: Self.list)
        #expect(kept.map(\.name) == ["host", "site"])
    }

    /// The system's list (Debian's `publicsuffix`, which scripts/test installs): read, and knows `co.uk`.
    @Test func theSystemsListIsRead() throws {
        let present = SystemPublicSuffixes.paths.contains { FileManager.default.isReadableFile(atPath: $0) }
        if !present {
            if ProcessInfo.processInfo.environment["CI"] != nil { Issue.record("no public suffix list: apt-get install publicsuffix") }
            return
        }
        #expect(SystemPublicSuffixes.list.isPublicSuffix("co.uk") && SystemPublicSuffixes.list.isPublicSuffix("github.io"))
        #expect(!SystemPublicSuffixes.list.isPublicSuffix("bbc.co.uk"))
    }
}
