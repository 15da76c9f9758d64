/// A parsed `Content-Disposition` header (RFC 6266), with `filename*` decoded per RFC 8187.
package struct ContentDisposition: Equatable, Sendable {
    public var type: String
    /// Parameters by lower-cased name; values unquoted, `*` parameters still encoded.
    public var parameters: [String: String]

    public init?(_ value: String) {
        let pieces = ContentDisposition.splitParameters(value)
        guard let first = pieces.first?.trimmingASCIIWhitespace(), !first.isEmpty, !first.contains("=") else { return nil }
        type = first.lowercased()
        parameters = [:]
        for piece in pieces.dropFirst() {
            guard let equals = piece.firstIndex(of: "=") else { continue }
            let name = piece[..<equals].trimmingASCIIWhitespace().lowercased()
            let rawValue = piece[piece.index(after: equals)...].trimmingASCIIWhitespace()
            guard !name.isEmpty, parameters[name] == nil else { continue }
            parameters[name] = ContentDisposition.unquote(rawValue)
        }
    }

    /// The file name the server suggests: `filename*` when it decodes, else `filename`. Not yet sanitized.
    public var filename: String? {
        if let extended = parameters["filename*"], let decoded = ContentDisposition.decodeExtendedValue(extended) {
            return decoded
        }
        return parameters["filename"]
    }

    /// Splits on `;` outside quoted strings.
    static func splitParameters(_ value: String) -> [String] {
        var result: [String] = []
        var current = ""
        var inQuotes = false
        var escaped = false
        for character in value {
            if escaped { current.append(character); escaped = false; continue }
            switch character {
            case "\\" where inQuotes: escaped = true; current.append(character)
            case "\"": inQuotes.toggle(); current.append(character)
            case ";" where !inQuotes: result.append(current); current = ""
            default: current.append(character)
            }
        }
        result.append(current)
        return result
    }

    static func unquote(_ value: String) -> String {
        guard value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") else { return value }
        var result = ""
        var escaped = false
        for character in value.dropFirst().dropLast() {
            if escaped { result.append(character); escaped = false } else if character == "\\" { escaped = true } else { result.append(character) }
        }
        return result
    }

    /// Decodes an RFC 8187 ext-value: `charset'[language]'pct-encoded`, UTF-8 or ISO-8859-1.
    static func decodeExtendedValue(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = parts[0].lowercased()
        var bytes: [UInt8] = []
        var iterator = parts[2].utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        switch charset {
        case "utf-8": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1": return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default: return nil
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }
}
