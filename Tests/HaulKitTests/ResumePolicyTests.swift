import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct ResumePolicyPlanTests {
    let strong = Validators(entityTag: EntityTag("\"v1\""), lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")

    @Test func nothingHeldAsksForEverything() {
        #expect(ResumePolicy.plan(for: ResumePoint()) == .whole)
        #expect(RequestPlan.whole.headers == [:])
    }

    @Test func strongETagStillOverlapsAndGoesInIfRange() {
        // An ETag made of size and time survives an in-place rewrite: the bytes held are compared all the same.
        let plan = ResumePolicy.plan(for: ResumePoint(offset: 40, validators: strong, totalLength: 100))
        #expect(plan == .range(start: 0, overlap: 40, ifRange: "\"v1\""))
        #expect(plan.headers["Range"] == "bytes=0-")
        #expect(plan.headers["If-Range"] == "\"v1\"")
        let far = ResumePolicy.plan(for: ResumePoint(offset: 500_000, validators: strong, totalLength: 900_000))
        #expect(far == .range(start: 500_000 - ResumePolicy.overlapLength, overlap: ResumePolicy.overlapLength, ifRange: "\"v1\""))
    }

    @Test func weakETagIsNeverSentAndOverlapIsRequested() {
        let weak = Validators(entityTag: EntityTag("W/\"v1\""))
        let plan = ResumePolicy.plan(for: ResumePoint(offset: 200_000, validators: weak, totalLength: 300_000))
        #expect(plan == .range(start: 200_000 - ResumePolicy.overlapLength, overlap: ResumePolicy.overlapLength, ifRange: nil))
        #expect(plan.headers["If-Range"] == nil)
    }

    @Test func lastModifiedOnlyUsesDateAndOverlap() {
        let dated = Validators(lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        let plan = ResumePolicy.plan(for: ResumePoint(offset: 10, validators: dated))
        #expect(plan == .range(start: 0, overlap: 10, ifRange: "Sun, 06 Nov 1994 08:49:37 GMT"))
    }

    @Test func probeAsksForARangeFromZero() {
        #expect(ResumePolicy.plan(for: ResumePoint(), probeRanges: true) == .range(start: 0, overlap: 0, ifRange: nil))
        #expect(ResumePolicy.plan(for: ResumePoint(), probeRanges: true).headers["Range"] == "bytes=0-")
    }

    @Test func closedRangeHeader() {
        let plan = RequestPlan.range(start: 10, overlap: 0, ifRange: "\"e\"", last: 19)
        #expect(plan.headers["Range"] == "bytes=10-19")
        #expect(plan.last == 19)
    }

    @Test func noValidatorsStillOverlaps() {
        let plan = ResumePolicy.plan(for: ResumePoint(offset: 1000))
        #expect(plan == .range(start: 0, overlap: 1000, ifRange: nil))
        #expect(plan.headers["Range"] == "bytes=0-")
    }
}

@Suite struct ResumePolicyDecisionTests {
    let etag = "\"v1\""
    var validators: Validators { Validators(entityTag: EntityTag(etag)) }
    var held: ResumePoint { ResumePoint(offset: 40, validators: validators, totalLength: 100) }
    /// A continuation without overlap, as a segment's range is (a resume's overlap is tested below).
    var plan: RequestPlan { .range(start: 40, overlap: 0, ifRange: etag) }

    func decide(_ status: Int, _ headers: HTTPFields, plan: RequestPlan? = nil, point: ResumePoint? = nil) -> ResponseDecision {
        ResumePolicy.decide(plan: plan ?? self.plan, point: point ?? held, response: ResponseHead(status: status, headers: headers))
    }

    @Test func validPartialResponseAppends() {
        let decision = decide(206, ["Content-Range": "bytes 40-99/100", "Content-Length": "60", "ETag": etag])
        guard case .append(let info, let length, let overlap) = decision else { Issue.record("got \(decision)"); return }
        #expect(length == 60)
        #expect(overlap == 0)
        #expect(info.totalLength == 100)
        #expect(info.validators.entityTag?.rawValue == etag)
    }

    @Test func partialWithWrongStartIsRejected() {
        #expect(isRestart(decide(206, ["Content-Range": "bytes 0-99/100", "ETag": etag])))
        #expect(isRestart(decide(206, ["Content-Range": "bytes 41-99/100", "ETag": etag])))
    }

    @Test func partialWithDifferentCompleteLengthIsAChange() {
        let decision = decide(206, ["Content-Range": "bytes 40-100/101", "ETag": etag])
        guard case .restart(.resourceChanged) = decision else { Issue.record("got \(decision)"); return }
    }

    @Test func partialWithUnknownLengthWhenLengthKnownIsRejected() {
        #expect(isRestart(decide(206, ["Content-Range": "bytes 40-99/*"])))
    }

    @Test func partialWithContentLengthDisagreeingIsRejected() {
        #expect(isRestart(decide(206, ["Content-Range": "bytes 40-99/100", "Content-Length": "61"])))
    }

    @Test func partialWithoutOrWithMalformedContentRangeIsRejected() {
        #expect(isRestart(decide(206, ["Content-Length": "60"])))
        #expect(isRestart(decide(206, ["Content-Range": "bytes 40-/100"])))
        #expect(isRestart(decide(206, ["Content-Range": "bytes */100"])))
        #expect(isRestart(decide(206, ["Content-Range": "bytes 99-40/100"])))
    }

    @Test func multipartIsRejected() {
        #expect(isRestart(decide(206, ["Content-Range": "bytes 40-99/100", "Content-Type": "multipart/byteranges; boundary=x"])))
    }

    @Test func partialWithChangedETagIsAChange() {
        let decision = decide(206, ["Content-Range": "bytes 40-99/100", "ETag": "\"v2\""])
        guard case .restart(.resourceChanged) = decision else { Issue.record("got \(decision)"); return }
    }

    @Test func partialWithChangedLastModifiedIsAChange() {
        let point = ResumePoint(offset: 40, validators: Validators(lastModified: "Mon, 07 Nov 1994 08:49:37 GMT"), totalLength: 100)
        let plan = ResumePolicy.plan(for: point)
        let decision = decide(206, ["Content-Range": "bytes 0-99/100", "Last-Modified": "Tue, 08 Nov 1994 08:49:37 GMT"], plan: plan, point: point)
        guard case .restart(.resourceChanged) = decision else { Issue.record("got \(decision)"); return }
    }

    @Test func overlapPlanAcceptsRangeFromOverlapStart() {
        let point = ResumePoint(offset: 40, validators: Validators(), totalLength: 100)
        let plan = ResumePolicy.plan(for: point)
        let decision = decide(206, ["Content-Range": "bytes 0-99/100"], plan: plan, point: point)
        #expect(decision == .append(ResourceInfo(validators: Validators(), totalLength: 100, acceptsRanges: true), bodyLength: 100, overlap: 40))
    }

    @Test func partialEndingBeforeTheBytesHeldIsRejected() {
        let point = ResumePoint(offset: 40, validators: Validators(), totalLength: nil)
        let plan = ResumePolicy.plan(for: point)
        #expect(isRestart(decide(206, ["Content-Range": "bytes 0-29/30"], plan: plan, point: point)))
    }

    @Test func partialPastAClosedRangeIsRejected() {
        let closed = RequestPlan.range(start: 40, overlap: 0, ifRange: etag, last: 59)
        #expect(isRestart(decide(206, ["Content-Range": "bytes 40-99/100", "ETag": etag], plan: closed)))
        guard case .append(_, 20, 0) = decide(206, ["Content-Range": "bytes 40-59/100", "ETag": etag], plan: closed) else {
            Issue.record("a 206 that matches the closed range must be accepted"); return
        }
    }

    @Test func shortPartialThatCoversTheOffsetIsAccepted() {
        // A server may send less than asked; the rest is requested next.
        let decision = decide(206, ["Content-Range": "bytes 40-59/100", "ETag": etag])
        guard case .append(_, 20, 0) = decision else { Issue.record("got \(decision)"); return }
    }

    @Test func fullResponseRestartsFromZero() {
        let decision = decide(200, ["Content-Length": "120", "ETag": "\"v2\"", "Accept-Ranges": "bytes"])
        guard case .writeWhole(let info, let length) = decision else { Issue.record("got \(decision)"); return }
        #expect(length == 120)
        #expect(info.totalLength == 120)
        #expect(info.acceptsRanges)
        #expect(info.validators.entityTag?.rawValue == "\"v2\"")
    }

    @Test func chunkedFullResponseHasNoLength() {
        let decision = decide(200, ["Transfer-Encoding": "chunked", "Content-Length": "5"], plan: .whole, point: ResumePoint())
        guard case .writeWhole(let info, nil) = decision else { Issue.record("got \(decision)"); return }
        #expect(info.totalLength == nil)
        #expect(!info.acceptsRanges)
    }

    @Test func unsatisfiableConfirmsCompletionOnlyWhenLengthsMatch() {
        let complete = ResumePoint(offset: 100, validators: validators, totalLength: 100)
        let plan = ResumePolicy.plan(for: complete)
        #expect(decide(416, ["Content-Range": "bytes */100"], plan: plan, point: complete) == .alreadyComplete)
        #expect(isRestart(decide(416, ["Content-Range": "bytes */101"], plan: plan, point: complete)))
        #expect(isRestart(decide(416, ["Content-Range": "bytes */100", "ETag": "\"v2\""], plan: plan, point: complete)))
        #expect(isRestart(decide(416, [:], plan: plan, point: complete)))
        #expect(isRestart(decide(416, ["Content-Range": "bytes 0-1/100"], plan: plan, point: complete)))
    }

    /// A 416 without `Content-Range` ends the file at the bytes held only as the answer to a request for exactly the
    /// next byte after bytes whose answer gave no length (`bytes a-b/*`), as curl and wget take it; anywhere else it
    /// proves nothing.
    @Test func aLengthless416EndsTheFileOnlyAfterBytesOfUnknownLength() {
        let unknown = ResumePoint(offset: 200_000, validators: validators)
        let next = ResumePolicy.plan(for: unknown, heldFromThisAnswer: true)
        #expect(next == .range(start: 200_000, overlap: 0, ifRange: validators.ifRangeValue))
        #expect(decide(416, [:], plan: next, point: unknown) == .alreadyComplete)
        // Other validators in the 416: another file.
        #expect(isRestart(decide(416, ["ETag": "\"v2\""], plan: next, point: unknown)))
        // The length was known: a 416 must say it.
        let known = ResumePoint(offset: 200_000, validators: validators, totalLength: 300_000)
        #expect(isRestart(decide(416, [:], plan: .range(start: 200_000, overlap: 0, ifRange: nil), point: known)))
        // A resume with an overlap, or a closed range: not a question about the next byte.
        let overlapping = ResumePolicy.plan(for: unknown)
        #expect(overlapping.overlap > 0)
        #expect(isRestart(decide(416, [:], plan: overlapping, point: unknown)))
        #expect(isRestart(decide(416, [:], plan: .range(start: 200_000, overlap: 0, ifRange: nil, last: 200_999), point: unknown)))
        #expect(decide(416, [:], plan: .range(start: 0, overlap: 0, ifRange: nil), point: ResumePoint()) == .fail(status: 416))
    }

    /// A 416 or a 206 whose complete length is under the bytes held: they run past the server's end, whatever held
    /// them (a file given to --continue, a partial of a file that shrank). Said as such, with both lengths.
    @Test func aServersFileShorterThanTheBytesHeldIsSaidWithBothLengths() {
        let held = ResumePoint(offset: 300_000)
        let plan = ResumePolicy.plan(for: held)
        #expect(decide(416, ["Content-Range": "bytes */200000"], plan: plan, point: held) == .restart(.heldPastEnd(length: 200_000, held: 300_000)))
        // Within the overlap of the end: a 206 of the server's last bytes, ending before the bytes held do.
        let near = ResumePoint(offset: 210_000)
        let asked = ResumePolicy.plan(for: near)
        #expect(asked.start == 210_000 - ResumePolicy.overlapLength)
        #expect(decide(206, ["Content-Range": "bytes \(asked.start)-199999/200000", "Content-Length": "\(200_000 - asked.start)"], plan: asked, point: near)
                == .restart(.heldPastEnd(length: 200_000, held: 210_000)))
        #expect(RestartReason.heldPastEnd(length: 200_000, held: 300_000).description
                == "the file on the server changed (length is now 200000 bytes, 300000 held)")
        // Longer on the server: a changed file, not bytes past its end; the same length: complete.
        #expect(decide(416, ["Content-Range": "bytes */400000"], plan: plan, point: held) == .restart(.resourceChanged("length is now 400000 bytes, 300000 held")))
        #expect(decide(416, ["Content-Range": "bytes */300000"], plan: plan, point: held) == .alreadyComplete)
    }

    @Test func unsatisfiableWithDifferentKnownTotalIsAChange() {
        let odd = ResumePoint(offset: 100, validators: validators, totalLength: 150)
        #expect(isRestart(decide(416, ["Content-Range": "bytes */100"], plan: ResumePolicy.plan(for: odd), point: odd)))
    }

    @Test func emptyFileAnswersTheProbeWith416() {
        let probe = ResumePolicy.plan(for: ResumePoint(), probeRanges: true)
        #expect(decide(416, ["Content-Range": "bytes */0"], plan: probe, point: ResumePoint()) == .alreadyComplete)
        // Nothing held: a 416 for a file that is not empty is the server's HTTP error, not a changed file.
        #expect(decide(416, ["Content-Range": "bytes */10"], plan: probe, point: ResumePoint()) == .fail(status: 416))
    }

    @Test func unsatisfiableWithoutRangeIsAViolation() {
        guard case .protocolViolation = decide(416, ["Content-Range": "bytes */100"], plan: .whole, point: ResumePoint()) else {
            Issue.record("expected a protocol violation"); return
        }
    }

    @Test func redirectsNeedALocation() {
        #expect(decide(302, ["Location": "/b"]) == .redirect(location: "/b"))
        #expect(decide(308, ["Location": " https://x/y "]) == .redirect(location: "https://x/y"))
        guard case .protocolViolation = decide(301, [:]) else { Issue.record("expected a protocol violation"); return }
    }

    @Test(arguments: [408, 429, 500, 502, 503, 504])
    func transientStatusesRetry(_ status: Int) {
        #expect(decide(status, ["Retry-After": "3"]) == .retry(status: status, retryAfter: "3"))
    }

    @Test(arguments: [400, 401, 403, 404, 410, 451])
    func otherClientErrorsFail(_ status: Int) {
        #expect(decide(status, [:]) == .fail(status: status))
    }

    @Test func notModifiedIsAViolation() {
        guard case .protocolViolation = decide(304, [:]) else { Issue.record("expected a protocol violation"); return }
    }

    func isRestart(_ decision: ResponseDecision) -> Bool {
        if case .restart = decision { return true }
        return false
    }
}

