import PropertyBased
import Testing
@testable import HaulCore

/// A server that answers closed ranges with fewer bytes than asked (RFC 9110 §14.4): what came is kept, the rest is
/// asked for again, and the bytes asked for before a request's start never eat a capped answer whole.
@Suite struct RangeCapTests {
    let etag = "\"v1\""

    @Test func aCapQuartersTheBytesAskedForBeforeAStart() {
        #expect(BoundaryChecks.overlap(next: 1 << 20, segmentStart: 1 << 20, rangeCap: 10_000) == 2_500)
        #expect(BoundaryChecks.overlap(next: (1 << 20) + 5, segmentStart: 1 << 20, rangeCap: 10_000) == 2_500)
        #expect(BoundaryChecks.overlap(next: 1 << 20, segmentStart: 1 << 20, rangeCap: 1 << 30) == BoundaryChecks.boundaryLength)
        #expect(BoundaryChecks.overlap(next: 3_000, segmentStart: 0, rangeCap: 1 << 30) == 3_000, "never before byte 0")
        var cap = RangeCap()
        cap.shortAnswer(received: 0)
        #expect(cap.bytes == nil, "an empty answer shows no cap")
        cap.shortAnswer(received: 10_000)
        cap.shortAnswer(received: 20_000)
        #expect(cap.bytes == 10_000, "the fewest bytes an answer brought")
    }

    /// Splitting pays only while no answer showed a cap below the smallest segment; once one did, the rules go on
    /// over one connection, which asks with no range at all.
    @Test func aCapBelowTheSmallestSegmentEndsSplitting() {
        var cap = RangeCap()
        #expect(!cap.isTooSmall(forSegmentsOf: 1 << 20), "no cap seen")
        cap.shortAnswer(received: 1 << 20)
        #expect(!cap.isTooSmall(forSegmentsOf: 1 << 20))
        cap.shortAnswer(received: (1 << 20) - 1)
        #expect(cap.isTooSmall(forSegmentsOf: 1 << 20))
        #expect(!cap.isTooSmall(forSegmentsOf: 2_048))
        var rules = RetryRules(RetryRules.Configuration(maxRestarts: 3))
        #expect(rules.restartNeeded(.smallRanges(cap: 10_000)) == .restart(.smallRanges(cap: 10_000)))
        #expect(rules.oneConnection == .smallRanges(cap: 10_000) && !rules.mayProbeRanges)
        #expect(RestartReason.smallRanges(cap: 10_000).description == "the server answers a range with at most 9.8 KiB, too little to split the file")
    }

    /// Whatever the cap learned, an answer of that many bytes brings at least one new byte, and the overlap never
    /// reaches before byte 0.
    @Test func aCappedAnswerAlwaysBringsNewBytes() async {
        await propertyCheck(input: Gen.int(in: 0...(1 << 30)).array(of: 3...3)) { numbers in
            let capBytes = Int64(numbers[0] % 300_000 + 1)
            let next = Int64(numbers[1])
            let start = Int64(numbers[2]) % (next + 1)
            var cap = RangeCap()
            cap.shortAnswer(received: capBytes)
            let overlap = cap.overlap(next: next, segmentStart: start)
            #expect(overlap >= 0 && overlap <= next)
            #expect(capBytes - overlap >= 1, "cap \(capBytes), overlap \(overlap)")
        }
    }

    /// A server whose every answer ends within the bytes asked for before the start (it brings nothing new, whatever
    /// the lengths it picks): asked again at once a bounded number of times, then left to the retry rules.
    @Test func answersThatBringNothingNewAreAskedAgainABoundedNumberOfTimes() async {
        await propertyCheck(input: Gen.int(in: 1...(1 << 17)).array(of: 1...60)) { lengths in
            var cap = RangeCap()
            let start: Int64 = 4 << 20, next: Int64 = (4 << 20) + 12_345
            var again = 0
            for length in lengths {
                let overlap = cap.overlap(next: next, segmentStart: start)
                guard overlap > 0 else { break }
                cap.shortAnswer(received: min(Int64(length), overlap))
                guard cap.asksAgainAtOnce(next: next, segmentStart: start, usedOverlap: overlap) else { break }
                again += 1
            }
            // 64 KiB divided by four down to nothing.
            #expect(again <= 9, "\(again) requests in a row brought nothing new")
        }
    }

    @Test func aClosedRangeAnsweredWithinItsOverlapIsComparedNotRefused() {
        let point = ResumePoint(offset: 70_000, validators: Validators(entityTag: EntityTag(etag)), totalLength: 1_000_000)
        let closed = RequestPlan.range(start: 70_000 - 16_384, overlap: 16_384, ifRange: etag, last: 199_999)
        let head = ResponseHead(status: 206, headers: [
            "Content-Range": "bytes 53616-63615/1000000", "Content-Length": "10000", "ETag": etag])
        guard case .append(_, 10_000, 10_000) = ResumePolicy.decide(plan: closed, point: point, response: head) else {
            Issue.record("a short answer to a closed range is compared, got \(ResumePolicy.decide(plan: closed, point: point, response: head))")
            return
        }
        // Past the overlap: the bytes after it are appended, the rest asked for again.
        let past = ResponseHead(status: 206, headers: [
            "Content-Range": "bytes 53616-73615/1000000", "Content-Length": "20000", "ETag": etag])
        guard case .append(_, 20_000, 16_384) = ResumePolicy.decide(plan: closed, point: point, response: past) else {
            Issue.record("got \(ResumePolicy.decide(plan: closed, point: point, response: past))")
            return
        }
        // An open-ended request must still reach past the bytes held.
        let open = RequestPlan.range(start: 70_000 - 16_384, overlap: 16_384, ifRange: etag)
        guard case .restart(.invalidPartialResponse) = ResumePolicy.decide(plan: open, point: point, response: head) else {
            Issue.record("an open-ended request answered within its overlap is refused")
            return
        }
    }
}
