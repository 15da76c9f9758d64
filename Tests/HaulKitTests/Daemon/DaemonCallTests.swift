import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

/// The typed calls (DaemonCall): decoding a member of any JSON value gives what ``Params`` gives (the same value,
/// or the same `-32602` message), and what a client encodes decodes back to itself.
@Suite struct DaemonCallTests {
    /// One value of every class JSON has, and the edges of whole numbers.
    static let samples: [JSONValue] = [
        .null, true, false, 0, -3, 42, .number(1.5), .number(9.0e15), .number(8.9e15), .number(-1e300), "", "a", "7",
        [], ["x", "y"], ["x", 1], [.null], [:], ["k": "v"],
    ]

    private struct One<Value: Codable & Sendable>: Codable, Sendable {
        var member: Value?
    }

    private func outcome<Value: Codable & Sendable & Equatable>(
        _ type: Value.Type, _ value: JSONValue?
    ) -> Result<Value?, RPCError> {
        var members: [String: JSONValue] = [:]
        if let value { members["member"] = value }
        return Result { () throws(RPCError) -> Value? in try JSONValueDecoder.decode(One<Value>.self, from: .object(members)).member }
    }

    private func expectSame<Value: Codable & Sendable & Equatable>(
        _ type: Value.Type, _ params: (Params) throws(RPCError) -> Value?
    ) {
        for value in Self.samples.map(Optional.some) + [nil] as [JSONValue?] {
            var members: [String: JSONValue] = [:]
            if let value { members["member"] = value }
            let expected = Result { () throws(RPCError) -> Value? in try params(Params(members)) }
            let typed = outcome(Value.self, value)
            switch (expected, typed) {
            case (.success(let a), .success(let b)): #expect(a == b, "\(Value.self) from \(String(describing: value))")
            case (.failure(let a), .failure(let b)): #expect(a == b, "\(Value.self) from \(String(describing: value))")
            default: Issue.record("\(Value.self) from \(String(describing: value)): Params gives \(expected), the typed call \(typed)")
            }
        }
    }

    @Test func everyMemberTypeDecodesAsParamsReadsIt() {
        expectSame(String.self) { params throws(RPCError) in try params.string("member") }
        expectSame(Int.self) { params throws(RPCError) in try params.int("member") }
        expectSame(Int64.self) { params throws(RPCError) in try params.int64("member") }
        expectSame(Double.self) { params throws(RPCError) in try params.double("member") }
        expectSame(Bool.self) { params throws(RPCError) in try params.bool("member") }
        expectSame([String].self) { params throws(RPCError) in try params.strings("member") }
    }

