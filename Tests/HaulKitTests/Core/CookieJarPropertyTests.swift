import Foundation
import PropertyBased
import Testing
@testable import HaulCore

/// The Netscape cookie jar and RFC 6265 matching, as classes: any jar written as curl and wget write it reads back
/// as it was; a cookie goes only where its domain, path, secure flag and expiry allow.
@Suite struct CookieJarPropertyTests {
    static let label = Gen.lowercaseLetter.string(of: 1...8)
    static let domain = label.array(of: 1...3).map { $0.joined(separator: ".") + ".test" }
    static let segment = Gen.element(of: Array("abcxyz019-_.~")).map { $0 ?? "a" }.string(of: 1...6)
    static let path = segment.array(of: 0...3).map { "/" + $0.joined(separator: "/") }
    static let name = Gen.element(of: Array("abcdefXYZ_-0189")).map { $0 ?? "a" }.string(of: 1...10)
    static let value = Gen.element(of: Array("abcXYZ019%+/=._-~:!*'()")).map { $0 ?? "v" }.string(of: 0...20)

    static let cookie = zip(domain, Gen.bool, path, Gen.bool, Gen.int64(in: 0...4_000_000_000), name, value).map {
        Cookie(domain: $0, includesSubdomains: $1, path: $2, secure: $3, expires: $4, name: $5, value: $6)
    }

    /// A jar's text for `cookies` as curl writes it (`#HttpOnly_` for some, a leading dot for subdomain cookies),
    /// with comments, blank lines and either line ending in between.
    static func jarText(_ cookies: [Cookie], httpOnly: [Bool], crlf: Bool) -> String {
        var lines = ["# Netscape HTTP Cookie File", "# https://curl.se/docs/http-cookies.html", ""]
        for (index, cookie) in cookies.enumerated() {
            let domain = (cookie.includesSubdomains ? "." : "") + cookie.domain
            let prefix = index < httpOnly.count && httpOnly[index] ? "#HttpOnly_" : ""
            lines.append(prefix + [domain, cookie.includesSubdomains ? "TRUE" : "FALSE", cookie.path, cookie.secure ? "TRUE" : "FALSE",
                                   String(cookie.expires), cookie.name, cookie.value].joined(separator: "\t"))
            if index % 3 == 1 { lines.append("# a comment with\ttabs\tin it") }
        }
        return lines.joined(separator: crlf ? "\r\n" : "\n") + (crlf ? "\r\n" : "\n")
    }

    @Test func anyJarReadsBackAsItWasWritten() async throws {
        await propertyCheck(input: Self.cookie.array(of: 0...12), Gen.bool.array(of: 12), Gen.bool) { cookies, httpOnly, crlf in
            let text = Self.jarText(cookies, httpOnly: httpOnly, crlf: crlf)
            #expect((try? CookieJar.parse(text)) == cookies, "\(text)")
        }
    }

