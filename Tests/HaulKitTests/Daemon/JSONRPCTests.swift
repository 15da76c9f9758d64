import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct JSONRPCTests {
    func decode(_ text: String) -> Result<JSONRPC.Request, JSONRPC.Failure> { JSONRPC.decodeRequest(Array(text.utf8)) }

    @Test func decodesRequestsAndNotifications() throws {
        let request = try decode(#"{"jsonrpc":"2.0","id":7,"method":"tasks.list","params":{"session":"s"}}"#).get()
        #expect(request.id == .number(7) && request.method == "tasks.list")
        #expect(try request.params.requiredString("session") == "s")
        let named = try decode(#"{"jsonrpc":"2.0","id":"x","method":"daemon.status"}"#).get()
        #expect(named.id == .string("x") && named.params.members.isEmpty)
        #expect(try decode(#"{"jsonrpc":"2.0","method":"events.unsubscribe","params":{}}"#).get().id == nil)
    }

    @Test(arguments: [
        ("not json", -32700, JSONValue.null),
        ("[1,2]", -32600, .null),
        ("[]", -32600, .null),
        ("42", -32600, .null),
        (#"{"id":1,"method":"x"}"#, -32600, .number(1)),
        (#"{"jsonrpc":"1.0","id":1,"method":"x"}"#, -32600, .number(1)),
        (#"{"jsonrpc":"2.0","id":1,"method":5}"#, -32600, .number(1)),
        (#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#, -32600, .null),
        (#"{"jsonrpc":"2.0","id":2,"method":"x","params":[1]}"#, -32602, .number(2)),
    ])
    func rejectsMalformedRequests(_ text: String, code: Int, id: JSONValue) {
        guard case .failure(let failure) = decode(text) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(failure.error.code == code)
        #expect(failure.id == id)
    }

    @Test func paramsNameTheMemberWithTheWrongType() {
        let params = Params(["n": "x", "s": 3, "b": "yes", "list": ["a", 1], "objects": [1]])
        #expect(throws: RPCError.invalidParams("\"n\" must be a whole number of at most 15 digits")) { try params.int("n") }
        #expect(throws: RPCError.invalidParams("\"s\" must be a string")) { try params.string("s") }
        #expect(throws: RPCError.invalidParams("\"b\" must be true or false")) { try params.bool("b") }
        #expect(throws: RPCError.invalidParams("\"list\" must be an array of strings")) { try params.strings("list") }
        #expect(throws: RPCError.invalidParams("\"objects\" must be an array of objects")) { try params.objects("objects") }
        #expect(throws: RPCError.invalidParams("\"missing\" is required")) { try params.requiredString("missing") }
        #expect(throws: RPCError.invalidParams("\"n\" must be a whole number of at most 15 digits")) { try Params(["n": .number(1.5)]).int("n") }
        #expect((try? Params(["n": nil]).int("n")) == .some(nil), "null is the same as absent")
    }

    @Test func encodesOneLineEachAndRoundTrips() throws {
        let line = JSONRPC.response(id: 3, result: ["text": "two\nlines \"quoted\" \u{1}", "n": 12, "ok": true, "none": nil])
        #expect(line.hasSuffix("\n") && line.dropLast().allSatisfy { $0 != "\n" })
        guard case .response(let id, .success(let result))? = JSONRPC.decodeIncoming(Array(line.utf8)) else {
            Issue.record("not a response: \(line)")
            return
        }
        #expect(id == 3)
        #expect(result == ["text": "two\nlines \"quoted\" \u{1}", "n": 12, "ok": true, "none": nil])

        let error = JSONRPC.response(id: "a", error: .haul(HaulError(.busy, "in use")))
        guard case .response(_, .failure(let decoded))? = JSONRPC.decodeIncoming(Array(error.utf8)) else {
            Issue.record("not an error: \(error)")
            return
        }
        #expect(decoded.code == -32001 && decoded.haulError == HaulError(.busy, "in use"))

        let note = JSONRPC.notification(method: "event", params: ["type": "allFinished"])
        #expect(JSONRPC.decodeIncoming(Array(note.utf8)) == .notification(method: "event", params: ["type": "allFinished"]))
    }

    /// A class of failure this build does not know (a newer daemon's) is kept by its name, not turned into another.
    @Test func anErrorKindOfANewerDaemonIsKept() throws {
        let newer = HaulError.Kind(rawValue: "quotaExceeded")
        #expect(newer.known == nil && newer != .usage)
        let error = JSONRPC.response(id: "a", error: .haul(HaulError(newer, "over the quota")))
        guard case .response(_, .failure(let decoded))? = JSONRPC.decodeIncoming(Array(error.utf8)) else {
            Issue.record("not an error: \(error)")
            return
        }
        #expect(decoded.haulError.kind == newer && decoded.haulError.kind.rawValue == "quotaExceeded")
        for known in HaulError.Kind.Known.allCases {
            let kind = HaulError.Kind(known)
            let data = try JSONEncoder().encode([kind])
            #expect(String(decoding: data, as: UTF8.self) == "[\"\(known.rawValue)\"]")
            #expect(try JSONDecoder().decode([HaulError.Kind].self, from: data) == [kind])
        }
        switch HaulError(.checksum, "x").kind {
        case .checksum: break
        default: Issue.record("a static member matches in a switch")
        }
    }

    @Test func booleansAndNumbersStayApart() {
        #expect(JSONValue.parse(Array("[true, 1, 0, false, 1.5]".utf8)) == [true, 1, 0, false, .number(1.5)])
        #expect(JSONValue.parse(Array("{\"a\": tru}".utf8)) == nil)
    }
}