@Suite struct ValidatorsTests {
    @Test func weakAndStrongTags() {
        #expect(EntityTag("\"abc\"")?.isStrong == true)
        #expect(EntityTag("W/\"abc\"")?.isWeak == true)
        #expect(EntityTag("W/\"abc\"")?.isStrong == false)
        #expect(EntityTag("abc")?.isStrong == false)
        #expect(EntityTag("") == nil)
    }

    @Test func ifRangePrefersStrongETagThenDateNeverWeak() {
        #expect(Validators(entityTag: EntityTag("\"a\""), lastModified: "d").ifRangeValue == "\"a\"")
        #expect(Validators(entityTag: EntityTag("W/\"a\""), lastModified: "d").ifRangeValue == "d")
        #expect(Validators(entityTag: EntityTag("W/\"a\"")).ifRangeValue == nil)
    }

    @Test func conflictsOnlyWhenBothCarryADifferentValue() {
        let mine = Validators(entityTag: EntityTag("\"a\""), lastModified: "d1")
        #expect(!mine.conflicts(with: Validators()))
        #expect(!mine.conflicts(with: Validators(entityTag: EntityTag("\"a\""))))
        #expect(mine.conflicts(with: Validators(entityTag: EntityTag("\"b\""))))
        #expect(mine.conflicts(with: Validators(lastModified: "d2")))
    }
}

