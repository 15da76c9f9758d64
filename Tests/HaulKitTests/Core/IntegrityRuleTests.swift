import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

/// The rules that keep a resumed file one version: overlap for bytes another URL wrote, the strong ETag a
/// continuing response must repeat, and the checks of a restored segmented download's held bytes.
@Suite struct IntegrityRuleTests {
    let strong = Validators(entityTag: EntityTag("\"v1\""), lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
    let dated = Validators(lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")

    func head(_ status: Int, _ fields: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, headers: HTTPFields(fields.map { HTTPFields.Field(name: $0.0, value: $0.1) }))
    }

    @Test func bytesOfAnotherURLAreComparedEvenWithAStrongETag() {
        let point = ResumePoint(offset: 100_000, validators: strong, totalLength: 200_000)
        let plan = ResumePolicy.plan(for: point, verifyOverlap: true)
        #expect(plan == .range(start: 100_000 - ResumePolicy.overlapLength, overlap: ResumePolicy.overlapLength, ifRange: "\"v1\""))
        // And so are this URL's own: a strong ETag does not vouch for the bytes.
        #expect(ResumePolicy.plan(for: point) == plan)
    }

    @Test func aContinuationWithoutTheStrongETagIsNotAppended() {
        let point = ResumePoint(offset: 40, validators: strong, totalLength: 100)
        let plan = RequestPlan.range(start: 40, overlap: 0, ifRange: "\"v1\"")
        let missing = ResumePolicy.decide(plan: plan, point: point, response: head(206, [("Content-Range", "bytes 40-99/100"), ("Content-Length", "60")]))
        guard case .restart(.resourceChanged) = missing else { Issue.record("appended without the ETag: \(missing)"); return }
        let weakened = ResumePolicy.decide(plan: plan, point: point, response: head(206, [
            ("Content-Range", "bytes 40-99/100"), ("Content-Length", "60"), ("ETag", "W/\"v1\"")]))
        guard case .restart(.resourceChanged) = weakened else { Issue.record("a weak ETag vouched: \(weakened)"); return }
        let repeated = ResumePolicy.decide(plan: plan, point: point, response: head(206, [
            ("Content-Range", "bytes 40-99/100"), ("Content-Length", "60"), ("ETag", "\"v1\"")]))
        guard case .append(_, 60, 0) = repeated else { Issue.record("the repeated ETag was refused: \(repeated)"); return }
    }

    @Test func aSegmentRangeMustRepeatTheStrongETag() {
        let point = ResumePoint(offset: 500, validators: strong, totalLength: 1000)
        let plan = RequestPlan.range(start: 500, overlap: 0, ifRange: "\"v1\"", last: 749)
        let changed = ResumePolicy.decide(plan: plan, point: point, response: head(206, [
            ("Content-Range", "bytes 500-749/1000"), ("ETag", "\"v2\"")]))
        guard case .restart(.resourceChanged) = changed else { Issue.record("\(changed)"); return }
        let silent = ResumePolicy.decide(plan: plan, point: point, response: head(206, [("Content-Range", "bytes 500-749/1000")]))
        guard case .restart(.resourceChanged) = silent else { Issue.record("\(silent)"); return }
    }

    @Test func withoutAStrongETagTheOverlapDecides() {
        // Last-Modified only, same date: nothing in the head differs; the overlap is compared before appending.
        let point = ResumePoint(offset: 100, validators: dated, totalLength: 1000)
        let plan = ResumePolicy.plan(for: point)
        let decision = ResumePolicy.decide(plan: plan, point: point, response: head(206, [
            ("Content-Range", "bytes 0-999/1000"), ("Last-Modified", dated.lastModified!)]))
        guard case .append(_, 1000, 100) = decision else { Issue.record("\(decision)"); return }
    }

    @Test func heldRunsJoinAdjacentWrittenBytes() throws {
        let segments = [
            Segment(id: 0, start: 0, end: 100, done: 100),
            Segment(id: 1, start: 100, end: 200, done: 30),
            Segment(id: 2, start: 200, end: 300, done: 0),
            Segment(id: 3, start: 300, end: 400, done: 100),
            Segment(id: 4, start: 400, end: 500, done: 10),
        ]
        let plan = try #require(SegmentPlan(restoring: segments, total: 500, minSegmentSize: 1))
        #expect(plan.heldRuns == [0..<130, 300..<410])
        #expect(plan.heldRuns.reduce(0) { $0 + Int64($1.count) } == plan.doneBytes)
        let fresh = SegmentPlan(total: 500, parts: 4, minSegmentSize: 1)
        #expect(fresh.heldRuns.isEmpty)
    }

    @Test func everyHeldRunGetsOneCheckOfItsLastBytes() {
        let big = ResumePolicy.overlapLength * 3
        let checks = ResumePolicy.verificationPlans(for: [0..<10, 1000..<(1000 + big)], validators: dated)
        #expect(checks.count == 2)
        #expect(checks[0].plan == .range(start: 0, overlap: 10, ifRange: dated.lastModified, last: 9))
        #expect(checks[0].point == 10)
        let end = 1000 + big
        #expect(checks[1].plan == .range(start: end - ResumePolicy.overlapLength, overlap: ResumePolicy.overlapLength, ifRange: dated.lastModified, last: end - 1))
        #expect(checks[1].plan.headers["Range"] == "bytes=\(end - ResumePolicy.overlapLength)-\(end - 1)")
    }

    @Test func aCheckIsAnsweredByItsExactRange() {
        let checks = ResumePolicy.verificationPlans(for: [0..<(1 << 20)], validators: dated)
        let check = checks[0]
        let point = ResumePoint(offset: check.point, validators: dated, totalLength: 4 << 20)
        let start = check.plan.start, last = check.plan.last ?? -1
        let decision = ResumePolicy.decide(plan: check.plan, point: point, response: head(206, [
            ("Content-Range", "bytes \(start)-\(last)/\(4 << 20)"), ("Last-Modified", dated.lastModified!)]))
        guard case .append(_, let length, let overlap) = decision else { Issue.record("\(decision)"); return }
        #expect(length == overlap)
        let ignored = ResumePolicy.decide(plan: check.plan, point: point, response: head(200, [("Content-Length", "\(4 << 20)")]))
        guard case .writeWhole = ignored else { Issue.record("\(ignored)"); return }
    }
}

@Suite struct RedactionTests {
    @Test(arguments: [
        ("https://user:secret@example.com/a?b=c", "https://***@example.com/a?b=c"),
        ("http://token@127.0.0.1:8080/x", "http://***@127.0.0.1:8080/x"),
        ("https://example.com/a@b", "https://example.com/a@b"),
        ("https://example.com/path?q=a@b", "https://example.com/path?q=a@b"),
        ("https://a:b@c@example.com/", "https://***@example.com/"),
        ("not a url", "not a url"),
    ])
    func urlUserinfoIsMasked(input: String, shown: String) {
        #expect(Redaction.url(input) == shown)
    }

