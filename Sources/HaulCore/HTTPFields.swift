/// An ordered, case-insensitive list of HTTP header fields; a plain value so the core stays free of I/O types.
public struct HTTPFields: Equatable, Sendable, ExpressibleByDictionaryLiteral, Sequence {
    /// One header field: a name (compared case-insensitively) and its value.
    public struct Field: Equatable, Sendable {
        /// The field's name as it was given, e.g. `Content-Range`.
        public var name: String
        /// The field's value, without the surrounding whitespace.
        public var value: String
        /// A field from its name and value.
        public init(name: String, value: String) { self.name = name; self.value = value }
    }

    /// The fields in the order they were given or received, repeated names included.
    public private(set) var fields: [Field]

    /// The fields in this order.
    public init(_ fields: [Field] = []) { self.fields = fields }

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The first value for `name` (case-insensitive).
    public subscript(name: String) -> String? {
        let lower = name.lowercased()
        return fields.first(where: { $0.name.lowercased() == lower })?.value
    }

    /// All values for `name`, joined by ", " as RFC 9110 §5.3 allows for list-valued fields.
    public func combined(_ name: String) -> String? {
        let lower = name.lowercased()
        let values = fields.filter { $0.name.lowercased() == lower }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// Adds a field at the end, keeping any earlier ones with the same name.
    public mutating func append(_ name: String, _ value: String) { fields.append(Field(name: name, value: value)) }

    /// Removes every field named `name` (case-insensitive).
    public mutating func remove(_ name: String) {
        let lower = name.lowercased()
        fields.removeAll { $0.name.lowercased() == lower }
    }

    /// Whether a field named `name` (case-insensitive) is present.
    public func contains(_ name: String) -> Bool { self[name] != nil }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}
