/// The overlap checks of a segmented download while it runs. Every range request that starts past byte 0 also asks
/// for a few bytes before its start — bytes another request writes (the segment before it, the connection a takeover
/// split) or this segment's own, written before a retry — and they must equal what is, or will be, written there.
/// A file replaced on the server with its size and date kept keeps an ETag made of them (nginx, apache2, lighttpd,
/// caddy), so `If-Range` lets the new version through: only the bytes show that two requests saw two versions.
///
/// The bytes of a window nobody has written yet are kept until the plan shows it written (``takeWritten(in:)``).
/// Pure; the shell reads the file and compares.
///
/// Bounded: a window lies just before the start of a request whose own bytes are not written yet, so at most one
/// window per segment is pending (a second answer for the same window is compared with the first, and not kept).
package struct BoundaryChecks: Equatable, Sendable {
    /// Bytes asked for before a segment's first byte (its first request, a takeover): enough that a different version
    /// shows, small next to a segment (one per boundary, at least 1 MiB apart by default).
    public static let boundaryLength: Int64 = 16 * 1024

    /// Bytes a request whose segment holds `next - start` bytes asks for before `next`: the resume overlap
    /// (``ResumePolicy/overlapLength``) when it continues bytes of its own, ``boundaryLength`` when it starts a
    /// segment; never before byte 0.
    ///
    /// `rangeCap`: the fewest bytes a short answer of this server brought (``RangeCap``); the overlap is then at most
    /// a quarter of it, so that every answer so capped brings mostly new bytes as well as bytes to compare (a few KiB
    /// still show a different version; the number of requests is what such a server costs).
    public static func overlap(next: Int64, segmentStart: Int64, rangeCap: Int64? = nil) -> Int64 {
        let wanted = next > segmentStart ? ResumePolicy.overlapLength : boundaryLength
        return max(0, min(next, wanted, rangeCap.map { $0 / 4 } ?? wanted))
    }

    /// Server bytes for `window` of the file, to be compared with the bytes written there.
    package struct Check: Equatable, Sendable {
        public var window: Range<Int64>
        public var bytes: [UInt8]

        public init(window: Range<Int64>, bytes: [UInt8]) {
            self.window = window
            self.bytes = bytes
        }
    }

    /// Checks whose window is not written yet.
    public private(set) var pending: [Check] = []

    public init() {}

    /// Keeps `check` until its window is written. `false` when a pending check of the same window holds other bytes:
    /// two answers disagree, the file changed.
    public mutating func add(_ check: Check) -> Bool {
        guard !check.window.isEmpty, check.bytes.count == check.window.count else { return true }
        if let same = pending.first(where: { $0.window == check.window }) { return same.bytes == check.bytes }
        pending.append(check)
        return true
    }

    /// Removes and returns the checks whose window `plan` shows written.
    public mutating func takeWritten(in plan: SegmentPlan) -> [Check] {
        guard !pending.isEmpty else { return [] }
        // Called on every recorded write: the segments are put in order once, not once a window.
        let ordered = plan.orderedSegments
        var due: [Check] = []
        pending.removeAll { check in
            guard plan.isWritten(check.window, ordered: ordered) else { return false }
            due.append(check)
            return true
        }
        return due
    }
}

extension SegmentPlan {
    /// Whether every byte of `range` is written (within some segment's written prefix).
    public func isWritten(_ range: Range<Int64>) -> Bool {
        isWritten(range, ordered: orderedSegments)
    }

    /// The segments by their start.
    var orderedSegments: [Segment] { segments.sorted { $0.start < $1.start } }

    /// ``isWritten(_:)`` with ``orderedSegments`` read once for several ranges.
    func isWritten(_ range: Range<Int64>, ordered: [Segment]) -> Bool {
        guard !range.isEmpty else { return true }
        guard range.lowerBound >= 0, range.upperBound <= total else { return false }
        var covered = range.lowerBound
        for segment in ordered where segment.end > covered {
            guard segment.start <= covered, segment.next > covered else { return false }
            covered = segment.next
            if covered >= range.upperBound { return true }
        }
        return covered >= range.upperBound
    }
}
