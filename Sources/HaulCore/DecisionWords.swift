// What `--verbose` says of a response's decision: words a person reads after the status line (as curl -v follows a
// response with what it does next), not the Swift value.

extension ResourceInfo: CustomStringConvertible {
    /// "16384 bytes, ETag "v2", Last-Modified Tue, 15 Nov 1994 08:12:31 GMT, ranges" (only what the server said).
    package var description: String {
        var parts: [String] = [totalLength.map { "\($0) bytes" } ?? "length unknown"]
        if let tag = validators.entityTag { parts.append("ETag \(tag.rawValue)") }
        if let date = validators.lastModified { parts.append("Last-Modified \(date)") }
        if let encoding = validators.contentEncoding { parts.append("Content-Encoding \(encoding)") }
        if validators.digest != nil { parts.append("a digest") }
        parts.append(acceptsRanges ? "ranges" : "no ranges")
        return parts.joined(separator: ", ")
    }
}

extension SegmentationPolicy.Decision: CustomStringConvertible {
    /// "3 connections" or "one connection (the server does not support byte ranges)".
    public var description: String {
        switch self {
        case .segmented(let parts): return "\(parts) connections"
        case .single(let reason?): return "one connection (\(reason))"
        case .single(nil): return "one connection"
        }
    }
}

extension ResponseHeadStep: CustomStringConvertible {
    package var description: String {
        switch self {
        case .redirectNotFollowed(let location): return "the redirect to \(Redaction.url(location)) is not followed"
        case .retry(let status, let retryAfter): return "retry later (\(status)\(retryAfter.map { ", Retry-After \($0)" } ?? ""))"
        case .refused(let status): return "refused (\(status))"
        case .protocolViolation(let why): return "an unusable answer, retried: \(why)"
        case .impossibleLength(let claimed): return "an impossible length (\(claimed) bytes): nothing written"
        case .complete(let recordEmptyFile): return recordEmptyFile ? "complete: an empty file" : "complete: the bytes held are the whole file"
        case .adoptedFileDiffers(let why): return "the file given to --continue cannot be continued: \(why)"
        case .adoptedFileLonger(let length, let held):
            return "the file given to --continue (\(held) bytes) is longer than the server's (\(length)): not a partial copy of it"
        case .adoptedFileUncheckable: return "the file given to --continue cannot be checked: the server sends whole files only"
        case .foreignBytesDiffer(let why): return "the bytes another URL wrote cannot be continued: \(why)"
        case .restart(let reason): return "start over: \(reason)"
        case .writeWhole(let info, _, let replacing):
            return (replacing ? "replace the bytes held with " : "write ") + "the whole file from byte 0 (\(info)), one connection"
        case .append(let info, let overlap, let connections):
            let start = overlap > 0 ? "continue after the bytes held, checking the \(overlap) before them" : "write the range asked for"
            return start + " (\(info))" + (connections.map { ", \($0)" } ?? "")
        }
    }
}
