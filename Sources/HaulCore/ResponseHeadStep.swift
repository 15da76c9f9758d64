/// What a download does with a response head: ``ResumePolicy/decide(plan:point:response:)`` says what the answer
/// means for the bytes held; this step adds what only the download knows — bytes adopted from a file given to
/// `--continue`, bytes another URL wrote, whether the request was a range probe, whether the file would be split —
/// and gives the one thing to do. The shell (`DownloadJob`) does it; no decision is left in its switch.
package enum ResponseHeadStep: Equatable, Sendable {
    /// The redirect could not be followed (the sender follows every redirect it may).
    case redirectNotFollowed(location: String)
    /// A transient status: retry after the backoff (honouring `Retry-After`).
    case retry(status: Int, retryAfter: String?)
    /// A permanent refusal: the lifecycle decides whether the original URL is tried again.
    case refused(status: Int)
    /// An answer no correct server sends: retried like a server error.
    case protocolViolation(String)
    /// A length no file can have: fail at once (exit 7), writing nothing.
    case impossibleLength(Int64)
    /// Nothing more to fetch. `recordEmptyFile`: nothing was open yet (an empty file answers the probe with
    /// 416 `bytes */0`), so the empty file is created and recorded.
    case complete(recordEmptyFile: Bool)
    /// The file given to `--continue` cannot be continued: fail, leaving it unchanged.
    case adoptedFileDiffers(String)
    /// The file given to `--continue` cannot be checked: the server sends whole files only.
    case adoptedFileUncheckable
    /// The file given to `--continue` (`held` bytes) is longer than the server's (`length`): it is no partial copy of
    /// this download. Fail as a destination that is not this download's, leaving it unchanged.
    case adoptedFileLonger(length: Int64, held: Int64)
    /// The bytes another URL wrote cannot be continued from this one: fail, keeping them.
    case foreignBytesDiffer(String)
    /// Discard the bytes held and start again from byte 0.
    case restart(RestartReason)
    /// Write the whole body from byte 0 over one connection. `announceSingleConnection`: say why segments are not
    /// used (a probe found no range support); `replacingHeldBytes`: say that the bytes held are being replaced.
    case writeWhole(ResourceInfo, announceSingleConnection: Bool, replacingHeldBytes: Bool)
    /// Continue at the bytes held, after comparing the body's first `overlap` bytes with them. `connections`: for
    /// the answer to a probe, whether the file is split (and into how many) or fetched over one connection (and
    /// why, when more were asked for); `nil` otherwise.
    case append(ResourceInfo, overlap: Int64, connections: SegmentationPolicy.Decision?)

    /// What the download knows beside the answer.
    package struct Context: Equatable, Sendable {
        /// Bytes held from a file given to `--continue` (not yet verified).
        package var adopted = false
        /// Bytes held that another URL wrote (not yet verified).
        package var foreign = false
        /// The request was `bytes=0-` on a fresh download, to learn whether the server supports ranges.
        package var probing = false
        /// A partial file is open.
        package var fileOpen = false
        /// Bytes held, and the validators they were fetched with.
        package var held: Int64 = 0
        package var heldValidators = Validators()
        /// The server's range answers were consistent so far (the lifecycle's `mayProbeRanges`).
        package var rangesTrusted = true
        /// The segments asked for (`nil`: Haul chooses), the smallest segment and the connections per host.
        package var segments: Int?
        package var minSegmentSize: Int64 = 1 << 20
        package var maxConnectionsPerHost = 8

        package init() {}
    }

    /// The step for `decision`, an answer to a download's request, in `context`.
    package static func decide(_ decision: ResponseDecision, _ context: Context) -> ResponseHeadStep {
        switch decision {
        case .redirect(let location): return .redirectNotFollowed(location: location)
        case .retry(let status, let retryAfter): return .retry(status: status, retryAfter: retryAfter)
        case .fail(let status): return .refused(status: status)
        case .protocolViolation(let why): return .protocolViolation(why)
        case .impossibleLength(let claimed): return .impossibleLength(claimed)
        case .alreadyComplete: return .complete(recordEmptyFile: !context.fileOpen)
        case .restart(let reason):
            if context.adopted {
                if case .heldPastEnd(let length, let held) = reason { return .adoptedFileLonger(length: length, held: held) }
                return .adoptedFileDiffers(reason.description)
            }
            if context.foreign { return .foreignBytesDiffer(reason.description) }
            return .restart(reason)
        case .writeWhole(let info, _):
            if context.adopted { return .adoptedFileUncheckable }
            if context.foreign { return .foreignBytesDiffer("the server does not support byte ranges, so they cannot be checked") }
            if context.held > 0, context.heldValidators.conflicts(with: info.validators), context.rangesTrusted,
               info.acceptsRanges, context.segments != 1, case .segmented = split(info, context) {
                // A new version that would be split: start over like a fresh download, with every connection.
                return .restart(.resourceChanged("the server sent a new version"))
            }
            return .writeWhole(info, announceSingleConnection: context.probing, replacingHeldBytes: context.held > 0)
        case .append(let info, _, let overlap):
            return .append(info, overlap: overlap, connections: context.probing ? split(info, context) : nil)
        }
    }

    /// Whether an answer describing `info` splits the file, with range support shown.
    package static func split(_ info: ResourceInfo, _ context: Context) -> SegmentationPolicy.Decision {
        SegmentationPolicy.decide(
            requested: context.segments, info: info, rangeSupported: true,
            minSegmentSize: context.minSegmentSize, maxConnectionsPerHost: context.maxConnectionsPerHost)
    }
}
