import Foundation

/// Decodes `Decodable` values (a daemon method's typed parameters or result) from a ``JSONValue``, the way
/// ``Params`` reads members: `null` is the same as absent, unknown members are ignored, whole numbers are those of
/// at most 15 digits, and a member of the wrong type is an ``RPCError/invalidParams(_:)`` that names it with the
/// words ``Params`` uses (`"ids" must be an array of strings`).
package enum JSONValueDecoder {
    /// `value` as a `T`; any failure is thrown as an ``RPCError`` (`-32602` unless a type's own check threw another).
    public static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws(RPCError) -> T {
        do {
            return try ValueDecoder(value: value, codingPath: []).decodeValue(T.self)
        } catch let error as RPCError {
            throw error
        } catch {
            throw .invalidParams(String(describing: error))
        }
    }
}

/// The name a message gives to the member at `path`: its nearest key (an array's elements are named by the array).
private func memberName(_ path: [any CodingKey]) -> String {
    path.last(where: { $0.intValue == nil })?.stringValue ?? "params"
}

/// Whether the value at `path` is an element of an array (then its type is said as the array's).
private func isElement(_ path: [any CodingKey]) -> Bool { path.last?.intValue != nil }

private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { String(intValue ?? 0) }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func mismatch(_ what: String, plural: String) -> RPCError {
        let name = memberName(codingPath)
        return .invalidParams(isElement(codingPath) ? "\"\(name)\" must be an array of \(plural)" : "\"\(name)\" must be \(what)")
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == JSONValue.self, let value = value as? T { return value }
        if T.self == String.self {
            guard case .string(let string) = value, let string = string as? T else { throw mismatch("a string", plural: "strings") }
            return string
        }
        if T.self == Bool.self {
            guard case .bool(let bool) = value, let bool = bool as? T else { throw mismatch("true or false", plural: "true or false values") }
            return bool
        }
        if T.self == Int.self {
            guard let int = value.intValue as? T else { throw mismatch("a whole number of at most 15 digits", plural: "whole numbers") }
            return int
        }
        if T.self == Int64.self {
            guard let int = value.int64Value as? T else { throw mismatch("a whole number of at most 15 digits", plural: "whole numbers") }
            return int
        }
        if T.self == Double.self {
            guard case .number(let number) = value, let number = number as? T else { throw mismatch("a number", plural: "numbers") }
            return number
        }
        if T.self == [String].self {
            // As ``Params/strings(_:)`` says it, whichever element is wrong.
            guard case .array(let values) = value else { throw mismatch("an array of strings", plural: "arrays of strings") }
            var strings: [String] = []
            for element in values {
                guard case .string(let string) = element else { throw mismatch("an array of strings", plural: "arrays of strings") }
                strings.append(string)
            }
            guard let strings = strings as? T else { throw mismatch("an array of strings", plural: "arrays of strings") }
            return strings
        }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch("an object", plural: "objects") }
        return KeyedDecodingContainer(KeyedValues<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let values) = value else { throw mismatch("an array", plural: "arrays") }
        return UnkeyedValues(values: values, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValue(decoder: self) }
}

private struct SingleValue: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    func decodeNil() -> Bool { decoder.value == .null }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(T.self) }
}

private struct KeyedValues<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    /// A member that is `null` is absent, as ``Params`` reads it.
    func contains(_ key: Key) -> Bool { (members[key.stringValue] ?? .null) != .null }

    func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard let value = members[key.stringValue], value != .null else {
            if T.self == JSONValue.self, let null = JSONValue.null as? T { return null }
            throw RPCError.invalidParams("\"\(key.stringValue)\" is required")
        }
        return try ValueDecoder(value: value, codingPath: codingPath + [key]).decodeValue(T.self)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { ValueDecoder(value: .object(members), codingPath: codingPath) }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedValues: UnkeyedDecodingContainer {
    let values: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { values.count }
    var isAtEnd: Bool { currentIndex >= values.count }

    private mutating func next() throws -> ValueDecoder {
        guard !isAtEnd else { throw RPCError.invalidParams("\"\(memberName(codingPath))\" is too short") }
        defer { currentIndex += 1 }
        return ValueDecoder(value: values[currentIndex], codingPath: codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, values[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(T.self) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }

    mutating func superDecoder() throws -> any Decoder { try next() }
}
