import Foundation
import PropertyBased
import Testing
@testable import HaulCore

/// URL redaction as a class: whatever the URL's parts, every secret query value and any userinfo disappear from
/// what is shown, and nothing else changes.
@Suite struct RedactionPropertyTests {
    /// A query parameter of a generated URL.
    struct Parameter: Sendable, CustomStringConvertible {
        var name: String
        var value: String
        var secret: Bool
        var description: String { "\(name)=\(value)" }
    }

    /// A secret parameter's name as URLs spell it: any letter case, sometimes a dash percent-encoded.
    static let secretName = zip(Gen.element(of: Array(Redaction.secretQueryParameters)), Gen.bool.array(of: 40), Gen.bool)
        .map { (name: String?, upper: [Bool], encodeDash: Bool) -> String in
            let cased = String(zip(name ?? "sig", upper).map { $1 ? Character($0.uppercased()) : $0 })
            return encodeDash ? cased.replacingOccurrences(of: "-", with: "%2D") : cased
        }

    /// Values of secrets carry a marker that nothing else in a generated URL contains.
    static let secretValue = Gen.element(of: Array("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789%+/=._-~")).map { $0 ?? "A" }.string(of: 0...24)
        .map { "QQVAL" + $0 }

    static let plainName = Gen.lowercaseLetter.string(of: 1...10).filter { !Redaction.isSecretQueryParameter(Substring($0)) }
    static let plainValue = Gen.element(of: Array("abcdefxyz0123456789%._-~=")).map { $0 ?? "a" }.string(of: 0...12)

    static let parameter = zip(Gen.bool, secretName, secretValue, plainName, plainValue).map {
        (secret: Bool, secretName: String, secretValue: String, plainName: String, plainValue: String) -> Parameter in
        secret ? Parameter(name: secretName, value: secretValue, secret: true) : Parameter(name: plainName, value: plainValue, secret: false)
    }

    static let host = Gen.element(of: ["example.com", "bucket.s3.eu-west-1.amazonaws.com", "127.0.0.1:9000", "[::1]:8443", "storage.googleapis.com"])
        .map { $0 ?? "example.com" }
    static let path = Gen.lowercaseLetter.string(of: 0...8).array(of: 0...4).map { "/" + $0.joined(separator: "/") }

    /// A URL with these parts, and whether it has userinfo (`USERPASS` marks it).
    static func url(https: Bool, userinfo: Bool, host: String, path: String, parameters: [Parameter], fragment: String?) -> String {
        let query = parameters.isEmpty ? "" : "?" + parameters.map(\.description).joined(separator: "&")
        return (https ? "https" : "http") + "://" + (userinfo ? "user:USERPASS@" : "") + host + path + query
            + (fragment.map { "#" + $0 } ?? "")
    }

    @Test func noSecretValueOrUserinfoIsShownAndEverythingElseIsKept() async {
        await propertyCheck(input: Gen.bool, Gen.bool, Self.host, Self.path, Self.parameter.array(of: 0...6), Gen.lowercaseLetter.string(of: 0...6).optional) {
            https, userinfo, host, path, parameters, fragment in
            let text = Self.url(https: https, userinfo: userinfo, host: host, path: path, parameters: parameters, fragment: fragment)
            let shown = Redaction.url(text)
            #expect(!shown.contains("QQVAL"), "\(text) → \(shown)")
            #expect(!shown.contains("USERPASS"), "\(text) → \(shown)")
            // Every parameter is still there, in order: a secret one with its name and `***`, any other as it was.
            let expected = parameters.map { $0.secret ? "\($0.name)=\(Redaction.mask)" : $0.description }
            let query = parameters.isEmpty ? "" : "?" + expected.joined(separator: "&")
            let expectedURL = (https ? "https" : "http") + "://" + (userinfo ? "\(Redaction.mask)@" : "") + host + path + query
                + (fragment.map { "#" + $0 } ?? "")
            #expect(shown == expectedURL, "\(text)")
            #expect(Redaction.url(shown) == shown, "redacting twice changed \(shown)")
        }
    }

    @Test func aURLInsideFreeTextLosesItsSecretsToo() async {
        await propertyCheck(input: Gen.bool, Self.host, Self.path, Self.parameter.array(of: 1...6), Gen.element(of: [" ", "\"", "'", ")", "\n"])) {
            userinfo, host, path, parameters, after in
            let url = Self.url(https: true, userinfo: userinfo, host: host, path: path, parameters: parameters, fragment: nil)
            let message = "GET \(url)\(after ?? " ")failed (see also \(url))"
            let shown = Redaction.text(message)
            #expect(!shown.contains("QQVAL") && !shown.contains("USERPASS"), "\(message) → \(shown)")
            #expect(shown.hasPrefix("GET "), "\(shown)")
            for parameter in parameters where !parameter.secret {
                #expect(shown.contains(parameter.description), "\(parameter) lost in \(shown)")
            }
        }
    }

    @Test func aURLWithoutSecretsIsShownAsItIs() async {
        let plain = zip(Self.plainName, Self.plainValue).map { Parameter(name: $0, value: $1, secret: false) }
        await propertyCheck(input: Gen.bool, Self.host, Self.path, plain.array(of: 0...6)) { https, host, path, parameters in
            let url = Self.url(https: https, userinfo: false, host: host, path: path, parameters: parameters, fragment: nil)
            #expect(Redaction.url(url) == url)
            #expect(Redaction.text(url) == url)
        }
    }

