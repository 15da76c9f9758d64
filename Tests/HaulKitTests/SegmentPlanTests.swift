import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct SegmentPlanTests {
    let mib: Int64 = 1 << 20

    /// The plan's invariant: exact cover of 0..<total, no overlap, `done` within bounds.
    func covers(_ plan: SegmentPlan) -> Bool {
        var expected: Int64 = 0
        for segment in plan.segments {
            guard segment.start == expected, segment.end > segment.start,
                  segment.done >= 0, segment.done <= segment.end - segment.start else { return false }
            expected = segment.end
        }
        return expected == plan.total
    }

    func expectCovers(_ plan: SegmentPlan, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(covers(plan), "\(plan.segments)", sourceLocation: sourceLocation)
    }

    @Test(arguments: [(Int64(100), 3), (Int64(8 << 20), 8), (Int64(1), 4), (Int64(10_000_019), 7)])
    func initialSplitCoversExactly(_ total: Int64, _ parts: Int) {
        let plan = SegmentPlan(total: total, parts: parts, minSegmentSize: 1)
        expectCovers(plan)
        #expect(plan.segments.count == min(parts, Int(total)))
        #expect(!plan.isComplete)
    }

    @Test func partCountRespectsMinimumSizeAndAutomaticDefault() {
        #expect(SegmentPlan.partCount(total: 64 * mib, requested: 8, minSegmentSize: mib) == 8)
        #expect(SegmentPlan.partCount(total: 3 * mib, requested: 8, minSegmentSize: mib) == 3)
        #expect(SegmentPlan.partCount(total: 100, requested: 8, minSegmentSize: mib) == 1)
        #expect(SegmentPlan.partCount(total: 64 * mib, requested: 1, minSegmentSize: mib) == 1)
        #expect(SegmentPlan.partCount(total: 64 * mib, requested: nil, minSegmentSize: mib) == 8)
        #expect(SegmentPlan.partCount(total: 16 * mib, requested: nil, minSegmentSize: mib) == 4)
        #expect(SegmentPlan.partCount(total: 16 * mib - 1, requested: nil, minSegmentSize: mib) == 1)
        #expect(SegmentPlan.partCount(total: 64 * mib, requested: nil, minSegmentSize: 32 * mib) == 2)
        #expect(SegmentPlan.partCount(total: 1 << 40, requested: 32, minSegmentSize: mib) == 32)
    }

    @Test func claimsFreeSegmentsInOrderThenSteals() throws {
        var plan = SegmentPlan(total: 8 * mib, parts: 2, minSegmentSize: mib)
        let firstClaim = plan.claim()
        let first = try #require(firstClaim)
        let secondClaim = plan.claim()
        let second = try #require(secondClaim)
        #expect(first.start == 0 && second.start == 4 * mib)
        plan.advance(first.id, by: 4 * mib)
        plan.release(first.id)
        // The first connection is free: it takes the upper half of what the second still has.
        plan.advance(second.id, by: mib)
        let stolenClaim = plan.claim()
        let stolen = try #require(stolenClaim)
        #expect(stolen.start == 4 * mib + mib + (3 * mib - 3 * mib / 2))
        #expect(stolen.end == 8 * mib)
        #expect(plan.remaining(second.id) == stolen.start - (5 * mib))
        expectCovers(plan)
    }

    @Test func neverStealsBelowTheMinimum() throws {
        var plan = SegmentPlan(total: 3 * mib, parts: 1, minSegmentSize: mib)
        let onlyClaim = plan.claim()
        let only = try #require(onlyClaim)
        plan.advance(only.id, by: 2 * mib)
        #expect(plan.claim() == nil)
        plan.advance(only.id, by: mib)
        #expect(plan.isComplete)
        #expect(plan.claim() == nil)
    }

    @Test func aFailedSegmentKeepsItsBytesAndIsClaimedAgain() throws {
        var plan = SegmentPlan(total: 4 * mib, parts: 2, minSegmentSize: mib)
        let aClaim = plan.claim()
        let a = try #require(aClaim)
        #expect(plan.claim() != nil)
        plan.advance(a.id, by: 300_000)
        plan.release(a.id)   // the connection dropped half-way
        let againClaim = plan.claim()
        let again = try #require(againClaim)
        #expect(again.id == a.id)
        #expect(again.next == 300_000)
        expectCovers(plan)
    }

    @Test func advanceIsClampedToTheSegment() throws {
        var plan = SegmentPlan(total: 10, parts: 2, minSegmentSize: 1)
        let aClaim = plan.claim()
        let a = try #require(aClaim)
        #expect(plan.advance(a.id, by: 100) == 0)
        #expect(plan.segment(a.id)?.done == 5)
        #expect(plan.advance(a.id, by: -5) == 0)
        #expect(plan.advance(999, by: 1) == 0)
        expectCovers(plan)
    }

    /// Many connections racing, some failing half-way, with random stealing: bytes are never lost or doubled.
    @Test(arguments: [1, 2, 3, 4, 5])
    func randomScheduleAlwaysCoversTheFile(_ seed: UInt64) {
        var random = SplitMix(seed: seed)
        let total = Int64(50 * mib + 12_345)
        var plan = SegmentPlan(total: total, parts: 6, minSegmentSize: mib / 4)
        var working: [Int] = []
        var written = Set<Int64>()  // 4 KiB block starts written, to catch double counting
        var steps = 0
        while !plan.isComplete && steps < 100_000 {
            steps += 1
            while working.count < 6, let segment = plan.claim() { working.append(segment.id) }
            guard !working.isEmpty else { break }
            let pick = Int(random.next() % UInt64(working.count))
            let id = working[pick]
            if random.next() % 50 == 0 {
                plan.release(id)
                working.remove(at: pick)
                continue
            }
            let before = plan.segment(id)?.next ?? 0
            let allowed = plan.remaining(id)
            let chunk = min(allowed, Int64(random.next() % 200_000) + 1)
            var block = (before + 4095) / 4096 * 4096
            while block < before + chunk {
                if !written.insert(block).inserted { Issue.record("block \(block) written twice") }
                block += 4096
            }
            if plan.advance(id, by: chunk) == 0 {
                plan.release(id)
                working.remove(at: pick)
            }
            if !covers(plan) { Issue.record("cover broken at step \(steps): \(plan.segments)"); break }
        }
        #expect(plan.isComplete)
        #expect(plan.doneBytes == total)
    }

    @Test func contiguousPrefixStopsAtTheFirstGap() {
        let segments = [Segment(id: 0, start: 0, end: 10, done: 10), Segment(id: 1, start: 10, end: 20, done: 4),
                        Segment(id: 2, start: 20, end: 30, done: 10)]
        #expect(SegmentPlan.contiguousPrefix(of: segments) == 14)
        #expect(SegmentPlan.contiguousPrefix(of: segments.reversed()) == 14)
        #expect(SegmentPlan.contiguousPrefix(of: [Segment(id: 0, start: 0, end: 10, done: 0)]) == 0)
        #expect(SegmentPlan.contiguousPrefix(of: [Segment(id: 0, start: 5, end: 10, done: 5)]) == 0)
        #expect(SegmentPlan.contiguousPrefix(of: []) == 0)
    }

    @Test func restoringValidatesCoverage() {
        let good = [Segment(id: 1, start: 0, end: 5, done: 5), Segment(id: 7, start: 5, end: 10, done: 2)]
        let plan = SegmentPlan(restoring: good.reversed(), total: 10, minSegmentSize: 1)
        #expect(plan?.doneBytes == 7)
        #expect(plan?.segments.map(\.id) == [1, 7])
        #expect(SegmentPlan(restoring: good, total: 11, minSegmentSize: 1) == nil)
        #expect(SegmentPlan(restoring: [Segment(id: 1, start: 0, end: 5), Segment(id: 2, start: 6, end: 10)], total: 10, minSegmentSize: 1) == nil)
        #expect(SegmentPlan(restoring: [Segment(id: 1, start: 0, end: 6), Segment(id: 2, start: 5, end: 10)], total: 10, minSegmentSize: 1) == nil)
        #expect(SegmentPlan(restoring: [Segment(id: 1, start: 0, end: 10, done: 11)], total: 10, minSegmentSize: 1) == nil)
        #expect(SegmentPlan(restoring: [Segment(id: 1, start: 0, end: 5), Segment(id: 1, start: 5, end: 10)], total: 10, minSegmentSize: 1) == nil)
        // A restored plan hands out new ids that do not collide.
        var restored = SegmentPlan(restoring: [Segment(id: 3, start: 0, end: 40)], total: 40, minSegmentSize: 1)
        let first = restored?.claim()
        let stolen = restored?.claim()
        #expect(first?.id == 3)
        #expect(stolen?.id == 4)
    }
}

/// A small deterministic generator for schedule tests.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
