/// What Haul already holds for a download: the durable byte count and what the server said about the resource.
package struct ResumePoint: Equatable, Sendable {
    /// Bytes at the start of the partial file that are durable and belong to the version described by `validators`.
    public var offset: Int64
    public var validators: Validators
    public var totalLength: Int64?

    public init(offset: Int64 = 0, validators: Validators = Validators(), totalLength: Int64? = nil) {
        self.offset = offset
        self.validators = validators
        self.totalLength = totalLength
    }
}

/// The request to send next: the whole resource, or a byte range continuing the bytes held.
package enum RequestPlan: Equatable, Sendable {
    case whole
    /// `Range: bytes=start-` (or `bytes=start-last`), where `start = offset - overlap`. The first `overlap`
    /// body bytes repeat bytes already held and are compared with them before anything is appended.
    case range(start: Int64, overlap: Int64, ifRange: String?, last: Int64? = nil)

    public var start: Int64 {
        if case .range(let start, _, _, _) = self { return start }
        return 0
    }

    public var overlap: Int64 {
        if case .range(_, let overlap, _, _) = self { return overlap }
        return 0
    }

    /// The last byte asked for, when the range is closed.
    public var last: Int64? {
        if case .range(_, _, _, let last) = self { return last }
        return nil
    }

    /// The headers that carry the plan.
    public var headers: HTTPFields {
        guard case .range(let start, _, let ifRange, let last) = self else { return [:] }
        var fields: HTTPFields = ["Range": "bytes=\(start)-\(last.map(String.init) ?? "")"]
        if let ifRange { fields.append("If-Range", ifRange) }
        return fields
    }
}

/// A response's status line and headers, as the core sees them.
package struct ResponseHead: Equatable, Sendable {
    public var status: Int
    public var headers: HTTPFields

    public init(status: Int, headers: HTTPFields) {
        self.status = status
        self.headers = headers
    }
}

/// What a response said about the resource.
package struct ResourceInfo: Equatable, Sendable {
    public var validators: Validators
    public var totalLength: Int64?
    public var acceptsRanges: Bool

    public init(validators: Validators, totalLength: Int64?, acceptsRanges: Bool) {
        self.validators = validators
        self.totalLength = totalLength
        self.acceptsRanges = acceptsRanges
    }
}

/// Why bytes held must be discarded and the download started again from byte 0.
public enum RestartReason: Equatable, Sendable, CustomStringConvertible {
    /// The server's validators (ETag, Last-Modified, length) no longer match the bytes held; says which.
    case resourceChanged(String)
    /// A partial response that cannot be appended to the bytes held (a `Content-Range` that does not fit the
    /// request, `multipart/byteranges`, the whole file to a range request); says why.
    case invalidPartialResponse(String)
    /// The bytes re-fetched to check a resumed file differ from the bytes already on disk.
    case overlapMismatch
    /// More bytes are held than the file on the server has (`length` bytes, `held` held): they cannot be the start of
    /// it. Bytes Haul fetched mean the file changed; a file given to `--continue` was never a partial copy of it.
    case heldPastEnd(length: Int64, held: Int64)
    /// The server answers a range with at most `cap` bytes, too few for splitting the file to pay (``RangeCap``): the
    /// bytes of the split are set aside and the file is fetched over one connection, by one plain request.
    case smallRanges(cap: Int64)

    public var description: String {
        switch self {
        case .resourceChanged(let why): return "the file on the server changed (\(why))"
        case .heldPastEnd(let length, let held): return "the file on the server changed (length is now \(length) bytes, \(held) held)"
        case .invalidPartialResponse(let why): return "the server sent an unusable partial response (\(why))"
        case .overlapMismatch: return "the file on the server no longer matches the bytes already downloaded"
        case .smallRanges(let cap): return "the server answers a range with at most \(ByteFormat.string(cap)), too little to split the file"
        }
    }
}