    @Test func aMalformedLineIsNamedByNumberNeverByItsValue() async {
        await propertyCheck(input: Self.cookie.array(of: 0...5), Self.value, Gen.int(in: 0...3)) { cookies, secret, kind in
            let marker = "SECRETVALUE" + secret
            let bad = ["example.test\tMAYBE\t/\tFALSE\t0\tn\t\(marker)", "example.test\tTRUE\t/\tFALSE\tsoon\tn\t\(marker)",
                       "only\tthree\t\(marker)", "example.test\tTRUE\t/\tFALSE\t0\tn\t\(marker)\u{1}"][kind]
            let text = Self.jarText(cookies, httpOnly: [], crlf: false) + bad + "\n"
            do {
                _ = try CookieJar.parse(text)
                Issue.record("accepted \(bad)")
            } catch let error as InputError {
                let lineNumber = text.split(separator: "\n", omittingEmptySubsequences: false).count - 1
                #expect(error.message.contains("line \(lineNumber) "), "\(error.message)")
                #expect(!error.message.contains("SECRETVALUE"), "\(error.message)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test func aDomainCookieReachesItsSubdomainsAndAHostOnlyCookieOnlyItsHost() async {
        await propertyCheck(input: Self.domain, Self.label, Self.label, Gen.bool) { domain, sub, other, upper in
            let host = upper ? (sub + "." + domain).uppercased() : sub + "." + domain
            #expect(Cookie.domainMatches(host: domain, domain: domain, includesSubdomains: false))
            #expect(Cookie.domainMatches(host: domain.uppercased() + ".", domain: "." + domain, includesSubdomains: true))
            #expect(Cookie.domainMatches(host: host, domain: domain, includesSubdomains: true), "\(host)")
            #expect(!Cookie.domainMatches(host: host, domain: domain, includesSubdomains: false), "\(host)")
            // A host that only ends with the same letters is another site.
            #expect(!Cookie.domainMatches(host: other + domain, domain: domain, includesSubdomains: true))
            // A parent never gets a subdomain's cookie.
            #expect(!Cookie.domainMatches(host: domain, domain: sub + "." + domain, includesSubdomains: true))
        }
    }

    @Test func anAddressIsMatchedOnlyByItself() async {
        await propertyCheck(input: Gen.int(in: 0...255).array(of: 4), Gen.int(in: 0...255)) { bytes, other in
            let address = bytes.map(String.init).joined(separator: ".")
            let tail = bytes.dropFirst().map(String.init).joined(separator: ".")
            #expect(Cookie.domainMatches(host: address, domain: address, includesSubdomains: true))
            #expect(!Cookie.domainMatches(host: "\(other).\(address)", domain: address, includesSubdomains: true))
            #expect(!Cookie.domainMatches(host: address, domain: tail, includesSubdomains: true), "\(address) matched \(tail)")
        }
    }

    @Test func aPathCookieReachesItsPathAndBelowOnly() async {
        await propertyCheck(input: Self.path, Self.segment, Self.segment) { base, below, glued in
            let cookiePath = base
            #expect(Cookie.pathMatches(requestPath: base, cookiePath: cookiePath))
            #expect(Cookie.pathMatches(requestPath: base, cookiePath: "/"))
            let child = (base.hasSuffix("/") ? base : base + "/") + below
            #expect(Cookie.pathMatches(requestPath: child, cookiePath: cookiePath), "\(child) under \(cookiePath)")
            if cookiePath != "/" {
                // "/docs" does not cover "/docsets".
                #expect(!Cookie.pathMatches(requestPath: cookiePath + glued, cookiePath: cookiePath), "\(cookiePath + glued)")
                // Nor a parent path.
                #expect(!Cookie.pathMatches(requestPath: String(cookiePath[..<(cookiePath.lastIndex(of: "/") ?? cookiePath.startIndex)]) + "/", cookiePath: cookiePath + "/x"))
            }
        }
    }

    @Test func theHeaderCarriesExactlyTheCookiesThatMatchLongestPathFirst() async {
        await propertyCheck(input: Self.cookie.array(of: 0...10), Gen.bool, Self.path, Gen.int64(in: 0...4_000_000_000)) { jar, https, path, now in
            let host = jar.first.map { ($0.includesSubdomains ? "www." : "") + $0.domain } ?? "none.test"
            guard let url = URL(string: (https ? "https://" : "http://") + host + path) else {
                Issue.record("no URL for \(host)\(path)")
                return
            }
            let header = Cookie.header(for: url, from: jar, now: now)
            let expected = jar.filter { $0.matches(host: host, path: path, https: https, now: now) }
            let sent = header?.components(separatedBy: "; ") ?? []
            // Same-named cookies of one domain and path collapse to the last; all others are sent.
            var unique: [Cookie] = []
            for cookie in expected {
                unique.removeAll { $0.name == cookie.name && $0.path == cookie.path && $0.domain == cookie.domain }
                unique.append(cookie)
            }
            // Longest path first; cookies of equal paths in the jar's order.
            let ordered = unique.enumerated().sorted { a, b in
                a.element.path.count != b.element.path.count ? a.element.path.count > b.element.path.count : a.offset < b.offset
            }.map { "\($0.element.name)=\($0.element.value)" }
            #expect(sent == ordered, "\(header ?? "nil")")
            #expect(unique.allSatisfy { https || !$0.secure }, "a secure cookie over http")
            #expect(unique.allSatisfy { $0.expires == 0 || $0.expires > now }, "an expired cookie")
        }
    }

    @Test func anyTextIsReadWithoutTrapping() async {
        await propertyCheck(count: 300, input: Gen.element(of: Array("\t\n\r#TRUEFALSE/.a=;0123 \u{1}")).map { $0 ?? "a" }.string(of: 0...80)) { text in
            if let cookies = try? CookieJar.parse(text) {
                for cookie in cookies {
                    #expect(!cookie.name.isEmpty && !cookie.domain.isEmpty && cookie.path.hasPrefix("/"))
                    #expect(CookieJar.isHeaderSafe(cookie.name) && CookieJar.isHeaderSafe(cookie.value))
                }
            }
        }
    }

    @Test func namedPairsAreForTheURLsHostOnly() throws {
        let cookies = try CookieJar.parsePairs("session=abc; theme = dark ;", host: "Example.test")
        #expect(cookies.map(\.name) == ["session", "theme"])
        #expect(cookies.allSatisfy { $0.domain == "example.test" && !$0.includesSubdomains && $0.path == "/" && !$0.secure })
        #expect(Cookie.header(for: URL(string: "http://example.test/a/b")!, from: cookies, now: 0) == "session=abc; theme=dark")
        #expect(Cookie.header(for: URL(string: "http://www.example.test/")!, from: cookies, now: 0) == nil)
        #expect(throws: InputError.self) { try CookieJar.parsePairs("=novalue", host: "h") }
        #expect(throws: InputError.self) { try CookieJar.parsePairs("a=b\r\nX-Evil: 1", host: "h") }
    }

    @Test func theCookieDescriptionNeverShowsItsValue() {
        let cookie = Cookie(domain: "example.test", includesSubdomains: true, path: "/", secure: true, expires: 0, name: "sid", value: "hunter2")
        #expect(!"\(cookie)".contains("hunter2"))
    }
}