    /// Any password, also one with `/`, `?`, `#`, `:` or `@` left unencoded (which makes the URL invalid, and is how
    /// such URLs reach an error message), also one starting with digits: nothing of it is shown, in the URL alone or
    /// inside a message. Left out: a URL a parser reads whole with the marked end of the password outside its
    /// userinfo (`u:80?x@h` is host `u`, port 80 and a query; `u:p@h?x@y`, a password `p`): shown as the parser
    /// reads it, as a request would be sent (see `Redaction.userinfoEnd`).
    @Test func aPasswordWithAnyCharactersIsNeverShown() async {
        let digits = Gen.element(of: Array("0123456789")).map { $0 ?? "0" }.string(of: 0...3)
        let rest = Gen.element(of: Array("abcXYZ0189/?#:@%)(=&")).map { $0 ?? "a" }.string(of: 0...16)
        let separator = Gen.element(of: ["", "/", "?", "#"]).map { $0 ?? "" }
        let password = zip(digits, separator, rest).map { $0 + $1 + "PW" + $2 + "WP" }
        let user = Gen.element(of: Array("alice0189.-_")).map { $0 ?? "a" }.string(of: 0...6)
        await propertyCheck(count: 2_000, input: Gen.bool, user, password, Self.host, Self.path) { https, user, password, host, path in
            let url = (https ? "https" : "http") + "://" + user + ":" + password + "@" + host + path
            if let parsed = URL(string: url), parsed.host != nil, !(parsed.password(percentEncoded: true) ?? "").hasSuffix("WP") { return }
            for shown in [Redaction.url(url), Redaction.text("\"\(url)\" is not a valid URL"), Redaction.text("proxy \(url): refused")] {
                #expect(!shown.contains("PW") && !shown.contains("WP"), "\(url) → \(shown)")
            }
        }
    }

    /// A URL without `://` to find its authority by (a proxy given as `user:pw@host:port`, `http:/u:pw@host`): all
    /// before its last `@` is masked, wherever such a string is shown as a URL.
    @Test(arguments: ["user:SEKRET@proxy:3128", "http:/u:SEKRET@host/x", "u:SEK/RET@host.example/x?sig=SEKRET"])
    func aURLWithoutItsSchemeSeparatorStillHidesItsPassword(_ text: String) {
        let shown = Redaction.url(text)
        #expect(!shown.contains("SEKRET") && !shown.contains("RET"), "\(shown)")
        #expect(shown.hasPrefix(Redaction.mask + "@"), "\(shown)")
        #expect(Redaction.url(shown) == shown)
    }

    @Test func anyTextIsRedactedWithoutTrappingAndOnlyOnce() async {
        let alphabet = Array("htps:/?&#=@ %\"'()xyzSIGsigTOKENtoken_-.\t\n")
        await propertyCheck(count: 500, input: Gen.element(of: alphabet).map { $0 ?? "x" }.string(of: 0...60)) { text in
            let url = Redaction.url(text), free = Redaction.text(text)
            #expect(Redaction.url(url) == url, "\(text)")
            #expect(Redaction.text(free) == free, "\(text)")
        }
    }

    @Test(arguments: [
        ("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20260101%2Fus-east-1&X-Amz-Signature=abc123&X-Amz-Security-Token=tok",
         "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Security-Token=***"),
        ("https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=00ff", "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=***"),
        ("https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=abc%3D", "https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=***"),
        ("https://h/f?token=t&access_token=a&signature=s&page=2#token=x", "https://h/f?token=***&access_token=***&signature=***&page=2#token=***"),
        ("https://u:p@h/f?Signature=s&Key-Pair-Id=K", "https://***@h/f?Signature=***&Key-Pair-Id=K"),
        ("https://h/f?tokens=1&sig", "https://h/f?tokens=1&sig"),
        // Alibaba's and Tencent's CDN signatures; `;` as a separator, and a path's parameters (Java's session id).
        ("https://cdn.example/v.mp4?auth_key=1700000000-0-0-abc", "https://cdn.example/v.mp4?auth_key=***"),
        ("https://h/f?a=1;token=t;b=2", "https://h/f?a=1;token=***;b=2"),
        ("https://h/app/file.bin;jsessionid=ABC?x=1", "https://h/app/file.bin;jsessionid=***?x=1"),
        ("https://h/f.bin;jsessionid=ABC", "https://h/f.bin;jsessionid=***"),
        // A name with `-` where the list has `_`, and an OAuth authorization code.
        ("https://h/f?access-token=a&API-Key=k&code=c&x-api-key=z", "https://h/f?access-token=***&API-Key=***&code=***&x-api-key=***"),
        ("https://h/f?token=a?b", "https://h/f?token=***"),
    ])
    func signedURLsOfEachServiceAreMasked(input: String, shown: String) {
        #expect(Redaction.url(input) == shown)
        #expect(Redaction.text("failed: \(input) (retrying)") == "failed: \(shown) (retrying)")
    }
}
