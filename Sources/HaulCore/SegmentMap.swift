/// Where a download's bytes are: the byte ranges written and those being fetched, merged and bounded for the
/// dashboard's segment map. Ranges are `[start, end)` with `end` exclusive. Pure.
package struct SegmentMap: Equatable, Sendable {
    /// At most this many ranges in each list: closer ones are joined across their smallest gaps.
    public static let maxRanges = 256

    public var total: Int64?
    public var done: [ClosedOpen]
    public var active: [ClosedOpen]

    /// A range `[start, end)`.
    public struct ClosedOpen: Equatable, Sendable {
        public var start: Int64
        public var end: Int64
        public init(_ start: Int64, _ end: Int64) {
            self.start = start
            self.end = end
        }
    }

    public init(total: Int64?, done: [ClosedOpen], active: [ClosedOpen]) {
        self.total = total
        self.done = done
        self.active = active
    }

    /// The map of a segmented download: each segment's written prefix is done; while it runs, the rest of an
    /// unfinished segment a connection works on is being fetched (every unfinished one when `fetching` is nil),
    /// and the rest of the others is in neither list: not fetched yet.
    public init(total: Int64, segments: [Segment], running: Bool = true, fetching: Set<Int>? = nil, limit: Int = maxRanges) {
        var done: [ClosedOpen] = [], active: [ClosedOpen] = []
        for segment in segments {
            let written = min(max(segment.next, segment.start), segment.end)
            if written > segment.start { done.append(ClosedOpen(segment.start, written)) }
            let isFetched = fetching.map { $0.contains(segment.id) } ?? true
            if running, isFetched, written < segment.end { active.append(ClosedOpen(written, segment.end)) }
        }
        self.init(total: total, done: Self.bounded(done, limit: limit), active: Self.bounded(active, limit: limit))
    }

    /// The map of a single-connection download: the first `bytes` are done.
    public init(total: Int64?, bytes: Int64, running: Bool) {
        let written = max(0, bytes)
        let done = written > 0 ? [ClosedOpen(0, written)] : []
        var active: [ClosedOpen] = []
        if running, let total, total > written { active = [ClosedOpen(written, total)] }
        self.init(total: total, done: done, active: active)
    }

    /// Sorts and merges overlapping or touching ranges; empty and inverted ones go.
    public static func merged(_ ranges: [ClosedOpen]) -> [ClosedOpen] {
        var result: [ClosedOpen] = []
        for range in ranges.filter({ $0.end > $0.start }).sorted(by: { $0.start < $1.start }) {
            if let lastEnd = result.last?.end, range.start <= lastEnd {
                result[result.count - 1].end = max(lastEnd, range.end)
            } else {
                result.append(range)
            }
        }
        return result
    }

    /// ``merged(_:)``, then, while there are more than `limit` ranges, joins neighbours across the smallest gaps.
    public static func bounded(_ ranges: [ClosedOpen], limit: Int = maxRanges) -> [ClosedOpen] {
        let merged = merged(ranges)
        let limit = max(1, limit)
        guard merged.count > limit else { return merged }
        // Gap i lies between ranges i and i + 1; close the (count - limit) smallest (the earlier on ties).
        let gaps = (0..<(merged.count - 1)).sorted {
            let a = merged[$0 + 1].start - merged[$0].end, b = merged[$1 + 1].start - merged[$1].end
            return a != b ? a < b : $0 < $1
        }
        let closed = Set(gaps.prefix(merged.count - limit))
        var result: [ClosedOpen] = [merged[0]]
        for index in 1..<merged.count {
            if closed.contains(index - 1) {
                result[result.count - 1].end = merged[index].end
            } else {
                result.append(merged[index])
            }
        }
        return result
    }
}