@Suite struct ImpossibleLengthTests {
    func decide(_ status: Int, _ headers: HTTPFields, plan: RequestPlan = .range(start: 0, overlap: 0, ifRange: nil)) -> ResponseDecision {
        ResumePolicy.decide(plan: plan, point: ResumePoint(), response: ResponseHead(status: status, headers: headers))
    }

    @Test func aLengthNoFileCanHaveIsTheServersErrorBeforeAnyByte() {
        let claim = Int64.max
        #expect(decide(206, ["Content-Range": "bytes 0-99/\(claim)", "Content-Length": "100"]) == .impossibleLength(claim))
        #expect(decide(206, ["Content-Range": "bytes 0-\(claim - 1)/*"]) == .impossibleLength(claim))
        #expect(decide(200, ["Content-Length": "\(claim)"], plan: .whole) == .impossibleLength(claim))
        let limit = ResumePolicy.maxPlausibleLength
        #expect(decide(206, ["Content-Range": "bytes 0-99/\(limit + 1)", "Content-Length": "100"]) == .impossibleLength(limit + 1))
        guard case .append = decide(206, ["Content-Range": "bytes 0-99/\(limit)", "Content-Length": "100"]) else {
            Issue.record("1 EiB itself is believed")
            return
        }
        #expect(ResumePolicy.impossibleLengthMessage(claim) == "the server claims 9223372036854775807 bytes, more than any file can hold; the download was not started")
        #expect(ResponseHeadStep.decide(.impossibleLength(claim), ResponseHeadStep.Context()) == .impossibleLength(claim))
        #expect(RangeAnswer.classify(.impossibleLength(claim), validators: Validators()) == .unusable("the server claims \(claim) bytes"))
    }
}

/// Redirect answers and the rest of 3xx: 300 with a Location is followed (as curl -L and wget follow it); any other
/// 3xx that is no redirect is an answer to report at once, never a server error retried for half a minute.
@Suite struct RedirectStatusTests {
    func decide(_ status: Int, _ headers: HTTPFields) -> ResponseDecision {
        ResumePolicy.decide(plan: .whole, point: ResumePoint(), response: ResponseHead(status: status, headers: headers))
    }

    @Test func everyThreeHundredIsARedirectOrAnAnswer() {
        for status in [300, 301, 302, 303, 307, 308] {
            #expect(decide(status, ["Location": "/next"]) == .redirect(location: "/next"), "\(status)")
        }
        #expect(decide(300, [:]) == .fail(status: 300))
        for status in [305, 306, 309, 399] {
            #expect(decide(status, ["Location": "/next"]) == .fail(status: status), "\(status)")
        }
        #expect(decide(302, [:]) == .protocolViolation("redirect 302 without a Location header"))
    }
}