    @Test func credentialHeadersAreMasked() {
        #expect(Redaction.headerValue(name: "Authorization", value: "Bearer abc") == "***")
        #expect(Redaction.headerValue(name: "cookie", value: "s=1") == "***")
        #expect(Redaction.headerValue(name: "Proxy-Authorization", value: "Basic x") == "***")
        #expect(Redaction.headerValue(name: "Accept", value: "*/*") == "*/*")
    }

    @Test func userinfoInsideFreeTextIsMasked() {
        let text = Redaction.text("connecting to https://bob:hunter2@example.com/f failed (see http://x:y@h/)")
        #expect(!text.contains("hunter2"))
        #expect(!text.contains("x:y"))
        #expect(text == "connecting to https://***@example.com/f failed (see http://***@h/)")
    }
}

@Suite struct URLCheckTests {
    @Test(arguments: [
        "http://127.0.0.1:99999/x", "http://[::1]:99999/x", "http://127.0.0.1:0/x", "https://h:65536/",
        "http://h:123456789012345678901234567890/", "ftp://h/x", "http:///x",
    ])
    func refusesWhatTheNetworkLayerCannotTake(_ text: String) {
        if let url = URL(string: text) { #expect(URLCheck.problem(url) != nil, "\(text)") }
        #expect(throws: InputError.self) { try UserInput.url(text) }
    }

    @Test(arguments: ["http://127.0.0.1:1/x", "https://[::1]:65535/x", "http://example.com/a:b", "https://u:p@h:8443/f?x=1:2"])
    func acceptsValidURLs(_ text: String) throws {
        let url = try UserInput.url(text)
        #expect(URLCheck.problem(url) == nil)
    }

    @Test func aRedirectToABadPortIsAnInvalidLocation() throws {
        let from = try UserInput.url("http://127.0.0.1:8080/a")
        let result = RedirectPolicy().follow(from: from, location: "http://127.0.0.1:99999/x", visited: [from])
        #expect(result == .failure(.invalidLocation("http://127.0.0.1:99999/x")))
    }
}

@Suite struct HostileAnswerRuleTests {
    let dated = Validators(lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")

    func head(_ status: Int, _ fields: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, headers: HTTPFields(fields.map { HTTPFields.Field(name: $0.0, value: $0.1) }))
    }