    @Test func aRequiredMemberThatIsMissingOrNullIsNamed() throws {
        for members in [[:], ["priority": JSONValue.null]] as [[String: JSONValue]] {
            #expect(throws: RPCError.invalidParams("\"priority\" is required")) {
                try SetPriority.parameters(Params(members.merging(["ids": ["a"]]) { a, _ in a }))
            }
        }
        #expect(throws: RPCError.invalidParams("\"tasks\" must be a non-empty array of objects")) { try AddTasks.parameters(Params()) }
        #expect(throws: RPCError.invalidParams("\"tasks\" must be a non-empty array of objects")) { try AddTasks.parameters(Params(["tasks": []])) }
        #expect(throws: RPCError.invalidParams("\"tasks\" must be an array of objects")) { try AddTasks.parameters(Params(["tasks": "x"])) }
        #expect(throws: RPCError.invalidParams("\"tasks\" must be an array of objects")) { try AddTasks.parameters(Params(["tasks": [["url": "x"], 3]])) }
        // `"all": true` does not read `ids`, as before.
        #expect(try PauseTasks.parameters(Params(["all": true, "ids": 5])) == SelectedTasks(all: true))
        #expect(throws: RPCError.invalidParams("\"ids\" must be an array of strings")) { try PauseTasks.parameters(Params(["ids": 5])) }
        #expect(throws: RPCError.invalidParams("\"deleteFile\" must be true or false")) {
            try RemoveTasks.parameters(Params(["ids": ["a"], "deleteFile": "yes"]))
        }
    }

    /// The other methods' members keep their wire names and their nulls.
    @Test func theSessionAndDaemonMethodsKeepTheirWireShapes() throws {
        #expect(try JSONValueEncoder.encode(Hello.Parameters(client: "haul-cli")) == ["protocol": 1, "client": "haul-cli"])
        #expect(throws: RPCError.invalidParams("\"protocol\" is required")) { try Hello.parameters(Params()) }
        #expect(throws: RPCError.invalidParams("\"protocol\" must be a whole number of at most 15 digits")) {
            try Hello.parameters(Params(["protocol": "1"]))
        }
        let identity = Hello.Result(protocolVersion: 1, version: "0.1.0", pid: 42)
        #expect(try JSONValueEncoder.encode(DaemonStatus.Result(identity, sessions: ["a"]))
            == ["protocol": 1, "version": "0.1.0", "pid": 42, "sessions": ["a"]])
        #expect(try JSONValueEncoder.encode(SetRateLimit.Parameters(bytesPerSecond: nil)) == ["bytesPerSecond": .null])
        #expect(try JSONValueEncoder.encode(Subscribe.Result(journal: [], next: nil)) == ["journal": [], "next": .null])
        #expect(try JSONValueEncoder.encode(ListJournal.Result(events: [], next: 7)) == ["events": [], "next": 7])
        #expect(try JSONValueEncoder.encode(AcknowledgeJournal.Parameters(through: 9)) == ["through": 9])
        #expect(try JSONValueEncoder.encode(FleetNodes.Result(store: nil, node: nil, nodes: [])) == ["store": .null, "node": .null, "nodes": []])
        let settings: JSONValue = ["rateLimit": .null, "maxConcurrentDownloads": 3]
        #expect(try JSONValueEncoder.encode(try JSONValueDecoder.decode(SessionSettings.Result.self, from: settings)) == settings)
        #expect(throws: RPCError.invalidParams("\"configuration\" must be an object")) { try OpenSession.parameters(Params(["configuration": 3])) }
    }

    @Test func aRemovedEventCrossesTheWire() throws {
        #expect(DaemonProtocol.encode(.removed(id: "t1")) == ["type": "removed", "id": "t1"])
        let decoded = try #require(DaemonProtocol.decodeEvent(["type": "removed", "id": "t1", "later": true]))
        #expect(decoded.event == .removed(id: "t1") && decoded.sequence == nil)
        #expect(DaemonProtocol.decodeEvent(["type": "removed"]) == nil, "a removal names its task")
        #expect(EventJSON.session(.removed(id: "t1"), redacting: true) == ["type": "removed", "id": "t1"])
    }

    @Test func whatAClientSendsIsWhatTheDaemonReads() throws {
        let request = DownloadRequest(DownloadSpec(url: try UserInput.url("https://example.com/a.iso")), priority: 3, id: "mine")
        let sent = AddTasks.Parameters(tasks: [AddTasks.Addition(request)], reply: "ids")
        let wire = try JSONValueEncoder.encode(sent)
        #expect(wire["reply"] == "ids")
        let read = try AddTasks.parameters(Params(try #require(wire.objectValue)))
        #expect(read == sent)
        #expect(try read.tasks[0].request().id == "mine")
        #expect(try read.tasks[0].request().priority == 3)

        let removal = RemoveTasks.Parameters(SelectedTasks(ids: ["a", "b"]), deleteFile: true)
        #expect(try JSONValueEncoder.encode(removal) == ["ids": ["a", "b"], "deleteFile": true])
        #expect(try RemoveTasks.parameters(Params(try #require(JSONValueEncoder.encode(removal).objectValue))) == removal)
        #expect(try JSONValueEncoder.encode(SelectedTasks(nil)) == ["all": true])
        #expect(try JSONValueEncoder.encode(ListTasks.Parameters(limit: 5)) == ["limit": 5])

        // Results: `next` and `total` are null, not left out; `{}` for the methods that answer nothing.
        let task = TaskSnapshot(
            id: "t1", url: "https://example.com/a.iso", state: .waiting, priority: 0, bytes: 0, total: nil,
            bytesPerSecond: nil, filePath: nil, error: nil)
        let page = ListTasks.Result(tasks: [WireTask(task)], next: nil)
        let pageJSON = try JSONValueEncoder.encode(page)
        #expect(pageJSON == ["tasks": [DaemonProtocol.encode(task)], "next": .null])
        #expect(try JSONValueDecoder.decode(ListTasks.Result.self, from: pageJSON) == page)
        #expect(try JSONValueEncoder.encode(NoResult()) == [:])
        let map = TaskSegments.Result(SegmentMap(total: nil, done: [.init(0, 5)], active: []), id: "t1")
        #expect(try JSONValueEncoder.encode(map) == ["id": "t1", "total": .null, "done": [[0, 5]], "active": []])
    }
}
