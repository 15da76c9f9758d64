/// An ordered, case-insensitive list of HTTP header fields; a plain value so the core stays free of I/O types.
public struct HTTPFields: Equatable, Sendable, ExpressibleByDictionaryLiteral, Sequence {
    public struct Field: Equatable, Sendable {
        public var name: String
        public var value: String
        public init(name: String, value: String) { self.name = name; self.value = value }
    }

    public private(set) var fields: [Field]

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

    public mutating func append(_ name: String, _ value: String) { fields.append(Field(name: name, value: value)) }

    public mutating func remove(_ name: String) {
        let lower = name.lowercased()
        fields.removeAll { $0.name.lowercased() == lower }
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}
