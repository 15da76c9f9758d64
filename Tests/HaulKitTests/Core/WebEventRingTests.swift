import Testing
@testable import HaulKit

@Suite struct WebEventRingTests {
    func numbers(_ replay: WebEventRing<String>.Replay) -> [Int64]? {
        guard case .events(let events) = replay else { return nil }
        return events.map(\.number)
    }

    @Test func replaysWhatFollowsACursor() {
        var ring = WebEventRing<String>(run: "r1", capacity: 4)
        #expect(ring.lastCursor == "r1.0")
        #expect(numbers(ring.replay(after: "r1.0")) == [])
        for name in ["a", "b", "c"] { ring.append(name) }
        #expect(numbers(ring.replay(after: "r1.0")) == [1, 2, 3])
        #expect(numbers(ring.replay(after: "r1.2")) == [3])
        #expect(numbers(ring.replay(after: "r1.3")) == [])
        guard case .events(let events) = ring.replay(after: "r1.1") else { Issue.record("reset"); return }
        #expect(events.map(\.element) == ["b", "c"])
        #expect(ring.cursor(3) == "r1.3")
    }

    @Test func aCursorTheRingNoLongerHoldsResets() {
        var ring = WebEventRing<String>(run: "r1", capacity: 3)
        for index in 1...10 { ring.append("e\(index)") }
        #expect(ring.count == 3)
        #expect(ring.first == 8)
        #expect(numbers(ring.replay(after: "r1.7")) == [8, 9, 10])
        guard case .events(let events) = ring.replay(after: "r1.7") else { Issue.record("reset"); return }
        #expect(events.map(\.element) == ["e8", "e9", "e10"])
        #expect(numbers(ring.replay(after: "r1.6")) == nil, "e7 was dropped: reset")
        #expect(numbers(ring.replay(after: "r1.11")) == nil, "from the future")
    }

    @Test func aCursorOfAnotherRunOrMalformedResets() {
        var ring = WebEventRing<String>(run: "r2", capacity: 8)
        ring.append("x")
        for cursor in ["r1.1", "r1.0", "r2", "r2.", "r2.-1", "r2.x", "", ".1", "r2.1.1"] {
            #expect(numbers(ring.replay(after: cursor)) == nil, "\(cursor)")
        }
    }

    @Test func wrapsManyTimesInOrder() {
        var ring = WebEventRing<Int>(run: "r", capacity: 5)
        for index in 1...1_003 {
            ring.append(index)
            guard case .events(let events) = ring.replay(after: ring.first - 1) else { Issue.record("reset at \(index)"); return }
            #expect(events.map(\.element) == Array(max(1, index - 4)...index))
        }
    }
}