    @Test func aGzip206IsNeverAppendedToIdentityBytes() {
        let point = ResumePoint(offset: 100_000, validators: Validators(entityTag: EntityTag("\"g\"")), totalLength: 200_000)
        let plan = RequestPlan.range(start: 100_000, overlap: 0, ifRange: "\"g\"")
        let gzip = ResumePolicy.decide(plan: plan, point: point, response: head(206, [
            ("Content-Range", "bytes 100000-199999/200000"), ("ETag", "\"g\""), ("Content-Encoding", "gzip")]))
        guard case .restart(.resourceChanged) = gzip else { Issue.record("\(gzip)"); return }
        let identity = ResumePolicy.decide(plan: plan, point: point, response: head(206, [
            ("Content-Range", "bytes 100000-199999/200000"), ("ETag", "\"g\""), ("Content-Encoding", "identity")]))
        guard case .append = identity else { Issue.record("\(identity)"); return }
    }

    @Test func encodedBytesContinueOnlyInTheSameEncoding() {
        let held = Validators(entityTag: EntityTag("\"g\""), contentEncoding: "GZip")
        #expect(held.contentEncoding == "gzip")
        let point = ResumePoint(offset: 10, validators: held, totalLength: 20)
        let plan = RequestPlan.range(start: 10, overlap: 0, ifRange: "\"g\"")
        let plain = ResumePolicy.decide(plan: plan, point: point, response: head(206, [("Content-Range", "bytes 10-19/20"), ("ETag", "\"g\"")]))
        guard case .restart = plain else { Issue.record("\(plain)"); return }
        let same = ResumePolicy.decide(plan: plan, point: point, response: head(206, [
            ("Content-Range", "bytes 10-19/20"), ("ETag", "\"g\""), ("Content-Encoding", "gzip")]))
        guard case .append = same else { Issue.record("\(same)"); return }
        // A 416 has no body: its missing Content-Encoding says nothing about the coding of the bytes held.
        let done = ResumePoint(offset: 20, validators: held, totalLength: 20)
        #expect(ResumePolicy.decide(plan: ResumePolicy.plan(for: done), point: done, response: head(416, [("Content-Range", "bytes */20")])) == .alreadyComplete)
    }

    @Test func anUnknownTotalDoesNotFinishADownload() {
        let probe = ResumePolicy.plan(for: ResumePoint(), probeRanges: true)
        let first = ResumePolicy.decide(plan: probe, point: ResumePoint(), response: head(206, [("Content-Range", "bytes 0-99/*")]))
        guard case .append(let info, 100, 0) = first else { Issue.record("\(first)"); return }
        #expect(info.totalLength == nil)
        // The rest is asked for from the next byte, so the server can answer 416 when the file has ended.
        let held = ResumePoint(offset: 100, validators: info.validators, totalLength: nil)
        let next = ResumePolicy.plan(for: held, heldFromThisAnswer: true)
        #expect(next.headers["Range"] == "bytes=100-")
        #expect(ResumePolicy.decide(plan: next, point: held, response: head(416, [("Content-Range", "bytes */100")])) == .alreadyComplete)
        #expect(ResumePolicy.decide(plan: next, point: held, response: head(416, [("Content-Range", "bytes */100000")])) != .alreadyComplete)
    }

    @Test func a416ToAFreshDownloadIsAnHTTPError() {
        let probe = ResumePolicy.plan(for: ResumePoint(), probeRanges: true)
        #expect(ResumePolicy.decide(plan: probe, point: ResumePoint(), response: head(416, [])) == .fail(status: 416))
        #expect(ResumePolicy.decide(plan: probe, point: ResumePoint(), response: head(416, [("Content-Range", "bytes */0")])) == .alreadyComplete)
    }
}

@Suite struct HeldPrefixPlanTests {
    @Test(arguments: [(Int64(100), Int64(30), 3), (Int64(10 << 20), Int64(1 << 20), 8), (Int64(50), Int64(50), 4), (Int64(50), Int64(0), 2)])
    func aHeldPrefixIsOneDoneSegmentAndTheRestIsSplit(total: Int64, prefix: Int64, parts: Int) throws {
        let plan = SegmentPlan(total: total, parts: parts, minSegmentSize: 1, heldPrefix: prefix)
        #expect(SegmentPlan(restoring: plan.segments, total: total, minSegmentSize: 1) != nil, "\(plan.segments)")
        #expect(plan.doneBytes == prefix)
        #expect(plan.heldRuns == (prefix > 0 ? [0..<prefix] : []))
        let open = plan.segments.filter { !$0.isComplete }
        #expect(open.count == (prefix == total ? 0 : min(parts, Int(total - prefix))))
        #expect(Set(plan.segments.map(\.id)).count == plan.segments.count)
    }
}
