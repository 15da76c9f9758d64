import Testing
@testable import HaulKit

@Suite struct SegmentMapTests {
    typealias R = SegmentMap.ClosedOpen

    @Test func segmentsGiveDoneAndActiveRanges() {
        let segments = [
            Segment(id: 0, start: 0, end: 100, done: 100), Segment(id: 1, start: 100, end: 200, done: 40),
            Segment(id: 2, start: 200, end: 300, done: 0), Segment(id: 3, start: 300, end: 400, done: 100),
        ]
        let map = SegmentMap(total: 400, segments: segments.shuffled())
        #expect(map.total == 400)
        #expect(map.done == [R(0, 140), R(300, 400)])
        #expect(map.active == [R(140, 300)])
        let paused = SegmentMap(total: 400, segments: segments, running: false)
        #expect(paused.done == map.done && paused.active.isEmpty)
    }

    /// Only the segments a connection works on are being fetched: the rest of the others is "not yet" (in
    /// neither list), as a segment is between two connections or before its first.
    @Test func segmentsWithoutAConnectionAreNotYetFetched() {
        let segments = [
            Segment(id: 0, start: 0, end: 100, done: 30), Segment(id: 1, start: 100, end: 200, done: 0),
            Segment(id: 2, start: 200, end: 300, done: 50), Segment(id: 3, start: 300, end: 400, done: 100),
        ]
        let map = SegmentMap(total: 400, segments: segments, fetching: [0, 3])
        #expect(map.done == [R(0, 30), R(200, 250), R(300, 400)])
        #expect(map.active == [R(30, 100)])
        let notYet = 400 - (map.done + map.active).reduce(0) { $0 + $1.end - $1.start }
        #expect(notYet == 150, "segment 1 whole and the rest of segment 2")
        #expect(SegmentMap(total: 400, segments: segments, running: false, fetching: [0, 1, 2]).active.isEmpty, "paused: nothing fetched")
    }

    @Test func aCompleteDownloadIsOneDoneRange() {
        let map = SegmentMap(total: 1_000, segments: (0..<10).map { Segment(id: $0, start: Int64($0) * 100, end: Int64($0 + 1) * 100, done: 100) })
        #expect(map.done == [R(0, 1_000)])
        #expect(map.active.isEmpty)
    }

    @Test func aSingleConnectionDownloadIsItsPrefix() {
        #expect(SegmentMap(total: 10, bytes: 4, running: true) == SegmentMap(total: 10, done: [R(0, 4)], active: [R(4, 10)]))
        #expect(SegmentMap(total: nil, bytes: 4, running: true) == SegmentMap(total: nil, done: [R(0, 4)], active: []))
        #expect(SegmentMap(total: 10, bytes: 0, running: false) == SegmentMap(total: 10, done: [], active: []))
        #expect(SegmentMap(total: 10, bytes: 10, running: false).done == [R(0, 10)])
    }

    @Test func mergingSortsJoinsAndDropsEmptyRanges() {
        #expect(SegmentMap.merged([R(5, 7), R(0, 2), R(2, 3), R(6, 9), R(4, 4), R(9, 8)]) == [R(0, 3), R(5, 9)])
        #expect(SegmentMap.merged([]) == [])
        #expect(SegmentMap.merged([R(0, 10), R(2, 3)]) == [R(0, 10)])
    }

    @Test func manyRangesAreJoinedAcrossTheSmallestGaps() {
        // 1,000 ranges of 10 bytes; gaps of 1 byte except every 100th gap of 1,000.
        var ranges: [R] = [], position: Int64 = 0
        for index in 0..<1_000 {
            ranges.append(R(position, position + 10))
            position += 10 + (index % 100 == 99 ? 1_000 : 1)
        }
        let bounded = SegmentMap.bounded(ranges, limit: 10)
        #expect(bounded.count == 10)
        #expect(bounded.first?.start == 0)
        #expect(bounded.last?.end == ranges.last?.end)
        for (index, range) in bounded.enumerated() { #expect(range.end - range.start == 100 * 11 - 1, "\(index)") }
        #expect(SegmentMap.bounded(ranges).count == SegmentMap.maxRanges)
    }

    @Test func boundingKeepsEveryWrittenByteCovered() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var ranges: [R] = [], position: Int64 = 0
            for _ in 0..<Int.random(in: 1...600, using: &generator) {
                let start = position + Int64.random(in: 0...50, using: &generator)
                let end = start + Int64.random(in: 1...50, using: &generator)
                ranges.append(R(start, end))
                position = end
            }
            let limit = Int.random(in: 1...300, using: &generator)
            let bounded = SegmentMap.bounded(ranges, limit: limit)
            #expect(bounded.count <= limit)
            #expect(bounded == SegmentMap.merged(bounded), "sorted and disjoint")
            for range in ranges { #expect(bounded.contains { $0.start <= range.start && range.end <= $0.end }) }
        }
    }

    @Test func theThrottleLetsOneEventPerKeyPerInterval() {
        var throttle = KeyedThrottle(interval: .milliseconds(500))
        let start = ContinuousClock.now
        let first = throttle.allow("a", at: start)
        let tooSoon = throttle.allow("a", at: start + .milliseconds(499))
        let otherKey = throttle.allow("b", at: start + .milliseconds(1))
        let later = throttle.allow("a", at: start + .milliseconds(500))
        throttle.forget("a")
        let forgotten = throttle.allow("a", at: start + .milliseconds(501))
        #expect(first && !tooSoon && otherKey && later && forgotten)
        #expect(throttle.count == 2)
    }

    /// The dashboard's progress throttle: a session's 250 ms events, with jitter, pass every other one.
    @Test func progressEventsPassAboutTwiceASecond() {
        var throttle = KeyedThrottle(interval: .milliseconds(450))
        let start = ContinuousClock.now
        var passed = 0
        for step in 0..<40 {
            if throttle.allow("t", at: start + .milliseconds(step * 250 + (step % 3 == 0 ? 10 : 0))) { passed += 1 }
        }
        #expect(passed == 20, "10 s of 250 ms events: two a second")
    }
}
