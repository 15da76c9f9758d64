import Foundation

/// JSON-RPC 2.0 messages, decoded from and encoded to single lines. Pure: no I/O.
package enum JSONRPC {
    /// The largest line either side accepts (newline excluded).
    public static let maxMessageBytes = 1 << 20

    /// A request or notification from a client.
    public struct Request: Sendable, Equatable {
        /// `nil` for a notification (no response is sent).
        public var id: JSONValue?
        public var method: String
        public var params: Params

        public init(id: JSONValue?, method: String, params: Params = Params()) {
            self.id = id
            self.method = method
            self.params = params
        }
    }

    /// Decodes one line from a client: a request, or the error to answer with (and the id to answer to).
    public static func decodeRequest(_ line: some Collection<UInt8>) -> Result<Request, Failure> {
        guard let value = JSONValue.parse(line) else {
            return .failure(Failure(id: .null, error: .parseError))
        }
        guard case .object(let members) = value else {
            if case .array = value { return .failure(Failure(id: .null, error: .invalidRequest("batches are not supported"))) }
            return .failure(Failure(id: .null, error: .invalidRequest("a request must be a JSON object")))
        }
        let id = members["id"]
        switch id {
        case nil, .string?, .number?, .null?: break
        default: return .failure(Failure(id: .null, error: .invalidRequest("\"id\" must be a string or a number")))
        }
        let answerTo = id ?? .null
        guard members["jsonrpc"] == .string("2.0") else {
            return .failure(Failure(id: answerTo, error: .invalidRequest("\"jsonrpc\" must be \"2.0\"")))
        }
        guard case .string(let method)? = members["method"] else {
            return .failure(Failure(id: answerTo, error: .invalidRequest("\"method\" must be a string")))
        }
        switch members["params"] {
        case nil, .null?:
            return .success(Request(id: id, method: method))
        case .object(let params)?:
            return .success(Request(id: id, method: method, params: Params(params)))
        default:
            return .failure(Failure(id: answerTo, error: .invalidParams("\"params\" must be an object")))
        }
    }

    /// An error together with the id of the request it answers.
    public struct Failure: Error, Sendable, Equatable {
        public var id: JSONValue
        public var error: RPCError
    }

    /// What a client receives: a response to one of its requests, or a notification.
    public enum Incoming: Sendable, Equatable {
        case response(id: JSONValue, Result<JSONValue, RPCError>)
        case notification(method: String, params: JSONValue)
    }

    /// Decodes one line from the daemon; `nil` when it is neither a response nor a notification.
    public static func decodeIncoming(_ line: some Collection<UInt8>) -> Incoming? {
        guard case .object(let members)? = JSONValue.parse(line), members["jsonrpc"] == .string("2.0") else { return nil }
        if case .string(let method)? = members["method"] {
            return .notification(method: method, params: members["params"] ?? .null)
        }
        guard let id = members["id"] else { return nil }
        if let error = members["error"] {
            guard let code = error["code"]?.intValue, let message = error["message"]?.stringValue else { return nil }
            return .response(id: id, .failure(RPCError(code: code, message: message, data: error["data"])))
        }
        return .response(id: id, .success(members["result"] ?? .null))
    }

    // MARK: Encoding (each ends with a newline)

    public static func request(id: JSONValue, method: String, params: JSONValue) -> String {
        JSONValue.object(["jsonrpc": "2.0", "id": id, "method": .string(method), "params": params]).serialized + "\n"
    }

    public static func response(id: JSONValue, result: JSONValue) -> String {
        JSONValue.object(["jsonrpc": "2.0", "id": id, "result": result]).serialized + "\n"
    }

    public static func response(id: JSONValue, error: RPCError) -> String {
        var body: [String: JSONValue] = ["code": JSONValue(error.code), "message": .string(error.message)]
        if let data = error.data { body["data"] = data }
        return JSONValue.object(["jsonrpc": "2.0", "id": id, "error": .object(body)]).serialized + "\n"
    }

    public static func notification(method: String, params: JSONValue) -> String {
        JSONValue.object(["jsonrpc": "2.0", "method": .string(method), "params": params]).serialized + "\n"
    }
}

