import Foundation
import HaulTestSupport
import NIOConcurrencyHelpers
import Testing
@testable import HaulCore
@testable import HaulKit

/// Downloads behind a "download gate": a cookie the server sets (on a redirect, or on the file's own first answer)
/// that every later request of the download needs. Without it the file's URL answers a login page (as Google Drive
/// does) or 403. Every request of the download — its segments, its retries, its resume in a later run — must carry it,
/// as aria2c, wget and curl -L -b '' send it.
@Suite struct DownloadGateTests {
    let body = TestData.bytes(3 << 20, seed: 35)
    static let page = Array("<html><body>Please log in</body></html>\n".utf8)

    /// What the file's URL answers a request without the gate's cookie.
    enum Refusal: CaseIterable, CustomStringConvertible {
        /// 200 with a small HTML page: what a careless client would save as the file.
        case loginPage
        /// 403 Forbidden.
        case forbidden

        var plan: ResponsePlan {
            switch self {
            case .loginPage: return ResponsePlan(status: 200, headers: [("Content-Type", "text/html")], body: DownloadGateTests.page)
            case .forbidden: return .text(403, "forbidden")
            }
        }

        var description: String { self == .loginPage ? "login page" : "403" }
    }

    static func hasCookie(_ request: RecordedRequest) -> Bool {
        (request.header("Cookie") ?? "").components(separatedBy: "; ").contains("sid=ok")
    }

    /// `/gate` sets the cookie and sends the client to `/file`, which serves `resource` only with it.
    func serveGate(_ server: TestServer, _ resource: Resource, refusal: Refusal) {
        server.route("/gate") { _ in
            ResponsePlan(status: 302, headers: [("Location", "/file"), ("Set-Cookie", "sid=ok; Path=/; HttpOnly")])
        }
        server.route("/file") { request in
            Self.hasCookie(request) ? resource.response(to: request) : refusal.plan
        }
    }

    func options(_ url: String, _ path: String, segments: Int, retries: Int = 5) throws -> DownloadOptions {
        var options = try testOptions(url, .file(path), retries: retries)
        options.segments = segments
        options.minSegmentSize = 128 * 1024
        return options
    }

