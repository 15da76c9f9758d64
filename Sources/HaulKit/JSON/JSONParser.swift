/// A strict RFC 8259 parser from UTF-8 bytes to ``JSONValue``, with the same answers as Foundation's `JSONDecoder`
/// decoding a `JSONValue` (Tests: JSONParserPropertyTests compare the two on generated and mangled texts).
///
/// It exists for speed: every stored task's spec, every protocol line and every journal entry is parsed, and going
/// through `JSONDecoder` and `Decodable` cost about 80 µs per spec, 5% of a batch of tiny files' CPU.
struct JSONParser {
    /// Nesting deeper than this is refused (Foundation's limit), so that no input can exhaust the stack.
    static let maxDepth = 512

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The value `bytes` hold, or `nil` when they are not exactly one JSON value (with whitespace around it).
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        var parser = JSONParser(bytes)
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipWhitespace()
        guard parser.index == bytes.count else { return nil }
        return value
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func value(depth: Int) -> JSONValue? {
        skipWhitespace()
        guard let byte = current else { return nil }
        // `JSONValue` is `ExpressibleByNilLiteral`: a `nil` in a conditional expression here would be `.null`, so
        // each refusal is a `return nil` of its own.
        switch byte {
        case UInt8(ascii: "{"):
            guard depth < Self.maxDepth else { return nil }
            return object(depth: depth + 1)
        case UInt8(ascii: "["):
            guard depth < Self.maxDepth else { return nil }
            return array(depth: depth + 1)
        case UInt8(ascii: "\""):
            guard let string = string() else { return nil }
            return .string(string)
        case UInt8(ascii: "t"):
            guard literal("true") else { return nil }
            return .bool(true)
        case UInt8(ascii: "f"):
            guard literal("false") else { return nil }
            return .bool(false)
        case UInt8(ascii: "n"):
            guard literal("null") else { return nil }
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
        default: return nil
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
        index += count
        return true
    }

    private mutating func object(depth: Int) -> JSONValue? {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\""), let key = string() else { return nil }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { return nil }
            index += 1
            guard let member = value(depth: depth) else { return nil }
            if members[key] == nil { members[key] = member }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(members)
            default: return nil
            }
        }
    }

    private mutating func array(depth: Int) -> JSONValue? {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            guard let element = value(depth: depth) else { return nil }
            elements.append(element)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: return nil
            }
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, as a finite `Double`.
    private mutating func number() -> JSONValue? {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, isDigit(first) else { return nil }
        index += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if current == UInt8(ascii: ".") {
            index += 1
            guard let digit = current, isDigit(digit) else { return nil }
            skipDigits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let digit = current, isDigit(digit) else { return nil }
            skipDigits()
        }
        let digits = UnsafeBufferPointer(rebasing: bytes[start..<index])
        guard let value = Double(String(decoding: digits, as: UTF8.self)), value.isFinite else { return nil }
        // A number too small for a Double is refused, as Foundation refuses it, not read as 0.
        if value == 0, digits.prefix(while: { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }).contains(where: { $0 > UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return nil
        }
        return .number(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while let byte = current, isDigit(byte) { index += 1 }
    }

    /// A string from its opening quote; `nil` for a control character, a bad escape, a lone surrogate or bytes that
    /// are not UTF-8.
    private mutating func string() -> String? {
        index += 1
        let start = index
        // The common case: no escape, so the bytes are the string.
        while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
            guard byte >= 0x20 else { return nil }
            index += 1
        }
        guard let stop = current else { return nil }
        var utf8 = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        if stop == UInt8(ascii: "\"") {
            index += 1
            return Self.validString(utf8)
        }
        while let byte = current {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return Self.validString(utf8)
            case UInt8(ascii: "\\"):
                guard escape(into: &utf8) else { return nil }
            case ..<0x20:
                return nil
            default:
                utf8.append(byte)
            }
        }
        return nil
    }

    /// The string of `utf8`, or `nil` when it is not valid UTF-8 (`String(validating:)` needs macOS 15).
    private static func validString(_ utf8: [UInt8]) -> String? {
        var decoder = UTF8()
        var iterator = utf8.makeIterator()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return String(decoding: utf8, as: UTF8.self)
            case .error: return nil
            }
        }
    }

    /// Appends the UTF-8 of the escape after a backslash.
    private mutating func escape(into utf8: inout [UInt8]) -> Bool {
        guard let byte = current else { return false }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(byte)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            guard let unit = hexUnit() else { return false }
            var scalar: Unicode.Scalar?
            switch unit {
            case 0xD800...0xDBFF:
                guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else { return false }
                index += 2
                guard let low = hexUnit(), (0xDC00...0xDFFF).contains(low) else { return false }
                scalar = Unicode.Scalar(0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00))
            case 0xDC00...0xDFFF:
                return false
            default:
                scalar = Unicode.Scalar(UInt32(unit))
            }
            guard let scalar else { return false }
            UTF8.encode(scalar) { utf8.append($0) }
        default:
            return false
        }
        return true
    }

    /// Four hex digits.
    private mutating func hexUnit() -> UInt16? {
        guard bytes.count - index >= 4 else { return nil }
        var unit: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            unit = unit << 4 | UInt16(digit)
            index += 1
        }
        return unit
    }
}