/// A JSON-RPC error object.
package struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public static let parseError = RPCError(code: -32700, message: "parse error: the message is not valid JSON")
    public static func invalidRequest(_ why: String) -> RPCError { RPCError(code: -32600, message: "invalid request: " + why) }
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: -32601, message: "method not found: \(method)")
    }
    public static func invalidParams(_ why: String) -> RPCError { RPCError(code: -32602, message: "invalid params: " + why) }
    /// A Haul error: its kind, and its reason as `data.failure` (``FailureReason`` in JSON) when it has one.
    public static func haul(_ error: HaulError) -> RPCError {
        var data: [String: JSONValue] = ["kind": .string(error.kind.rawValue)]
        if let failure = FailureReasonJSON.value(error) { data["failure"] = failure }
        return RPCError(code: -32001, message: error.message, data: .object(data))
    }
    public static func unsupportedProtocol(_ asked: Int) -> RPCError {
        RPCError(code: -32002, message: "protocol \(asked) is not supported; this daemon speaks protocol \(DaemonProtocol.version)")
    }

    /// The session a method names does not exist in the daemon (`data.reason` is `noSuchSession`); only
    /// `session.open` and `tasks.add` create sessions.
    public static func noSuchSession(_ name: String) -> RPCError {
        RPCError(
            code: -32001, message: "no session \"\(name)\" in the haul daemon; adding a task to it creates it",
            data: ["kind": "usage", "reason": "noSuchSession", "session": .string(name)])
    }

    /// Whether this is ``noSuchSession(_:)``.
    public var isNoSuchSession: Bool { code == -32001 && data?["reason"]?.stringValue == "noSuchSession" }

    /// The error as a person should read it: Haul errors keep their kind, others become `.server`.
    public var haulError: HaulError {
        if code == -32001, let kind = data?["kind"]?.stringValue.flatMap(HaulError.Kind.init(rawValue:)) {
            return HaulError(kind, message, reason: FailureReasonJSON.decode(data?["failure"]) ?? .other)
        }
        return HaulError(.server, "the haul daemon refused the request: \(message)")
    }

    public var description: String { message }
}

/// The members of a request's `params`, read with type checks that name the offending member.
package struct Params: Sendable, Equatable {
    public var members: [String: JSONValue]

    public init(_ members: [String: JSONValue] = [:]) { self.members = members }

    public func string(_ key: String) throws(RPCError) -> String? {
        switch members[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw .invalidParams("\"\(key)\" must be a string")
        }
    }

    public func requiredString(_ key: String) throws(RPCError) -> String {
        guard let value = try string(key) else { throw .invalidParams("\"\(key)\" is required") }
        return value
    }

    public func int(_ key: String) throws(RPCError) -> Int? {
        switch members[key] {
        case nil, .null?: return nil
        case let value?:
            guard let number = value.intValue else { throw .invalidParams("\"\(key)\" must be a whole number of at most 15 digits") }
            return number
        }
    }

    public func requiredInt(_ key: String) throws(RPCError) -> Int {
        guard let value = try int(key) else { throw .invalidParams("\"\(key)\" is required") }
        return value
    }

    public func int64(_ key: String) throws(RPCError) -> Int64? {
        switch members[key] {
        case nil, .null?: return nil
        case let value?:
            guard let number = value.int64Value else { throw .invalidParams("\"\(key)\" must be a whole number of at most 15 digits") }
            return number
        }
    }

    public func double(_ key: String) throws(RPCError) -> Double? {
        switch members[key] {
        case nil, .null?: return nil
        case .number(let value)?: return value
        default: throw .invalidParams("\"\(key)\" must be a number")
        }
    }

    public func bool(_ key: String) throws(RPCError) -> Bool? {
        switch members[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw .invalidParams("\"\(key)\" must be true or false")
        }
    }

    public func strings(_ key: String) throws(RPCError) -> [String]? {
        switch members[key] {
        case nil, .null?: return nil
        case .array(let values)?:
            var strings: [String] = []
            for value in values {
                guard case .string(let string) = value else { throw .invalidParams("\"\(key)\" must be an array of strings") }
                strings.append(string)
            }
            return strings
        default: throw .invalidParams("\"\(key)\" must be an array of strings")
        }
    }

    public func objects(_ key: String) throws(RPCError) -> [Params]? {
        switch members[key] {
        case nil, .null?: return nil
        case .array(let values)?:
            var objects: [Params] = []
            for value in values {
                guard case .object(let members) = value else { throw .invalidParams("\"\(key)\" must be an array of objects") }
                objects.append(Params(members))
            }
            return objects
        default: throw .invalidParams("\"\(key)\" must be an array of objects")
        }
    }

    public func object(_ key: String) throws(RPCError) -> Params? {
        switch members[key] {
        case nil, .null?: return nil
        case .object(let members)?: return Params(members)
        default: throw .invalidParams("\"\(key)\" must be an object")
        }
    }
}
