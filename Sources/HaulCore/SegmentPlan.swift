/// One byte range of a segmented download and how much of it is written.
public struct Segment: Codable, Equatable, Sendable {
    /// The segment's number within its download (0 is the first connection's).
    public var id: Int
    /// First byte of the range.
    public var start: Int64
    /// One past the last byte of the range.
    public var end: Int64
    /// Bytes `start..<start + done` are written.
    public var done: Int64

    /// The range `start..<end`, of which the first `done` bytes are written.
    public init(id: Int, start: Int64, end: Int64, done: Int64 = 0) {
        self.id = id
        self.start = start
        self.end = end
        self.done = done
    }

    /// The next byte to fetch.
    public var next: Int64 { start + done }
    /// Bytes of the range still to fetch.
    public var remaining: Int64 { end - next }
    /// Whether every byte of the range is written.
    public var isComplete: Bool { next >= end }
}

/// How one file is split over several connections, with work stealing: a connection that runs out of
/// work takes over the upper half of the largest range still outstanding, so all finish together.
///
/// Invariant: the segments, sorted by `start`, cover `0..<total` exactly, without gaps or overlaps,
/// and every `done` is within its segment.
package struct SegmentPlan: Equatable, Sendable {
    public private(set) var segments: [Segment]
    public let total: Int64
    public let minSegmentSize: Int64
    /// Segments a connection is working on.
    public private(set) var active: Set<Int> = []
    private var nextID: Int

    /// Splits `0..<total` into `parts` nearly equal segments.
    public init(total: Int64, parts: Int, minSegmentSize: Int64) {
        let count = max(1, min(Int64(parts), total))
        let base = total / count
        var segments: [Segment] = []
        var start: Int64 = 0
        for index in 0..<count {
            let end = index == count - 1 ? total : start + base
            segments.append(Segment(id: Int(index), start: start, end: end))
            start = end
        }
        self.segments = segments
        self.total = total
        self.minSegmentSize = max(1, minSegmentSize)
        self.nextID = Int(count)
    }

    /// Splits `heldPrefix..<total` into `parts` nearly equal segments after one complete segment holding the
    /// bytes `0..<heldPrefix` already written (a single-connection partial, or a file given to `--continue`).
    public init(total: Int64, parts: Int, minSegmentSize: Int64, heldPrefix: Int64) {
        let prefix = max(0, min(heldPrefix, total))
        let rest = SegmentPlan(total: total - prefix, parts: parts, minSegmentSize: minSegmentSize)
        var segments: [Segment] = prefix > 0 ? [Segment(id: 0, start: 0, end: prefix, done: prefix)] : []
        for segment in rest.segments where total > prefix {
            segments.append(Segment(id: segments.count, start: prefix + segment.start, end: prefix + segment.end))
        }
        self.segments = segments
        self.total = total
        self.minSegmentSize = max(1, minSegmentSize)
        self.nextID = segments.count
    }

    /// Restores a plan saved by an earlier run; `nil` unless the segments cover `0..<total` exactly.
    public init?(restoring saved: [Segment], total: Int64, minSegmentSize: Int64) {
        let sorted = saved.sorted { $0.start < $1.start }
        var expected: Int64 = 0
        for segment in sorted {
            guard segment.start == expected, segment.end > segment.start, segment.done >= 0,
                  segment.done <= segment.end - segment.start else { return nil }
            expected = segment.end
        }
        guard expected == total, total > 0, Set(sorted.map(\.id)).count == sorted.count else { return nil }
        segments = sorted
        self.total = total
        self.minSegmentSize = max(1, minSegmentSize)
        nextID = (sorted.map(\.id).max() ?? -1) + 1
    }

    /// Files smaller than this are fetched over one connection unless more are asked for.
    public static let automaticThreshold: Int64 = 16 << 20

    /// How many connections to use: `requested`, but never a segment under `minSegmentSize`. Chosen
    /// automatically (`nil`): one for files under 16 MiB, else one per 4 MiB up to 8.
    public static func partCount(total: Int64, requested: Int?, minSegmentSize: Int64) -> Int {
        let size = max(1, minSegmentSize)
        let byLength = Int(min(Int64(Int32.max), total / size))
        if let requested { return max(1, min(requested, byLength)) }
        guard total >= automaticThreshold else { return 1 }
        return max(1, min(8, byLength, Int(total / (4 << 20))))
    }

    public var isComplete: Bool { segments.allSatisfy(\.isComplete) }

    /// How many bytes from byte 0 on are written without a gap: what a single connection may continue from.
    public static func contiguousPrefix(of segments: [Segment]) -> Int64 {
        var prefix: Int64 = 0
        for segment in segments.sorted(by: { $0.start < $1.start }) {
            guard segment.start == prefix else { break }
            prefix = segment.next
            if !segment.isComplete { break }
        }
        return prefix
    }
    public var doneBytes: Int64 { segments.reduce(0) { $0 + $1.done } }

    /// The stretches of bytes written without a gap, in order: adjacent written bytes of neighbouring
    /// segments form one stretch.
    public var heldRuns: [Range<Int64>] {
        var runs: [Range<Int64>] = []
        for segment in segments where segment.done > 0 {
            if let last = runs.last, last.upperBound == segment.start {
                runs[runs.count - 1] = last.lowerBound..<segment.next
            } else {
                runs.append(segment.start..<segment.next)
            }
        }
        return runs
    }

    public func segment(_ id: Int) -> Segment? { segments.first { $0.id == id } }

    /// Work for a free connection: the first unfinished segment nobody works on, else the upper half of the
    /// largest remaining range of a busy one, as long as that half is at least `minSegmentSize`.
    public mutating func claim() -> Segment? {
        if let index = segments.firstIndex(where: { !$0.isComplete && !active.contains($0.id) }) {
            active.insert(segments[index].id)
            return segments[index]
        }
        let busy = segments.indices.filter { active.contains(segments[$0].id) && !segments[$0].isComplete }
        guard let victim = busy.max(by: { segments[$0].remaining < segments[$1].remaining }) else { return nil }
        let half = segments[victim].remaining / 2
        guard half >= minSegmentSize else { return nil }
        let middle = segments[victim].end - half
        let stolen = Segment(id: nextID, start: middle, end: segments[victim].end)
        nextID += 1
        segments[victim].end = middle
        segments.insert(stolen, at: victim + 1)
        active.insert(stolen.id)
        return stolen
    }

    /// Records `count` bytes written at the segment's next byte; returns how many more it may write
    /// (its end may have moved down since it started). Bytes past the end are not counted.
    @discardableResult
    public mutating func advance(_ id: Int, by count: Int64) -> Int64 {
        guard let index = segments.firstIndex(where: { $0.id == id }) else { return 0 }
        let length = segments[index].end - segments[index].start
        segments[index].done = min(length, segments[index].done + max(0, count))
        return segments[index].remaining
    }

    /// How many bytes the segment may still write.
    public func remaining(_ id: Int) -> Int64 { segment(id)?.remaining ?? 0 }

    /// The connection working on `id` stopped (done, failed or cancelled); what is left may be claimed again.
    public mutating func release(_ id: Int) {
        active.remove(id)
    }
}
