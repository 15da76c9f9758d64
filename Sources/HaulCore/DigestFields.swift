import Foundation

/// The integrity fields of RFC 9530: `Repr-Digest` (a digest of the whole selected representation, whatever part a
/// response carries) and `Content-Digest` (of this message's content only). Each is a Structured Fields dictionary
/// (RFC 8941 §3.2) of algorithm keys and byte-sequence values, such as `sha-256=:X48E9qOok…=:`.
///
/// Only `sha-256` and `sha-512` are used: RFC 9530 §5 marks the others (md5, sha, crc32c, …) insecure or
/// deprecated, and a digest Haul cannot trust proves nothing.
package enum DigestFields {
    /// The strongest digest the field value carries: sha-512, else sha-256; `nil` when it has neither, or when the
    /// value is not a valid dictionary (RFC 8941 §4.2: a field that fails to parse is ignored as a whole).
    public static func strongest(_ value: String?) -> Checksum? {
        guard let value, let members = dictionary(value) else { return nil }
        for (key, algorithm) in [("sha-512", ChecksumAlgorithm.sha512), ("sha-256", .sha256)] {
            // The last member of a name wins (RFC 8941 §3.2).
            if let bytes = members.last(where: { $0.key == key })?.bytes, bytes.count * 2 == algorithm.hexLength {
                return Checksum(algorithm: algorithm, hex: hexString(bytes))
            }
        }
        return nil
    }

    /// The field value's digest of `algorithm` (sha-256 or sha-512 only), if it carries one: what a later answer says
    /// in the algorithm a recorded digest was given in, whatever stronger one it adds.
    public static func digest(_ value: String?, algorithm: ChecksumAlgorithm) -> Checksum? {
        let key: String
        switch algorithm {
        case .sha256: key = "sha-256"
        case .sha512: key = "sha-512"
        default: return nil
        }
        guard let value, let members = dictionary(value),
              let bytes = members.last(where: { $0.key == key })?.bytes, bytes.count * 2 == algorithm.hexLength else { return nil }
        return Checksum(algorithm: algorithm, hex: hexString(bytes))
    }

    /// The members of a dictionary whose values are byte sequences (others are skipped), or `nil` when `text` is not
    /// a valid dictionary of that shape.
    static func dictionary(_ text: String) -> [(key: String, bytes: [UInt8])]? {
        var reader = Reader(Array(text.utf8))
        var members: [(key: String, bytes: [UInt8])] = []
        reader.skipSpaces()
        if reader.atEnd { return [] }
        while true {
            guard let key = reader.key() else { return nil }
            var bytes: [UInt8]?
            if reader.take(UInt8(ascii: "=")) {
                if reader.peek == UInt8(ascii: ":") {
                    guard let sequence = reader.byteSequence() else { return nil }
                    bytes = sequence
                } else {
                    guard reader.skipBareItem() else { return nil }
                }
            }
            guard reader.skipParameters() else { return nil }
            if let bytes { members.append((key, bytes)) }
            reader.skipSpaces()
            if reader.atEnd { return members }
            guard reader.take(UInt8(ascii: ",")) else { return nil }
            reader.skipSpaces()
            if reader.atEnd { return nil }
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index >= bytes.count }
        var peek: UInt8? { atEnd ? nil : bytes[index] }

        mutating func take(_ byte: UInt8) -> Bool {
            guard peek == byte else { return false }
            index += 1
            return true
        }

        mutating func skipSpaces() {
            while let byte = peek, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { index += 1 }
        }

        /// `key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )`
        mutating func key() -> String? {
            guard let first = peek, first.isLowercaseLetter || first == UInt8(ascii: "*") else { return nil }
            let start = index
            while let byte = peek, byte.isLowercaseLetter || byte.isDigit || "_-.*".utf8.contains(byte) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// `:base64:`, decoded; `nil` when malformed.
        mutating func byteSequence() -> [UInt8]? {
            guard take(UInt8(ascii: ":")) else { return nil }
            let start = index
            while let byte = peek, byte != UInt8(ascii: ":") {
                guard byte.isLetter || byte.isDigit || "+/=".utf8.contains(byte) else { return nil }
                index += 1
            }
            var encoded = String(decoding: bytes[start..<index], as: UTF8.self)
            // RFC 8941 §4.2.7: a parser should not fail when the padding is left out.
            if encoded.utf8.count % 4 != 0 { encoded += String(repeating: "=", count: 4 - encoded.utf8.count % 4) }
            guard take(UInt8(ascii: ":")), let data = Data(base64Encoded: encoded) else { return nil }
            return Array(data)
        }

        /// Any other bare item (integer, decimal, string, token, boolean), not kept.
        mutating func skipBareItem() -> Bool {
            guard let first = peek else { return false }
            if first == UInt8(ascii: "\"") {
                index += 1
                while let byte = peek {
                    index += 1
                    if byte == UInt8(ascii: "\\") { index += 1; continue }
                    if byte == UInt8(ascii: "\"") { return true }
                    guard byte >= 0x20, byte < 0x7F else { return false }
                }
                return false
            }
            if first == UInt8(ascii: ":") { return byteSequence() != nil }
            let start = index
            while let byte = peek, byte > 0x20, byte < 0x7F, !",;()\"=".utf8.contains(byte) { index += 1 }
            return index > start
        }

        /// `*( ";" OWS key [ "=" bare-item ] )`
        mutating func skipParameters() -> Bool {
            while take(UInt8(ascii: ";")) {
                skipSpaces()
                guard key() != nil else { return false }
                if take(UInt8(ascii: "=")), !skipBareItem() { return false }
            }
            return true
        }
    }
}

private extension UInt8 {
    var isLowercaseLetter: Bool { self >= UInt8(ascii: "a") && self <= UInt8(ascii: "z") }
    var isLetter: Bool { isLowercaseLetter || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z")) }
    var isDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
}
