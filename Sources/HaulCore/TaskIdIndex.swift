/// Every id of a session, sorted and compact, to give any one id its shortest unique prefix by binary search: how
/// `haul ls` names tasks when a session is too large to hold its rows at once (see ``TaskListing``). Pure.
///
/// The one implementation of the rule (``TaskTable/uniquePrefixes(_:minimum:)`` uses it too): at least `minimum`
/// characters, one more than the longest common prefix with any other id (which, in sorted order, is shared with a
/// neighbour), the whole id when it is the start of another. An id in canonical UUID form (36 characters, lower-case
/// hex and hyphens, as the daemon makes them) is held as 16 bytes; any other id as its string. A million UUIDs take
/// 16 MB.
package struct TaskIdIndex: Sendable {
    /// A canonical lower-case UUID as its 128 bits: ordered as its text is.
    struct UUIDBits: Comparable, Hashable, Sendable {
        var high: UInt64
        var low: UInt64

        static func < (a: UUIDBits, b: UUIDBits) -> Bool { (a.high, a.low) < (b.high, b.low) }

        /// The bits of `id` when it is a canonical lower-case UUID (`8-4-4-4-12` hex digits), else nil.
        init?(_ id: String) {
            guard id.utf8.count == 36 else { return nil }
            var high: UInt64 = 0
            var low: UInt64 = 0
            var nibbles = 0
            for (position, byte) in id.utf8.enumerated() {
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard byte == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let value: UInt64
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt64(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = UInt64(byte - UInt8(ascii: "a") + 10)
                default: return nil
                }
                if nibbles < 16 { high = high << 4 | value } else { low = low << 4 | value }
                nibbles += 1
            }
            self.high = high
            self.low = low
        }

        /// The text: 36 characters.
        var text: String {
            let digits = Array("0123456789abcdef".utf8)
            var bytes: [UInt8] = []
            bytes.reserveCapacity(36)
            for nibble in 0..<32 {
                if nibble == 8 || nibble == 12 || nibble == 16 || nibble == 20 { bytes.append(UInt8(ascii: "-")) }
                let word = nibble < 16 ? high : low
                bytes.append(digits[Int(word >> UInt64(60 - 4 * (nibble % 16)) & 0xF)])
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        /// How many characters of text the two share at their start.
        func commonPrefixLength(_ other: UUIDBits) -> Int {
            let nibbles = high != other.high ? (high ^ other.high).leadingZeroBitCount / 4
                : low != other.low ? 16 + (low ^ other.low).leadingZeroBitCount / 4 : 32
            // A hyphen follows the 8th, 12th, 16th and 20th digit: shared whenever the digits before it are.
            return nibbles + [8, 12, 16, 20].filter { nibbles >= $0 }.count
        }
    }

    private var uuids: [UUIDBits] = []
    private var others: [String] = []
    private var sorted = true

    /// An empty index.
    public init() {}

    /// An index of these ids.
    public init(_ ids: some Sequence<String>) {
        for id in ids { insert(id) }
        sort()
    }

    /// How many ids it holds.
    public var count: Int { uuids.count + others.count }

    /// Adds an id (call ``sort()`` before asking for prefixes).
    public mutating func insert(_ id: String) {
        if let bits = UUIDBits(id) { uuids.append(bits) } else { others.append(id) }
        sorted = false
    }

    /// Sorts the ids added.
    public mutating func sort() {
        guard !sorted else { return }
        uuids.sort()
        // Character by character, as ids are compared when typed.
        others.sort { $0.lexicographicallyPrecedes($1) }
        sorted = true
    }

    /// The shortest prefix of `id` that no other id of the index starts with (at least `minimum` characters, or the
    /// whole id). An id the index does not hold gets the prefix it would have among the ids held and itself.
    public func prefix(of id: String, minimum: Int = 8) -> String {
        precondition(sorted, "TaskIdIndex.prefix(of:) before sort()")
        var common = 0
        if let bits = UUIDBits(id) {
            common = max(common, Self.longestCommon(bits, in: uuids))
        } else {
            common = max(common, Self.longestCommon(id, in: uuids, text: \.text, precedes: { $0.text.lexicographicallyPrecedes(id) }))
        }
        common = max(common, Self.longestCommon(id, in: others, text: { $0 }, precedes: { $0.lexicographicallyPrecedes(id) }))
        return String(id.prefix(max(minimum, 1, common + 1)))
    }

    /// The longest common prefix of `bits` with any other element of `sorted` (a second copy of it counts whole).
    private static func longestCommon(_ bits: UUIDBits, in sorted: [UUIDBits]) -> Int {
        let start = firstIndex(in: sorted) { $0 < bits }
        var end = start
        while end < sorted.count, sorted[end] == bits { end += 1 }
        if end - start > 1 { return 36 }
        var common = 0
        if start > 0 { common = max(common, bits.commonPrefixLength(sorted[start - 1])) }
        if end < sorted.count { common = max(common, bits.commonPrefixLength(sorted[end])) }
        return common
    }

    /// The longest common prefix, in characters, of `id` with any other element of `sorted`.
    private static func longestCommon<Element>(
        _ id: String, in sorted: [Element], text: (Element) -> String, precedes: (Element) -> Bool
    ) -> Int {
        let start = firstIndex(in: sorted, where: precedes)
        var end = start
        while end < sorted.count, text(sorted[end]) == id { end += 1 }
        if end - start > 1 { return id.count }
        var common = 0
        if start > 0 { common = max(common, commonPrefixLength(text(sorted[start - 1]), id)) }
        if end < sorted.count { common = max(common, commonPrefixLength(text(sorted[end]), id)) }
        return common
    }

    /// The first index whose element does not precede what is looked for (elements that do come first).
    private static func firstIndex<Element>(in sorted: [Element], where precedes: (Element) -> Bool) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(sorted[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private static func commonPrefixLength(_ a: String, _ b: String) -> Int {
        var length = 0
        for (x, y) in zip(a, b) {
            guard x == y else { break }
            length += 1
        }
        return length
    }
}
