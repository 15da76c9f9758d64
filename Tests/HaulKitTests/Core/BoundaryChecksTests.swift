import Testing
@testable import HaulCore

/// The pure parts of the overlap checks of segmented downloads and streams.
@Suite struct BoundaryChecksTests {
    @Test func aSegmentStartAsksForTheBoundaryWindowAContinuationForTheResumeOverlap() {
        #expect(BoundaryChecks.overlap(next: 0, segmentStart: 0) == 0)
        #expect(BoundaryChecks.overlap(next: 1000, segmentStart: 1000) == 1000)
        #expect(BoundaryChecks.overlap(next: 1 << 20, segmentStart: 1 << 20) == BoundaryChecks.boundaryLength)
        #expect(BoundaryChecks.overlap(next: (1 << 20) + 5, segmentStart: 1 << 20) == ResumePolicy.overlapLength)
    }

    @Test func aWindowIsDueOnlyOnceEveryByteOfItIsWritten() {
        var plan = SegmentPlan(total: 400, parts: 2, minSegmentSize: 10)
        var checks = BoundaryChecks()
        let window: Range<Int64> = 190..<200
        let added1 = checks.add(.init(window: window, bytes: Array(repeating: 7, count: 10)))
        #expect(added1)
        let result2 = checks.takeWritten(in: plan)
        #expect(result2.isEmpty)
        plan.advance(0, by: 195)
        #expect(!plan.isWritten(window))
        let result3 = checks.takeWritten(in: plan)
        #expect(result3.isEmpty)
        plan.advance(0, by: 5)
        #expect(plan.isWritten(window))
        let result4 = checks.takeWritten(in: plan)
        #expect(result4.map(\.window) == [window])
        #expect(checks.pending.isEmpty)
    }

    @Test func aWindowAcrossSegmentsNeedsEachWritten() {
        var plan = SegmentPlan(total: 300, parts: 3, minSegmentSize: 10)
        plan.advance(0, by: 100)
        #expect(!plan.isWritten(90..<110))
        plan.advance(1, by: 9)
        #expect(!plan.isWritten(90..<110))
        plan.advance(1, by: 1)
        #expect(plan.isWritten(90..<110))
        #expect(!plan.isWritten(290..<301), "past the end is never written")
    }

    @Test func twoAnswersForOneWindowMustAgree() {
        var checks = BoundaryChecks()
        let window: Range<Int64> = 10..<14
        let added5 = checks.add(.init(window: window, bytes: [1, 2, 3, 4]))
        #expect(added5)
        let added6 = checks.add(.init(window: window, bytes: [1, 2, 3, 4]))
        #expect(added6)
        #expect(checks.pending.count == 1, "the same window is kept once")
        let added7 = checks.add(.init(window: window, bytes: [1, 2, 3, 5]))
        #expect(!added7)
    }

    @Test func theTailKeepsTheLastBytesInOrder() {
        var tail = TailWindow(capacity: 8)
        #expect(tail.last(4).isEmpty)
        tail.append([1, 2, 3])
        #expect(tail.last(8) == [1, 2, 3])
        tail.append([4, 5, 6, 7, 8, 9, 10])
        #expect(tail.count == 8)
        #expect(tail.last(8) == [3, 4, 5, 6, 7, 8, 9, 10])
        #expect(tail.last(2) == [9, 10])
        tail.append(Array(11...30))
        #expect(tail.last(8) == Array(23...30))
        var reference: [UInt8] = Array(1...30)  // everything appended so far
        var random = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let chunk = (0..<Int.random(in: 0...20, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            tail.append(chunk)
            reference += chunk
            #expect(tail.last(8) == Array(reference.suffix(8)))
        }
    }
}

/// The first bytes of an answer that repeat bytes held: taken from the chunks they come in, compared, never more.
@Suite struct OverlapPrefixTests {
    func take(_ prefix: inout OverlapPrefix, _ chunk: [UInt8]) -> Int? {
        chunk.withUnsafeBytes { prefix.take($0) }
    }

    @Test func theRepeatedBytesAreTakenAcrossChunksAndTheRestIsNew() {
        var prefix = OverlapPrefix(expected: [1, 2, 3, 4, 5])
        #expect(!prefix.isComplete)
        #expect(take(&prefix, [1, 2]) == 2 && !prefix.isComplete)
        #expect(take(&prefix, []) == 0)
        #expect(take(&prefix, [3, 4, 5, 6, 7]) == 3 && prefix.isComplete, "6 and 7 are new")
        #expect(take(&prefix, [8]) == 0, "once complete, every byte is new")
    }

    @Test func aDifferentByteInAnyChunkIsAMismatch() {
        var prefix = OverlapPrefix(expected: [1, 2, 3, 4])
        #expect(take(&prefix, [1, 2]) == 2)
        #expect(take(&prefix, [3, 9, 0]) == nil)
        var nothing = OverlapPrefix(expected: [])
        #expect(nothing.isComplete && take(&nothing, [7, 7]) == 0)
    }
}

/// A resumed answer's `Repr-Digest` is compared with the one recorded for the bytes held, in the recorded algorithm.
@Suite struct ResumedDigestTests {
    static let sha256A = "sha-256=:" + String(repeating: "A", count: 43) + "=:"
    static let sha256B = "sha-256=:" + String(repeating: "B", count: 43) + "=:"
    static let sha512C = "sha-512=:" + String(repeating: "C", count: 86) + "==:"

    func decide(held: String, answer: String) -> ResponseDecision {
        let heldDigest = DigestFields.strongest(held)
        let point = ResumePoint(offset: 100, validators: Validators(entityTag: EntityTag("\"e\""), digest: heldDigest), totalLength: 1000)
        let plan = RequestPlan.range(start: 60, overlap: 40, ifRange: "\"e\"")
        let head = ResponseHead(status: 206, headers: [
            "Content-Range": "bytes 60-999/1000", "Content-Length": "940", "ETag": "\"e\"", "Repr-Digest": answer,
        ])
        return ResumePolicy.decide(plan: plan, point: point, response: head)
    }

    @Test func anotherDigestOfTheSameAlgorithmRestarts() {
        guard case .restart(.resourceChanged) = decide(held: Self.sha256A, answer: Self.sha256B) else {
            Issue.record("\(decide(held: Self.sha256A, answer: Self.sha256B))")
            return
        }
        guard case .append = decide(held: Self.sha256A, answer: Self.sha256A) else {
            Issue.record("the same digest continues")
            return
        }
    }

    @Test func aStrongerDigestAddedDoesNotHideAChangedOne() {
        // Held with sha-256 only; the answer now leads with sha-512 and its sha-256 differs.
        let decision = decide(held: Self.sha256A, answer: Self.sha512C + ", " + Self.sha256B)
        guard case .restart(.resourceChanged) = decision else {
            Issue.record("\(decision)")
            return
        }
        guard case .append = decide(held: Self.sha256A, answer: Self.sha512C + ", " + Self.sha256A) else {
            Issue.record("the same sha-256 beside a new sha-512 continues")
            return
        }
    }
}
