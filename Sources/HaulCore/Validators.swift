/// An HTTP entity tag (RFC 9110 §8.8.3), kept exactly as the server sent it.
package struct EntityTag: Equatable, Hashable, Sendable, Codable {
    /// The header value as received, e.g. `"abc"` or `W/"abc"`.
    public var rawValue: String

    public init?(_ headerValue: String) {
        let trimmed = headerValue.trimmingASCIIWhitespace()
        guard !trimmed.isEmpty, !trimmed.contains(where: { $0 == "\r" || $0 == "\n" }) else { return nil }
        rawValue = trimmed
    }

    /// `W/"…"` tags are weak; they may never be used with `If-Range`.
    public var isWeak: Bool { rawValue.hasPrefix("W/") || rawValue.hasPrefix("w/") }

    /// A tag is strong when it is not weak and is a properly quoted opaque string.
    public var isStrong: Bool { !isWeak && rawValue.count >= 2 && rawValue.hasPrefix("\"") && rawValue.hasSuffix("\"") }
}

/// What identifies one version of a resource as it is sent: its ETag, Last-Modified date, content coding and, when
/// the server sends one, its digest.
package struct Validators: Equatable, Sendable, Codable {
    public var entityTag: EntityTag?
    public var lastModified: String?
    /// The `Content-Encoding` the bytes are in, lower-cased; `nil` for identity (none).
    public var contentEncoding: String?
    /// The digest of the whole representation the server sent (RFC 9530 `Repr-Digest`, or the `Content-Digest` of
    /// an answer whose content is the whole representation: a 200, or a 206 of `bytes 0-(N-1)/N`): the finished file,
    /// or the bytes a stream wrote, must have it.
    public var digest: Checksum?

    public init(entityTag: EntityTag? = nil, lastModified: String? = nil, contentEncoding: String? = nil, digest: Checksum? = nil) {
        self.entityTag = entityTag
        self.lastModified = lastModified?.trimmingASCIIWhitespace()
        if self.lastModified?.isEmpty == true { self.lastModified = nil }
        self.contentEncoding = Validators.normalizedEncoding(contentEncoding)
        self.digest = digest
    }

    /// The validators of a response's headers; `Repr-Digest` is its digest (a `Content-Digest` counts only for a
    /// complete answer: see ``wholeResponse(_:)``).
    public init(headers: HTTPFields) {
        self.init(
            entityTag: headers["etag"].flatMap(EntityTag.init), lastModified: headers["last-modified"],
            contentEncoding: headers.combined("content-encoding"), digest: DigestFields.strongest(headers.combined("repr-digest")))
    }

    /// The validators of an answer carrying the whole representation (a 200, or a 206 whose `Content-Range` is
    /// `bytes 0-(N-1)/N`), whose content is the file itself: its `Content-Digest` is the file's digest too when there
    /// is no `Repr-Digest`.
    public static func wholeResponse(_ headers: HTTPFields) -> Validators {
        var validators = Validators(headers: headers)
        if validators.digest == nil { validators.digest = DigestFields.strongest(headers.combined("content-digest")) }
        return validators
    }

    /// A `Content-Encoding` value as compared: lower case, spaces removed, `identity` and empty as `nil`.
    static func normalizedEncoding(_ value: String?) -> String? {
        guard let value else { return nil }
        let codings = value.lowercased().split(separator: ",").map { $0.trimmingASCIIWhitespace() }
            .filter { !$0.isEmpty && $0 != "identity" }
        return codings.isEmpty ? nil : codings.joined(separator: ",")
    }

    /// The strong ETag, if there is one.
    public var strongEntityTag: EntityTag? { entityTag.flatMap { $0.isStrong ? $0 : nil } }

    /// The value for `If-Range`: a strong ETag, else Last-Modified, never a weak ETag.
    public var ifRangeValue: String? { strongEntityTag?.rawValue ?? lastModified }

    /// Whether `other` (from a later response) describes a different version than `self`.
    /// A validator that either side lacks proves nothing; one that both carry must be equal.
    ///
    /// The content coding always counts (no header means identity): bytes in one coding are never continued with
    /// bytes in another. `comparingEncoding: false` is for answers without a body, such as a 416.
    public func conflicts(with other: Validators, comparingEncoding: Bool = true) -> Bool {
        if comparingEncoding, contentEncoding != other.contentEncoding { return true }
        if let mine = entityTag, let theirs = other.entityTag, mine.rawValue != theirs.rawValue { return true }
        if let mine = lastModified, let theirs = other.lastModified, mine != theirs { return true }
        if let mine = digest, let theirs = other.digest, mine.algorithm == theirs.algorithm, mine.hex != theirs.hex { return true }
        return false
    }
}

extension StringProtocol {
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[start...end])
    }
}
