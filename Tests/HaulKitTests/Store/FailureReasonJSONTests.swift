import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

/// Every typed reason survives the one JSON form it is stored and sent in.
@Suite struct FailureReasonJSONTests {
    static let reasons: [FailureReason] = [
        .destinationExists(path: "/d/a.iso"), .destinationNotAFile(path: "/d/link"), .destinationIsDirectory(path: "/d"),
        .partialOfAnotherURL(partialPath: "/d/a.iso.haul-part", url: "https://example.com/b"),
        .differsFromServer(path: "/d/a"), .cannotVerifyWithoutRanges(path: "/d/a"), .httpStatus(404, url: "https://example.com/a"),
        .checksumMismatch(path: "/d/a", expected: "sha256:00", actual: "sha256:11", alreadyAtPath: true),
        .busy, .proxyAuthenticationRequired, .unusableTLSFiles, .untrustedCertificate(server: "127.0.0.1:8443"),
        .insecureRedirect(target: "http://example.com/a"), .daemonNotRunning(socketPath: "/run/h.sock"),
        .unusableSocketPath("/run/h.sock"), .retriesExhausted(retries: 3), .interrupted, .unreachable(retries: 2),
        .endsAtSamePlace(retries: 4), .noSpace(path: "/d/a.iso.haul-part"), .proxyCredentialsRefused(proxy: "socks5://127.0.0.1:1080"),
        .proxyRefused(proxy: "http://127.0.0.1:3128", status: 403), .tooManyRedirects(limit: 10), .outputClosed,
        .unauthorizedThroughProxy(url: "http://example.com/a", proxy: "http://127.0.0.1:8888"),
        .appearedWhileDownloading(path: "/d/a.iso", partialPath: "/d/a.iso.haul-part"),
        .proxyAuthenticationRequired(proxy: "socks5://127.0.0.1:1080"),
        .longerThanServerFile(path: "/d/a", length: 300, serverLength: 200),
        .unfinishedBesideExisting(path: "/d/a.iso", partialPath: "/d/a.iso.haul-part"),
        .unknownPartialFile(partialPath: "/d/a.iso.haul-part"),
        .listedThroughLink(path: "/d/link"),
        .unauthorizedAfterRedirect(url: "https://b.example/a", givenFor: "https://a.example:8443"),
    ]

    @Test(arguments: reasons) func aReasonReadsBackAsItWasWritten(_ reason: FailureReason) throws {
        let error = HaulError(.network, "what happened", reason: reason)
        let text = try #require(FailureReasonJSON.encode(error))
        #expect(FailureReasonJSON.decode(text) == reason, "\(text)")
        #expect(FailureReasonJSON.decode(FailureReasonJSON.value(error)) == reason)
    }

    /// What earlier builds stored (the enum's synthesized JSON) reads as the same reason, and is written the same way.
    @Test func theStoredFormOfEarlierBuildsReadsAsTheSameReason() throws {
        let stored: [(String, FailureReason)] = [
            (#"{"httpStatus":{"_0":404,"url":"https://example.com/a"}}"#, .httpStatus(404, url: "https://example.com/a")),
            (#"{"busy":{}}"#, .busy),
            (#"{"unusableSocketPath":{"_0":"/run/h.sock"}}"#, .unusableSocketPath("/run/h.sock")),
            (#"{"retriesExhausted":{"retries":3}}"#, .retriesExhausted(retries: 3)),
            // The proxy is named when known; unknown, the reason is written as before it could be.
            (#"{"proxyAuthenticationRequired":{}}"#, .proxyAuthenticationRequired),
        ]
        for (text, reason) in stored {
            #expect(FailureReasonJSON.decode(text) == reason, "\(text)")
            let written = try #require(FailureReasonJSON.value(HaulError(.network, "m", reason: reason)))
            #expect(written == JSONValue.parse(Array(text.utf8)), "\(written.serialized)")
        }
        #expect(FailureReasonJSON.decode(#"{"aReasonOfANewerHaul":{}}"#) == nil)
    }

    /// A client of an earlier build reads the reasons added since as it can: one it does not know is none (its
    /// decode gives `nil`, so `.other`), and its error's message is still whole.
    @Test func clientsOfEarlierBuildsReadTheReasonsAddedSince() throws {
        /// The reasons as an earlier build declared them.
        enum Earlier: Decodable, Equatable { case proxyAuthenticationRequired, busy }
        let added: [FailureReason] = [
            .appearedWhileDownloading(path: "/d/a", partialPath: "/d/a.haul-part"),
            .longerThanServerFile(path: "/d/a", length: 3, serverLength: 2),
            .unauthorizedAfterRedirect(url: "https://b.example/a", givenFor: "https://a.example"),
        ]
        for reason in added {
            let text = try #require(FailureReasonJSON.encode(HaulError(.usage, "m", reason: reason)))
            #expect((try? JSONDecoder().decode(Earlier.self, from: Data(text.utf8))) == nil, "\(text)")
        }
        // The proxy named in `proxyAuthenticationRequired` is a member an earlier client skips: the same reason to it.
        let socks = HaulError(.network, "m", reason: .proxyAuthenticationRequired(proxy: "socks5://127.0.0.1:1080"))
        let named = try #require(FailureReasonJSON.encode(socks))
        #expect(FailureReasonJSON.value(socks) == JSONValue.parse(Array(#"{"proxyAuthenticationRequired":{"proxy":"socks5://127.0.0.1:1080"}}"#.utf8)))
        #expect(try JSONDecoder().decode(Earlier.self, from: Data(named.utf8)) == .proxyAuthenticationRequired)
    }

    /// A program compares reasons with `==` and reads what it needs; a reason says what it is in a log.
    @Test func reasonsCompareAndSayWhatTheyAre() {
        #expect(FailureReason.httpStatus(404, url: "u") == .httpStatus(404, url: "u"))
        #expect(FailureReason.httpStatus(404, url: "u") != .httpStatus(410, url: "u"))
        #expect(FailureReason.httpStatus(404, url: "u").httpStatus == 404)
        #expect(FailureReason.busy.httpStatus == nil)
        #expect(FailureReason.unauthorizedAfterRedirect(url: "u", givenFor: "https://a.example").httpStatus == 401)
        #expect(FailureReason.noSpace(path: "/d/a").path == "/d/a")
        #expect(FailureReason.partialOfAnotherURL(partialPath: "/d/p", url: "u").path == "/d/p")
        #expect(FailureReason.other.path == nil)
        for reason in Self.reasons {
            #expect(Self.reasons.filter { $0 == reason }.count == 1, "each reason equals itself only: \(reason)")
            #expect(!reason.description.isEmpty)
        }
        #expect(FailureReason.httpStatus(404, url: "u").description.contains("404"))
    }

    @Test func noReasonIsWrittenAsNothing() {
        #expect(FailureReasonJSON.encode(HaulError(.network, "what happened")) == nil)
    }
}
