import Foundation
import HaulKit
import Testing
@testable import HaulDaemon

/// The JSON-RPC layer of docs/protocol.md, line by line through the service in-process: parse errors, invalid
/// requests, unknown methods, invalid params with the request's id, notifications answered with nothing. (What the
/// socket adds — line framing, the 1 MiB limit, slow and concurrent connections — is DaemonProtocolTests' in
/// HaulCLITests.)
@Suite struct WireProtocolTests {
    @Test func malformedJSONGetsAParseErrorWithANullIDAndTheConnectionStaysUsable() async throws {
        try await InProcessDaemon.with { daemon in
            let client = daemon.connect()
            for line in [#"{"jsonrpc":"2.0","id":1,"method":"daemon.hello","params":{"protocol":1"#, "not json", "{\"a\":}", ""] {
                let error = try #require(try await client.send(line), "an answer to \(line)")
                #expect(error.errorCode == -32700 && error.id == "null", "for \(line): \(error)")
                #expect(error["jsonrpc"]?.stringValue == "2.0" && !error.errorMessage.isEmpty, "\(error)")
            }
            let hello = try await client.call("daemon.hello", ["protocol": 1], id: 2)
            #expect(hello.id == "2" && hello.result?["protocol"]?.intValue == 1, "\(hello)")
            #expect(hello.result?["pid"]?.intValue == Int(getpid()) && hello.result?["version"]?.stringValue == HaulVersion.string, "\(hello)")
        }
    }

    @Test func wrongParamsGetInvalidParamsWithTheRequestsIDAndNameTheMember() async throws {
        try await InProcessDaemon.with { daemon in
            let client = daemon.connect()
            let cases: [(id: JSONValue, method: String, params: JSONValue?, member: String)] = [
                (10, "tasks.add", ["session": "default", "tasks": "http://127.0.0.1/x"], "tasks"),
                ("list", "tasks.list", ["session": 5], "session"),
                (12, "daemon.hello", [:], "protocol"),
                (13, "daemon.hello", nil, "protocol"),
                ("str", "daemon.hello", ["protocol": "1"], "protocol"),
                (14, "tasks.list", ["session": "../up"], "session"),
                (15, "tasks.add", ["session": "default", "tasks": []], "tasks"),
                (16, "tasks.add", ["session": "default", "tasks": ["x"]], "tasks"),
                (17, "tasks.add", ["session": "default", "tasks": [["url": "http://127.0.0.1:9/a"]], "reply": "all"], "reply"),
                (18, "session.setMaxConcurrentDownloads", ["session": "default", "count": -1], "count"),
                (19, "session.setRateLimit", ["session": "default"], "bytesPerSecond"),
                (20, "session.setRateLimit", ["session": "default", "bytesPerSecond": 0], "bytesPerSecond"),
            ]
            for item in cases {
                let response = try await client.call(item.method, item.params, id: item.id)
                let context = "\(item.method) \(item.params?.serialized ?? "without params"): \(response)"
                #expect(response.errorCode == -32602, "\(context)")
                #expect(response.id == item.id.serialized, "\(context)")
                #expect(response.errorMessage.contains(item.member), "the message should name `\(item.member)`: \(context)")
            }
            #expect(daemon.sessionFolders.isEmpty, "a refused request created \(daemon.sessionFolders)")
            let hello = try await client.call("daemon.hello", ["protocol": 1], id: 30)
            #expect(hello.id == "30" && hello.result?["protocol"]?.intValue == 1, "\(hello)")
        }
    }

    @Test func invalidRequestsUnknownMethodsAndAnotherProtocol() async throws {
        try await InProcessDaemon.with { daemon in
            let client = daemon.connect()
            // (line, expected code, acceptable ids)
            let cases: [(String, Int, Set<String>)] = [
                ("42", -32600, ["null"]),
                (#""daemon.status""#, -32600, ["null"]),
                (#"{"id":20,"method":"daemon.status"}"#, -32600, ["null", "20"]),
                (#"{"jsonrpc":"1.0","id":21,"method":"daemon.status"}"#, -32600, ["null", "21"]),
                (#"{"jsonrpc":"2.0","id":22,"method":7}"#, -32600, ["null", "22"]),
                (#"[{"jsonrpc":"2.0","id":23,"method":"daemon.status"}]"#, -32600, ["null"]),
                (#"{"jsonrpc":"2.0","id":24,"method":"no.such.method"}"#, -32601, ["24"]),
                (#"{"jsonrpc":"2.0","id":"u","method":"tasks.explode","params":{"session":"default"}}"#, -32601, ["\"u\""]),
                (#"{"jsonrpc":"2.0","id":25,"method":"daemon.hello","params":{"protocol":99}}"#, -32002, ["25"]),
            ]
            for (line, code, ids) in cases {
                let response = try #require(try await client.send(line), "an answer to \(line)")
                #expect(response.errorCode == code && ids.contains(response.id), "for \(line) expected \(code) with id \(ids.sorted()), got \(response)")
            }
        }
    }

    @Test func notificationsAreCarriedOutAndAnsweredWithNothing() async throws {
        try await InProcessDaemon.with { daemon in
            let client = daemon.connect()
            for line in [#"{"jsonrpc":"2.0","method":"daemon.status"}"#, #"{"jsonrpc":"2.0","method":"tasks.list","params":{"session":"default"}}"#,
                         #"{"jsonrpc":"2.0","method":"no.such.method"}"#, #"{"jsonrpc":"2.0","method":"tasks.list","params":{"session":5}}"#] {
                let answer = try await client.send(line)
                #expect(answer == nil, "a notification gets no answer: \(line) got \(answer?.line ?? "")")
            }
            // Carried out all the same: a notification that opens a session opens it.
            #expect(try await client.send(#"{"jsonrpc":"2.0","method":"session.open","params":{"session":"quiet"}}"#) == nil)
            let status = try await client.result("daemon.status")
            #expect(status["sessions"] == ["quiet"], "\(status)")
            #expect(client.notifications.isEmpty, "nothing was sent unasked: \(client.notifications)")
        }
    }
}
