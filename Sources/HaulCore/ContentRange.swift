/// A parsed `Content-Range` header value (RFC 9110 §14.4), `bytes` unit only.
package enum ContentRange: Equatable, Sendable {
    /// `bytes first-last/complete` (complete is `nil` for `*`).
    case satisfied(first: Int64, last: Int64, completeLength: Int64?)
    /// `bytes */complete`, sent with 416.
    case unsatisfied(completeLength: Int64)

    /// Parses a header value; returns `nil` for anything malformed, another unit, or invalid arithmetic
    /// (`last < first`, `complete <= last`, numbers that do not fit in 63 bits).
    public init?(_ value: some StringProtocol) {
        var rest = Substring(value).drop(while: { $0 == " " || $0 == "\t" })
        guard rest.count > 5, rest.prefix(5).lowercased() == "bytes" else { return nil }
        rest = rest.dropFirst(5)
        guard let afterUnit = rest.first, afterUnit == " " else { return nil }
        rest = rest.drop(while: { $0 == " " })
        while let last = rest.last, last == " " || last == "\t" { rest = rest.dropLast() }

        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let rangePart = rest[..<slash]
        let lengthPart = rest[rest.index(after: slash)...]

        let complete: Int64?
        if lengthPart == "*" {
            complete = nil
        } else {
            guard let length = ContentRange.parseDigits(lengthPart) else { return nil }
            complete = length
        }

        if rangePart == "*" {
            guard let complete else { return nil }
            self = .unsatisfied(completeLength: complete)
            return
        }
        guard let dash = rangePart.firstIndex(of: "-"),
              let first = ContentRange.parseDigits(rangePart[..<dash]),
              let last = ContentRange.parseDigits(rangePart[rangePart.index(after: dash)...]),
              first <= last, last < Int64.max
        else { return nil }
        if let complete, complete <= last { return nil }
        self = .satisfied(first: first, last: last, completeLength: complete)
    }

    /// Number of bytes the range covers (0 for `unsatisfied`).
    public var length: Int64 {
        switch self {
        case .satisfied(let first, let last, _): return last - first + 1
        case .unsatisfied: return 0
        }
    }

    public var completeLength: Int64? {
        switch self {
        case .satisfied(_, _, let complete): return complete
        case .unsatisfied(let complete): return complete
        }
    }

    /// Parses a non-empty run of ASCII digits into a non-negative Int64; `nil` on overflow or any other character.
    static func parseDigits(_ text: some StringProtocol) -> Int64? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in text.utf8 {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(byte - 0x30))
            if o1 || o2 { return nil }
            value = sum
        }
        return value
    }
}