    /// In one run: the extra connections of a segmented download and the retry after a dropped connection carry the
    /// cookie the gate's redirect set, so every request to the file gets it, and the file is the file.
    @Test(arguments: Refusal.allCases, [1, 4])
    func everyRequestOfARunCarriesTheGatesCookie(refusal: Refusal, segments: Int) async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"g1\"")
            resource.faults.dropAfterBytes = 200_000
            resource.faults.dropOnRequests = 1
            serveGate(server, resource, refusal: refusal)
            try await engine.download(try options(server.url("/gate"), sandbox.path("f"), segments: segments))
            #expect(sandbox.contents("f") == body)
            let requests = server.requests("/file")
            #expect(requests.count >= 2, "the dropped connection was asked again")
            #expect(requests.allSatisfy(Self.hasCookie), "\(requests.map { $0.header("Range") ?? "-" })")
        }
    }

    /// An interrupted download continued by a later run (whose cookies were not kept) goes through the gate again
    /// rather than straight to the URL it was led to: the bytes held are kept, and the login page never becomes the
    /// file.
    @Test(arguments: Refusal.allCases, [1, 4])
    func aResumeInANewRunGoesThroughTheGateAgain(refusal: Refusal, segments: Int) async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"g2\"")
            resource.faults.dropAfterBytes = 400_000
            serveGate(server, resource, refusal: refusal)
            let path = sandbox.path("f")
            // The first run gets 400,000 bytes on each connection, then its connections drop and it has no retries left.
            await expectHaulError(.network) {
                _ = try await engine.download(try options(server.url("/gate"), path, segments: segments, retries: 0))
            }
            let held = try #require(sandbox.records().first)
            #expect(held.finalURL == server.url("/file"))
            #expect(held.offset > 0 || held.segments?.contains { $0.done > 0 } == true)

            resource.faults.dropAfterBytes = nil
            serveGate(server, resource, refusal: refusal)
            let gateBefore = server.requests("/gate").count
            let result = try await engine.download(try options(server.url("/gate"), path, segments: segments))
            #expect(sandbox.contents("f") == body)
            #expect(result.fetchedBytes < Int64(body.count), "the bytes held were kept")
            #expect(server.requests("/gate").count > gateBefore)
            #expect(server.requests("/file").allSatisfy(Self.hasCookie))
        }
    }

    /// No redirect: the file's own first answer sets the cookie (an anti-leech cookie) and its range requests need it.
    @Test func aCookieTheFilesFirstAnswerSetsGoesWithItsSegments() async throws {
        try await withHarness { server, engine, sandbox in
            let resource = Resource(body: body, etag: "\"g3\"")
            server.route("/file") { request in
                guard Self.hasCookie(request) || request.header("Range") == "bytes=0-" else { return .text(403, "no") }
                var plan = resource.response(to: request)
                plan.headers.append(("Set-Cookie", "sid=ok; Path=/"))
                return plan
            }
            let log = EventLog()
            try await engine.download(try options(server.url("/file"), sandbox.path("f"), segments: 4), events: log.append)
            #expect(sandbox.contents("f") == body)
            let requests = server.requests("/file")
            #expect(requests.count > 1)
            #expect(requests.dropFirst().allSatisfy(Self.hasCookie))
            #expect(log.restarts.isEmpty, "\(log.restarts)")
        }
    }

    /// A link good for one request (`/mint` sends each request to a new one): the extra connections are refused, and
    /// the download goes on over one connection from the URL given instead of failing.
    @Test func aSegmentRefusedWhereTheFirstRequestWasNotFallsBackToOneConnection() async throws {
        try await withHarness { server, engine, sandbox in
            let resource = Resource(body: body, etag: "\"g4\"")
            let used = NIOLockedValueBox<Set<String>>([])
            server.route("/mint") { request in redirectPlan(to: "/once?t=\(request.index)") }
            server.route("/once") { request in
                let fresh = used.withLockedValue { $0.insert(request.uri).inserted }
                return fresh ? resource.response(to: request) : .text(403, "spent")
            }
            let log = EventLog()
            try await engine.download(try options(server.url("/mint"), sandbox.path("f"), segments: 4), events: log.append)
            #expect(sandbox.contents("f") == body)
            #expect(server.requests("/mint").count >= 2, "started again from the URL given")
        }
    }

    /// Within a run, a URL Haul was led to that now sends another file (a 200 of other length and validators, here
    /// an expired link's page) never replaces the bytes held: the URL given is asked again, and its answer continues them.
    @Test func anotherFileFromAURLHaulWasLedToNeverReplacesHeldBytes() async throws {
        try await withHarness { server, engine, sandbox in
            var resource = Resource(body: body, etag: "\"g5\"")
            resource.faults.dropAfterBytes = 300_000
            resource.faults.dropOnRequests = 1
            let served = resource
            server.route("/start") { request in redirectPlan(to: "/final?t=\(request.index)") }
            server.route("/final") { request in
                // The first link works once; asked again, it has expired and answers a page.
                request.uri.hasSuffix("t=0") && request.index > 0 ? Refusal.loginPage.plan : served.response(to: request)
            }
            let log = EventLog()
            let result = try await engine.download(try options(server.url("/start"), sandbox.path("f"), segments: 1), events: log.append)
            #expect(sandbox.contents("f") == body)
            #expect(log.restarts.isEmpty, "\(log.restarts)")
            #expect(result.fetchedBytes < Int64(body.count) + 300_000)
            #expect(server.requests("/start").count == 2)
            // The bytes held continued: a resume from what haul held when the connection dropped (the 300,000 bytes
            // sent, or fewer under load, when some were still unread as it dropped), never from 0.
            let range = server.requests("/final").last?.header("Range") ?? "-"
            let start = Int(range.dropFirst("bytes=".count).prefix { $0.isNumber }) ?? 0
            #expect(range.hasPrefix("bytes=") && start > 0 && start <= 300_000 - Int(ResumePolicy.overlapLength), "\(range)")
        }
    }
}
