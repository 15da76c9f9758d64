/// Whether a download is split over several connections, decided from the first response.
package enum SegmentationPolicy {
    public enum Decision: Equatable, Sendable {
        case segmented(parts: Int)
        /// One connection; `reason` says why when more were asked for or would have been used.
        case single(reason: String?)
    }

    /// `requested` is the user's `--segments` (`nil`: automatic). A split needs a known length, range support
    /// and a validator (strong ETag or Last-Modified) so that every segment's `If-Range` can detect a change.
    public static func decide(
        requested: Int?, info: ResourceInfo, rangeSupported: Bool, minSegmentSize: Int64, maxConnectionsPerHost: Int
    ) -> Decision {
        if requested == 1 { return .single(reason: nil) }
        guard rangeSupported else { return .single(reason: "the server does not support byte ranges") }
        guard let total = info.totalLength else { return .single(reason: "the server did not say how long the file is") }
        guard info.validators.ifRangeValue != nil else {
            return .single(reason: "the server sent no validator (strong ETag or Last-Modified) to keep segments consistent")
        }
        let parts = min(SegmentPlan.partCount(total: total, requested: requested, minSegmentSize: minSegmentSize), max(1, maxConnectionsPerHost))
        if parts > 1 { return .segmented(parts: parts) }
        return .single(reason: requested == nil ? nil : "the file is too small to split")
    }
}
