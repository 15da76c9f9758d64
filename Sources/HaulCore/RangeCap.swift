/// What a segmented download learned of a server that answers a closed range with fewer bytes than asked, with a
/// correct `Content-Range` for what it sends: servers and CDNs that cap the size of a range do so, and RFC 9110 §14.4
/// lets the client ask for the rest. The bytes that came are kept; the rest of the segment is asked for again, each
/// request asking for at most a quarter of the cap before its start (``BoundaryChecks/overlap(next:segmentStart:rangeCap:)``),
/// so that every capped answer brings new bytes.
///
/// Bounded: an answer that brought no new byte is asked again at once only when the next request asks for fewer bytes
/// before its start than it did (``asksAgainAtOnce(next:segmentStart:usedOverlap:)``); as the cap only shrinks, and a
/// request's overlap is at most a quarter of it, that divides the cap by four each time. Any other answer that brings nothing is a
/// failure of the connection's retry rules (``RetryRules/endedEarly(held:)``). Pure; shared by the connections of one
/// download.
package struct RangeCap: Sendable, Equatable {
    /// The fewest bytes a short answer brought (its overlap included), once one did.
    package private(set) var bytes: Int64?

    /// Whether the answers seen so far show a cap below `minSegmentSize`, the smallest segment a download makes
    /// (1 MiB by default, aria2c's smallest `--min-split-size`): every connection would then spend a request per few
    /// bytes (a 10 kB cap: 2,000 requests for 20 MB), and one plain request, which no cap limits, is faster, as curl
    /// and wget fetch such a file (``RestartReason/smallRanges(cap:)``).
    package func isTooSmall(forSegmentsOf minSegmentSize: Int64) -> Bool {
        (bytes ?? .max) < minSegmentSize
    }

    package init(bytes: Int64? = nil) {
        self.bytes = bytes
    }

    /// An answer to a closed range ended cleanly after `received` bytes, before the end asked for.
    package mutating func shortAnswer(received: Int64) {
        guard received > 0 else { return }
        bytes = Swift.min(bytes ?? received, received)
    }

    /// The bytes a request at `next`, in a segment starting at `segmentStart`, asks for before `next`.
    package func overlap(next: Int64, segmentStart: Int64) -> Int64 {
        BoundaryChecks.overlap(next: next, segmentStart: segmentStart, rangeCap: bytes)
    }

    /// After a short answer that brought no new byte (all of it repeated the `usedOverlap` bytes asked for before
    /// `next`): whether the next request asks for fewer, and so is worth sending at once.
    package func asksAgainAtOnce(next: Int64, segmentStart: Int64, usedOverlap: Int64) -> Bool {
        overlap(next: next, segmentStart: segmentStart) < usedOverlap
    }
}
