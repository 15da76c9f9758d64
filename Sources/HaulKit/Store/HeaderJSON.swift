import Foundation

/// The JSON text of a task's headers, `[{"name":"...","value":"..."}, ...]`. Written and read by hand,
/// as listing thousands of tasks through JSONDecoder would cost more than the rest of the listing;
/// anything the fast reader does not recognise goes through JSONDecoder.
enum HeaderJSON {
    static func encode(_ headers: [HTTPFields.Field]) -> String {
        if headers.isEmpty { return "[]" }
        var out = "["
        for (index, field) in headers.enumerated() {
            if index > 0 { out += "," }
            out += #"{"name":"#
            appendString(field.name, to: &out)
            out += #","value":"#
            appendString(field.value, to: &out)
            out += "}"
        }
        return out + "]"
    }

    static func decode(_ text: String) throws -> [HTTPFields.Field] {
        if text == "[]" { return [] }
        var utf8 = text
        if let fields = utf8.withUTF8({ bytes in
            var reader = FastReader(bytes: bytes)
            return reader.headers()
        }) {
            return fields
        }
        do {
            return try JSONDecoder().decode([HeaderField].self, from: Data(text.utf8)).map(\.field)
        } catch {
            throw StoreDecodingError("the headers of a task are not valid JSON")
        }
    }

    private static func appendString(_ string: String, to out: inout String) {
        out += "\""
        var plainStart = string.unicodeScalars.startIndex
        var index = plainStart
        let scalars = string.unicodeScalars
        while index < scalars.endIndex {
            let scalar = scalars[index]
            let escape: String?
            switch scalar {
            case "\"": escape = "\\\""
            case "\\": escape = "\\\\"
            case "\n": escape = "\\n"
            case "\r": escape = "\\r"
            case "\t": escape = "\\t"
            default:
                escape = scalar.value < 0x20 ? "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16) : nil
            }
            if let escape {
                out.unicodeScalars.append(contentsOf: scalars[plainStart..<index])
                out += escape
                plainStart = scalars.index(after: index)
            }
            index = scalars.index(after: index)
        }
        out.unicodeScalars.append(contentsOf: scalars[plainStart..<scalars.endIndex])
        out += "\""
    }

    /// Reads exactly an array of `{"name": string, "value": string}` objects; `nil` for anything else.
    private struct FastReader {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func headers() -> [HTTPFields.Field]? {
            guard take(UInt8(ascii: "[")) else { return nil }
            var fields: [HTTPFields.Field] = []
            if take(UInt8(ascii: "]")) { return atEnd() ? fields : nil }
            repeat {
                guard let field = object() else { return nil }
                fields.append(field)
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "]")), atEnd() else { return nil }
            return fields
        }

        private mutating func object() -> HTTPFields.Field? {
            guard take(UInt8(ascii: "{")) else { return nil }
            var name: String?, value: String?
            repeat {
                guard let key = string(), take(UInt8(ascii: ":")), let text = string() else { return nil }
                switch key {
                case "name" where name == nil: name = text
                case "value" where value == nil: value = text
                default: return nil
                }
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")), let name, let value else { return nil }
            return HTTPFields.Field(name: name, value: value)
        }

        /// A string without escapes is taken as is; one with escapes is left to JSONDecoder.
        private mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = position
            while position < bytes.count {
                switch bytes[position] {
                case UInt8(ascii: "\""):
                    let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
                    position += 1
                    return text
                case UInt8(ascii: "\\"), 0..<0x20:
                    return nil
                default:
                    position += 1
                }
            }
            return nil
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            skipSpaces()
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

        private mutating func skipSpaces() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x0A, 0x0D, 0x09: position += 1
                default: return
                }
            }
        }

        private mutating func atEnd() -> Bool {
            skipSpaces()
            return position == bytes.count
        }
    }
}
