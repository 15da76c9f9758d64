import Foundation

/// One method of the daemon (docs/protocol.md) with the types of its parameters and of its result: what the server
/// decodes once and answers with, and what clients send and read back, so that neither side spells a member by
/// hand. The wire is JSON-RPC over ``JSONValue`` (``JSONValueDecoder``, ``JSONValueEncoder``); a method that names a
/// session carries `session` beside its parameters (``DaemonClient/call(_:session:_:)``).
package protocol DaemonCall: Sendable {
    /// What the method is sent with (without `session`).
    associatedtype Parameters: Codable & Sendable
    /// What the method answers.
    associatedtype Result: Codable & Sendable
    /// The method's wire name.
    static var method: DaemonMethod { get }
}

extension DaemonCall {
    /// `params` (a request's members) as this method's parameters; a member of the wrong type is `-32602` naming it.
    public static func parameters(_ params: Params) throws(RPCError) -> Parameters {
        try JSONValueDecoder.decode(Parameters.self, from: .object(params.members))
    }
}

/// The answer of a method that answers `{}`.
package struct NoResult: Codable, Sendable, Equatable {
    public init() {}
    /// Anything is accepted: the answer carries nothing.
    public init(from decoder: any Decoder) throws {}
    public func encode(to encoder: any Encoder) throws { _ = encoder.container(keyedBy: NoKeys.self) }
    private enum NoKeys: CodingKey {}
}

/// A value the protocol carries as one of its objects (a Task, a fleet's node), written and read by
/// ``DaemonProtocol``'s hand-made conversions.
package protocol WireObject: Sendable, Equatable {
    /// The value as JSON.
    var wireJSON: JSONValue { get }
    /// The value `json` describes; `nil` when it is not one.
    init?(wireJSON json: JSONValue)
    /// What it is called in an error ("a task").
    static var wireName: String { get }
}

extension TaskSnapshot: WireObject {
    package var wireJSON: JSONValue { DaemonProtocol.encode(self) }
    package init?(wireJSON json: JSONValue) {
        guard let task = DaemonProtocol.decodeTask(json) else { return nil }
        self = task
    }
    package static var wireName: String { "a task" }
}

extension FleetNode: WireObject {
    package var wireJSON: JSONValue { DaemonProtocol.encode(self) }
    package init?(wireJSON json: JSONValue) {
        guard let node = DaemonProtocol.decodeNode(json) else { return nil }
        self = node
    }
    package static var wireName: String { "a node" }
}

/// A ``WireObject`` in a typed parameter or result. Its JSON is made once: a list's page measures it and then
/// sends it.
package struct Wire<Value: WireObject>: Codable, Sendable, Equatable {
    /// The value.
    public let value: Value
    /// The value as JSON.
    public let json: JSONValue

    public init(_ value: Value) {
        self.value = value
        json = value.wireJSON
    }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.singleValueContainer().decode(JSONValue.self)
        guard let value = Value(wireJSON: json) else {
            throw HaulError(.server, "the haul daemon sent \(Value.wireName) this haul does not understand; restart the daemon")
        }
        self.value = value
        self.json = json
    }

    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

/// A task on the wire (docs/protocol.md's Task object).
package typealias WireTask = Wire<TaskSnapshot>

/// Which tasks a method acts on: `ids` (all of which must exist) or `"all": true`.
package struct SelectedTasks: Codable, Sendable, Equatable {
    /// Every task of the session.
    public var all: Bool?
    /// These tasks.
    public var ids: [String]?

    public init(all: Bool? = nil, ids: [String]? = nil) {
        self.all = all
        self.ids = ids
    }

    /// `ids`, or every task when `nil`.
    public init(_ ids: [String]?) {
        if let ids { self.init(ids: ids) } else { self.init(all: true) }
    }

    private enum CodingKeys: String, CodingKey { case all, ids }

    /// With `"all": true`, `ids` is not read.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        all = try container.decodeIfPresent(Bool.self, forKey: .all)
        ids = all == true ? nil : try container.decodeIfPresent([String].self, forKey: .ids)
    }
}