/// How to treat a response, decided before a single body byte is written.
package enum ResponseDecision: Equatable, Sendable {
    /// The whole representation: write the body from byte 0. Bytes held before, if any, are discarded.
    case writeWhole(ResourceInfo, bodyLength: Int64?)
    /// A valid 206 continuing the bytes held: compare the first `overlap` body bytes, append the rest.
    case append(ResourceInfo, bodyLength: Int64, overlap: Int64)
    /// A 416 proving the bytes held are the complete, unchanged resource.
    case alreadyComplete
    /// Discard the bytes held and ask again from byte 0; nothing from this response is written.
    case restart(RestartReason)
    case redirect(location: String)
    /// A transient failure (408, 429, 5xx): retry after backoff, honouring `Retry-After`.
    case retry(status: Int, retryAfter: String?)
    /// A permanent HTTP failure.
    case fail(status: Int)
    /// A response no correct server sends for this request.
    case protocolViolation(String)
    /// A length no file can have (over ``ResumePolicy/maxPlausibleLength``): the server's claim, in bytes. Nothing
    /// of the response is written, and nothing is retried: the answer is the server's error, not a full disk.
    case impossibleLength(Int64)
}

/// The resume rules (RFC 9110 §13.1.5, §14, §15.3.7, §15.5.17): what to ask for, and how to treat what comes back.
package enum ResumePolicy {
    /// The longest resource Haul believes a server about: 1 EiB (2^60 bytes). No file system holds a file of that size
    /// on one machine (ext4 stops at 16 TiB a file; XFS and btrfs allow 8 EiB, far beyond any storage), so a
    /// longer `Content-Length` or `Content-Range` length — such as `…/9223372036854775807` — is the server's error,
    /// said as such (exit 7), never "not enough space".
    public static let maxPlausibleLength: Int64 = 1 << 60

    /// The one line for a length no file can have (``ResponseDecision/impossibleLength(_:)``), or one beyond what
    /// the file system at the destination can hold (`onThisFileSystem`, when it refuses the length with `EFBIG`).
    public static func impossibleLengthMessage(_ claimed: Int64, onThisFileSystem: Bool = false) -> String {
        "the server claims \(claimed) bytes, more than "
            + (onThisFileSystem ? "a file on this file system can hold" : "any file can hold")
            + "; the download was not started"
    }

    /// The length a successful response claims for the whole resource: a `Content-Range`'s complete length (else the
    /// end of its range), or a 200's `Content-Length`.
    public static func claimedLength(status: Int, headers: HTTPFields) -> Int64? {
        if status == 206 {
            guard let raw = headers["content-range"], case .satisfied(_, let last, let complete)? = ContentRange(raw) else { return nil }
            return complete ?? last + 1
        }
        return (200...299).contains(status) ? bodyLength(headers) : nil
    }

    /// Bytes re-requested before the resume offset and compared with the bytes held before anything is appended.
    public static let overlapLength: Int64 = 64 * 1024

    /// The request for the next attempt. With `probeRanges`, a fresh download asks for `bytes=0-`, so the
    /// answer shows at once whether the server supports ranges (206) or not (200).
    ///
    /// Every resume re-requests the last bytes held (up to ``overlapLength``) and compares them, even when a strong
    /// ETag matches: nginx, apache2, lighttpd and caddy make their ETags from a file's size and modification time,
    /// so a file rewritten in place with both kept (`touch -r`, `rsync --inplace -t`, two writes within a second)
    /// keeps its ETag. Only the bytes show that they are the same.
    ///
    /// `heldFromThisAnswer`: the bytes held were just received in one answer whose complete length was `*`; the rest
    /// is asked for from exactly the next byte, so that the server can say it ended (416) instead of sending the
    /// overlap again. `verifyOverlap` (bytes another URL wrote) asks for the overlap even then.
    public static func plan(for point: ResumePoint, probeRanges: Bool = false, verifyOverlap: Bool = false, heldFromThisAnswer: Bool = false) -> RequestPlan {
        guard point.offset > 0 else { return probeRanges ? .range(start: 0, overlap: 0, ifRange: nil) : .whole }
        if heldFromThisAnswer, !verifyOverlap {
            return .range(start: point.offset, overlap: 0, ifRange: point.validators.ifRangeValue)
        }
        let overlap = min(point.offset, overlapLength)
        return .range(start: point.offset - overlap, overlap: overlap, ifRange: point.validators.ifRangeValue)
    }

    /// Requests that check bytes held in `runs` (the gap-free stretches of a segmented partial) against the
    /// server before any segment continues: the last `overlapLength` bytes of each run, each answered by a 206
    /// whose body must equal them. `point` for each plan is `ResumePoint(offset: run end, …)`.
    public static func verificationPlans(for runs: [Range<Int64>], validators: Validators) -> [(plan: RequestPlan, point: Int64)] {
        runs.filter { !$0.isEmpty }.map { run in
            let overlap = min(Int64(run.count), overlapLength)
            let plan = RequestPlan.range(
                start: run.upperBound - overlap, overlap: overlap, ifRange: validators.ifRangeValue, last: run.upperBound - 1)
            return (plan, run.upperBound)
        }
    }

    /// Classifies a response to `plan`, sent while holding `point`.
    public static func decide(plan: RequestPlan, point: ResumePoint, response: ResponseHead) -> ResponseDecision {
        let headers = response.headers
        if let claimed = claimedLength(status: response.status, headers: headers), claimed > maxPlausibleLength {
            return .impossibleLength(claimed)
        }
        switch response.status {
        case 206:
            return decidePartial(plan: plan, point: point, headers: headers)
        case 200...299:
            let length = bodyLength(headers)
            let info = ResourceInfo(validators: .wholeResponse(headers), totalLength: length, acceptsRanges: acceptsRanges(headers))
            return .writeWhole(info, bodyLength: length)
        case let status where RedirectPolicy.redirectStatuses.contains(status):
            guard let location = headers["location"]?.trimmingASCIIWhitespace(), !location.isEmpty else {
                // 300 Multiple Choices names its preferred choice in Location, if any (curl and wget follow it).
                if response.status == 300 { return .fail(status: 300) }
                return .protocolViolation("redirect \(response.status) without a Location header")
            }
            return .redirect(location: location)
        case 305...399:
            // 305 Use Proxy (deprecated, never followed), 306 and the unassigned: an answer, not a failure to retry.
            // (304 to a request that was not conditional is the server's error: below.)
            return .fail(status: response.status)
        case 416:
            return decideUnsatisfiable(plan: plan, point: point, headers: headers)
        case 408, 429, 500...599:
            return .retry(status: response.status, retryAfter: headers["retry-after"])
        case 400...499:
            return .fail(status: response.status)
        default:
            return .protocolViolation("unexpected status \(response.status)")
        }
    }

    private static func decidePartial(plan: RequestPlan, point: ResumePoint, headers: HTTPFields) -> ResponseDecision {
        let start = plan.start
        let overlap = plan.overlap
        if let type = headers["content-type"], type.lowercased().hasPrefix("multipart/byteranges") {
            return .restart(.invalidPartialResponse("multipart/byteranges to a single-range request"))
        }
        guard let rawRange = headers["content-range"] else {
            return .restart(.invalidPartialResponse("206 without Content-Range"))
        }
        guard let range = ContentRange(rawRange), case .satisfied(let first, let last, let complete) = range else {
            return .restart(.invalidPartialResponse("malformed Content-Range \"\(rawRange)\""))
        }
        guard first == start else {
            return .restart(.invalidPartialResponse("range starts at byte \(first), asked for \(start)"))
        }
        if let known = point.totalLength {
            guard let complete else {
                return .restart(.invalidPartialResponse("unknown complete length, expected \(known)"))
            }
            guard complete == known else {
                return .restart(.resourceChanged("length is now \(complete) bytes, was \(known)"))
            }
        }
        if let complete, complete < point.offset {
            // The whole file is shorter than the bytes held: no range of it continues them.
            return .restart(.heldPastEnd(length: complete, held: point.offset))
        }
        if let declared = bodyLength(headers), declared != range.length {
            return .restart(.invalidPartialResponse("Content-Length \(declared) does not match Content-Range \(range.length)"))
        }
        // A closed range (a segment, a check of bytes held) may be answered with less than asked (a server or CDN that
        // caps its ranges, RFC 9110 §14.4): what came is compared, and the rest is asked for again. An open-ended
        // request must reach past the bytes held.
        guard last >= start + overlap - 1 || plan.last != nil else {
            return .restart(.invalidPartialResponse("range ends at byte \(last), before the \(start + overlap) bytes held"))
        }
        if plan.last == nil, overlap > 0, last == start + overlap - 1, let complete, complete > start + overlap {
            // Only the bytes held came back, yet the file is said to go on: asking again would get the same. The
            // server's length and its ranges disagree.
            return .restart(.invalidPartialResponse("the range ends at the bytes held (byte \(last)), yet the file is said to be \(complete) bytes"))
        }
        if let asked = plan.last, last > asked {
            return .restart(.invalidPartialResponse("range ends at byte \(last), past the \(asked) asked for"))
        }
        // A range that is the whole representation (`bytes 0-(N-1)/N`, as nginx, Apache and S3 answer `bytes=0-`)
        // carries the file as its content, so its `Content-Digest` is the file's digest, as a 200's is (RFC 9530 §2).
        // Any other range's `Content-Digest` covers only that part, and is never compared with the file.
        let validators = first == 0 && complete == last + 1 ? Validators.wholeResponse(headers) : Validators(headers: headers)
        if point.offset > 0 || overlap > 0, point.validators.contentEncoding != validators.contentEncoding {
            // Held bytes in one content coding are never continued with bytes in another (a gzip 206 after identity).
            return .restart(.resourceChanged("the content encoding is now \(validators.contentEncoding ?? "identity"), the bytes held are \(point.validators.contentEncoding ?? "identity")"))
        }
        if point.validators.conflicts(with: validators, comparingEncoding: point.offset > 0 || overlap > 0) {
            return .restart(.resourceChanged("validators differ"))
        }
        // The representation digest recorded for the bytes held, in its own algorithm (the answer's strongest may be
        // another): a different one means another representation, whatever the ETag says (RFC 9530 §2).
        if let held = point.validators.digest,
           let now = DigestFields.digest(headers.combined("repr-digest"), algorithm: held.algorithm), now.hex != held.hex {
            return .restart(.resourceChanged("the server's Repr-Digest of the file changed"))
        }
        // Without an overlap to compare, only the strong ETag ties these bytes to the ones held (or to the other
        // segments): a server that ignores If-Range must repeat it, or nothing shows the version is the same.
        if overlap == 0, start > 0, let tag = point.validators.strongEntityTag, validators.entityTag?.rawValue != tag.rawValue {
            return .restart(.resourceChanged("the response does not repeat the ETag \(tag.rawValue)"))
        }
        let merged = Validators(
            entityTag: validators.entityTag ?? point.validators.entityTag,
            lastModified: validators.lastModified ?? point.validators.lastModified,
            contentEncoding: validators.contentEncoding,
            digest: validators.digest ?? point.validators.digest
        )
        let info = ResourceInfo(validators: merged, totalLength: complete ?? point.totalLength, acceptsRanges: true)
        return .append(info, bodyLength: range.length, overlap: min(overlap, range.length))
    }

    private static func decideUnsatisfiable(plan: RequestPlan, point: ResumePoint, headers: HTTPFields) -> ResponseDecision {
        guard case .range = plan else {
            return .protocolViolation("416 to a request without Range")
        }
        guard let raw = headers["content-range"], let range = ContentRange(raw), case .unsatisfied(let length) = range else {
            if point.offset == 0 { return .fail(status: 416) }
            if endsAtBytesHeld(plan: plan, point: point, headers: headers) { return .alreadyComplete }
            return .restart(.invalidPartialResponse("416 without a valid Content-Range: bytes */length"))
        }
        // Nothing held: a 416 to `bytes=0-` of a file that is not empty is the server's error, not a changed file.
        if point.offset == 0, length != 0 { return .fail(status: 416) }
        guard length == point.offset else {
            if length < point.offset { return .restart(.heldPastEnd(length: length, held: point.offset)) }
            return .restart(.resourceChanged("length is now \(length) bytes, \(point.offset) held"))
        }
        if let known = point.totalLength, known != length {
            // The 416 says the file ends exactly at the bytes held, its earlier 206s said otherwise: the server's
            // own range answers disagree, so the next try is one plain request, not another range probe.
            return .restart(.invalidPartialResponse("the server's lengths disagree: \(length) bytes now, \(known) before"))
        }
        if point.validators.conflicts(with: Validators(headers: headers), comparingEncoding: false) {
            return .restart(.resourceChanged("validators differ"))
        }
        return .alreadyComplete
    }

    /// Whether a 416 that gives no length still says where the file ends: the request asked for exactly the byte
    /// after the bytes held, whose own answer gave no length (`bytes a-b/*`, ``plan(for:probeRanges:verifyOverlap:heldFromThisAnswer:)``),
    /// so "no such byte" puts the end right there. RFC 9110 §15.5.17 has the server only SHOULD send `Content-Range:
    /// bytes */length`; curl and wget take such a 416 as the end of the file, which a server that omits it means.
    /// A 416 that names other validators than those held is not taken so.
    private static func endsAtBytesHeld(plan: RequestPlan, point: ResumePoint, headers: HTTPFields) -> Bool {
        guard case .range(let start, 0, _, nil) = plan, start == point.offset, point.offset > 0, point.totalLength == nil else {
            return false
        }
        return !point.validators.conflicts(with: Validators(headers: headers), comparingEncoding: false)
    }

    /// The body length from `Content-Length`, or `nil` when chunked or absent or malformed.
    public static func bodyLength(_ headers: HTTPFields) -> Int64? {
        if let coding = headers.combined("transfer-encoding"), !coding.isEmpty { return nil }
        guard let raw = headers["content-length"] else { return nil }
        return ContentRange.parseDigits(raw.trimmingASCIIWhitespace())
    }

    static func acceptsRanges(_ headers: HTTPFields) -> Bool {
        guard let value = headers.combined("accept-ranges") else { return false }
        return value.lowercased().split(separator: ",").contains { $0.trimmingASCIIWhitespace() == "bytes" }
    }
}

extension ResponseDecision: CustomStringConvertible {
    public var description: String {
        switch self {
        case .writeWhole(_, let length): return "write the whole body from byte 0 (\(length.map { "\($0) bytes" } ?? "length unknown"))"
        case .append(_, let length, let overlap): return "append \(length - overlap) bytes after checking \(overlap) overlapping bytes"
        case .alreadyComplete: return "already complete"
        case .restart(let reason): return "restart from byte 0: \(reason)"
        case .redirect(let location): return "redirect to \(Redaction.url(location))"
        case .retry(let status, let retryAfter): return "retry after \(status)\(retryAfter.map { " (Retry-After: \($0))" } ?? "")"
        case .fail(let status): return "fail with \(status)"
        case .protocolViolation(let why): return "protocol violation: \(why)"
        case .impossibleLength(let claimed): return "impossible length: \(claimed) bytes"
        }
    }
}
