import Foundation

/// Encodes `Encodable` values (a daemon method's typed parameters or result) as a ``JSONValue``: what is sent is
/// built in memory, without a trip through text. An optional member that is `nil` is left out, as synthesized
/// conformances do; a type that must send `null` encodes it itself.
package enum JSONValueEncoder {
    /// `value` as JSON.
    public static func encode(_ value: some Encodable) throws -> JSONValue {
        if let json = value as? JSONValue { return json }
        let root = Slot()
        try value.encode(to: ValueEncoder(slot: root, codingPath: []))
        return root.value
    }
}

/// Where an encoded value goes; containers fill theirs in when the value is read.
private final class Slot {
    enum Content {
        case value(JSONValue)
        case object([(String, Slot)])
        case array([Slot])
    }

    var content: Content = .value(.null)

    var value: JSONValue {
        switch content {
        case .value(let value): return value
        case .object(let members):
            var object: [String: JSONValue] = [:]
            for (key, slot) in members { object[key] = slot.value }
            return .object(object)
        case .array(let slots): return .array(slots.map(\.value))
        }
    }

    func member(_ key: String) -> Slot {
        let slot = Slot()
        if case .object(var members) = content {
            members.append((key, slot))
            content = .object(members)
        } else {
            content = .object([(key, slot)])
        }
        return slot
    }

    func element() -> Slot {
        let slot = Slot()
        if case .array(var slots) = content {
            slots.append(slot)
            content = .array(slots)
        } else {
            content = .array([slot])
        }
        return slot
    }

    func set(_ value: some Encodable, codingPath: [any CodingKey]) throws {
        switch value {
        case let json as JSONValue: content = .value(json)
        case let string as String: content = .value(.string(string))
        case let bool as Bool: content = .value(.bool(bool))
        case let int as Int: content = .value(JSONValue(int))
        case let int as Int64: content = .value(JSONValue(int))
        case let double as Double: content = .value(.number(double))
        default: try value.encode(to: ValueEncoder(slot: self, codingPath: codingPath))
        }
    }
}

private struct ValueEncoder: Encoder {
    let slot: Slot
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = slot.content {} else { slot.content = .object([]) }
        return KeyedEncodingContainer(KeyedSlots<Key>(slot: slot, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = slot.content {} else { slot.content = .array([]) }
        return UnkeyedSlots(slot: slot, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleSlot(slot: slot, codingPath: codingPath) }
}

private struct SingleSlot: SingleValueEncodingContainer {
    let slot: Slot
    let codingPath: [any CodingKey]
    mutating func encodeNil() throws { slot.content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try slot.set(value, codingPath: codingPath) }
}

private struct KeyedSlots<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let slot: Slot
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { slot.member(key.stringValue).content = .value(.null) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try slot.member(key.stringValue).set(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        ValueEncoder(slot: slot.member(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        ValueEncoder(slot: slot.member(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { ValueEncoder(slot: slot.member("super"), codingPath: codingPath) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        ValueEncoder(slot: slot.member(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedSlots: UnkeyedEncodingContainer {
    let slot: Slot
    let codingPath: [any CodingKey]
    var count: Int {
        if case .array(let slots) = slot.content { return slots.count }
        return 0
    }

    mutating func encodeNil() throws { slot.element().content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try slot.element().set(value, codingPath: codingPath) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        ValueEncoder(slot: slot.element(), codingPath: codingPath).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        ValueEncoder(slot: slot.element(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { ValueEncoder(slot: slot.element(), codingPath: codingPath) }
}
