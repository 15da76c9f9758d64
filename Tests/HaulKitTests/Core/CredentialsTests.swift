import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct CredentialsTests {
    @Test func userinfoAndDashUBecomeBasicAuthentication() throws {
        let url = try UserInput.url("https://al%40ice:p%3Ass@example.com:8443/f")
        let credentials = try #require(Credentials(userinfoOf: url))
        #expect(credentials == Credentials(user: "al@ice", password: "p:ss"))
        #expect(credentials.authorization == "Basic " + Data("al@ice:p:ss".utf8).base64EncodedString())
        #expect(Credentials.strippingUserinfo(url).absoluteString == "https://example.com:8443/f")
        #expect(Credentials(userinfoOf: try UserInput.url("https://example.com/f")) == nil)
        #expect(try Credentials(parsing: "bob:a:b") == Credentials(user: "bob", password: "a:b"))
        #expect(throws: InputError.self) { try Credentials(parsing: "nocolon") }
        #expect(throws: InputError.self) { try Credentials(parsing: ":pw") }
    }

    @Test func netrcFindsTheHostsEntryElseTheDefault() {
        let text = """
        machine other.example login o password op
        machine Example.COM
            login "me here" password se\\ cret
        macdef init
        cd /pub

        default login anon password guest
        """
        #expect(Netrc.credentials(for: "example.com", in: text) == Credentials(user: "me here", password: "se cret"))
        #expect(Netrc.credentials(for: "other.example", in: text) == Credentials(user: "o", password: "op"))
        #expect(Netrc.credentials(for: "elsewhere", in: text) == Credentials(user: "anon", password: "guest"))
        #expect(Netrc.credentials(for: "x", in: "machine y login a password b") == nil)
        #expect(Netrc.credentials(for: "x", in: "") == nil)
    }

    /// A URL that names its user (`https://u2@host/`) takes that user's password from the file, as curl and wget do;
    /// another user's entry, or the default of another login, gives none.
    @Test func netrcFindsTheEntryOfTheURLsUser() {
        let text = """
        machine host.example login u1 password p1
        machine host.example login u2 password p2
        default login anon password guest
        """
        #expect(Netrc.credentials(for: "host.example", login: "u2", in: text) == Credentials(user: "u2", password: "p2"))
        #expect(Netrc.credentials(for: "host.example", login: "u1", in: text) == Credentials(user: "u1", password: "p1"))
        #expect(Netrc.credentials(for: "host.example", login: "u3", in: text) == nil)
        #expect(Netrc.credentials(for: "elsewhere", login: "anon", in: text) == Credentials(user: "anon", password: "guest"))
        #expect(Netrc.credentials(for: "elsewhere", login: "u1", in: text) == nil)
        #expect(Netrc.credentials(for: "host.example", in: text) == Credentials(user: "u1", password: "p1"))
    }

    /// The logins a redirect target may get: each `machine` entry's, the one ``Netrc/credentials(for:login:in:)``
    /// gives its host, by lower-cased host; never `default`'s, nor an entry without a login.
    @Test func netrcLoginsAreEachMachinesOwnEntryAndNeverTheDefault() {
        let texts = [
            "machine A.example login a password pa\nmachine b.example login b password pb\nmachine a.example login a2 password x\n",
            "default login anon password guest\nmachine c.example login c password pc",
            "machine d.example password nologin\nmachine e.example login e\nmachine g.example login g password pg",
            "",
        ]
        for text in texts {
            let logins = Netrc.logins(in: text)
            for (host, login) in logins {
                #expect(host == host.lowercased())
                #expect(Netrc.credentials(for: host, in: text) == login, "\(host) in \(text)")
            }
            #expect(!logins.values.contains(Credentials(user: "anon", password: "guest")))
        }
        #expect(Netrc.logins(in: texts[0]) == ["a.example": Credentials(user: "a", password: "pa"), "b.example": Credentials(user: "b", password: "pb")])
        #expect(Netrc.logins(in: texts[1]) == ["c.example": Credentials(user: "c", password: "pc")])
        #expect(Set(Netrc.logins(in: texts[2]).keys) == ["e.example", "g.example"])
    }
}

@Suite struct CredentialsIntegrationTests {
    @Test func urlCredentialsGoToTheirOriginOnlyAndNeverAfterARedirectElsewhere() async throws {
        try await withHarness { server, engine, sandbox in
            let other = try await TestServer.start()
            defer { Task { try? await other.shutdown() } }
            let body = TestData.bytes(50_000, seed: 150)
            other.serve("/f", Resource(body: body, etag: "\"o\""))
            server.route("/start") { _ in redirectPlan(to: other.url("/f")) }
            let url = server.url("/start").replacingOccurrences(of: "http://", with: "http://alice:s3cret@")
            try await engine.download(try testOptions(url, .file(sandbox.path("f"))))
            #expect(sandbox.contents("f") == body)
            let expected = Credentials(user: "alice", password: "s3cret").authorization
            #expect(server.requests("/start").first?.header("Authorization") == expected)
            #expect(other.requests("/f").allSatisfy { $0.header("Authorization") == nil }, "credentials followed a redirect to another origin")
        }
    }
}
