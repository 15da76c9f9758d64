/// What the answer to a closed range request for bytes of a known version means. One decision for every such
/// request: each connection of a segmented download, and the checks of bytes held before they are continued.
package enum RangeAnswer: Equatable, Sendable {
    /// The range asked for; its first `overlap` bytes repeat bytes held and are compared with them.
    case range(ResourceInfo, overlap: Int64)
    /// The bytes held are not the server's any more: everything held must go.
    case changed(RestartReason)
    /// The whole file, with the same validators: the server stopped honouring ranges.
    case rangesIgnored
    /// A partial answer that does not fit the request (a wrong `Content-Range`): not to be written.
    case inconsistent(RestartReason)
    /// A transient failure (408, 429, 5xx).
    case retry(status: Int, retryAfter: String?)
    /// A permanent refusal.
    case refused(status: Int)
    /// An answer a correct server does not send to this request (a transient server fault), in words.
    case unusable(String)

    /// Reads `decision` (``ResumePolicy/decide(plan:point:response:)`` for a range of a version described by
    /// `validators`).
    public static func classify(_ decision: ResponseDecision, validators: Validators) -> RangeAnswer {
        switch decision {
        case .append(let info, _, let overlap):
            return .range(info, overlap: overlap)
        case .writeWhole(let info, _):
            // A 200 to `If-Range` with other validators is how a server says the file changed; a 200 with the
            // same ones means it stopped honouring ranges.
            if validators.conflicts(with: info.validators) {
                return .changed(.resourceChanged("the server sent a new version instead of the range"))
            }
            return .rangesIgnored
        case .restart(let reason):
            switch reason {
            case .resourceChanged, .overlapMismatch, .heldPastEnd: return .changed(reason)
            case .invalidPartialResponse, .smallRanges: return .inconsistent(reason)
            }
        case .retry(let status, let retryAfter):
            return .retry(status: status, retryAfter: retryAfter)
        case .fail(let status):
            return .refused(status: status)
        case .redirect(let location):
            return .unusable("unexpected redirect to \(location) in answer to a range request")
        case .alreadyComplete:
            return .unusable("unexpected 416 in answer to a range request")
        case .protocolViolation(let why):
            return .unusable(why)
        case .impossibleLength(let claimed):
            // A version of known length that now claims an impossible one: a faulty answer, like any other.
            return .unusable("the server claims \(claimed) bytes")
        }
    }
}
