#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// The `haul daemon` wire protocol (docs/protocol.md) against the real binary over raw Unix sockets: socket
/// permissions and the one-daemon lock, JSON-RPC errors, oversized lines, slow and concurrent clients. Every test
/// that runs a daemon ends by checking that it still answers and exits 0 within 3 s of SIGTERM, removing its socket.
@Suite(.serialized) struct DaemonProtocolTests {
    // MARK: 1. Permissions and one daemon per socket

    @Test func defaultSocketIsPrivateAndThePidFileHoldsTheDaemonsPid() async throws {
        try await Sandbox.with { sandbox in
            let socket = sandbox.home + "/run/daemon.sock"
            let daemon = try await startDaemon(sandbox, socket: nil, expectAt: socket)
            #expect(mode(of: sandbox.home + "/run") == 0o700, "socket directory mode \(octal(mode(of: sandbox.home + "/run")))")
            #expect(mode(of: socket) == 0o600, "socket mode \(octal(mode(of: socket)))")
            var info = stat()
            #expect(stat(socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK, "\(socket) is not a socket")
            let pidText = try? String(contentsOfFile: socket + ".pid", encoding: .utf8)
            #expect(pidText?.trimmingCharacters(in: .whitespacesAndNewlines) == String(daemon.pid),
                    "\(socket).pid holds \(pidText ?? "nothing"), the daemon is \(daemon.pid)")
            try await expectAnswersAndStopsOnSIGTERM(daemon, socket: socket)
        }
    }

    @Test func refusesToStartWhenTheSocketDirectoryIsOpenToOthers() async throws {
        try await Sandbox.with { sandbox in
            let directory = sandbox.home + "/open"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try #require(chmod(directory, 0o755) == 0)
            let socket = directory + "/daemon.sock"
            let result = try await sandbox.run(["daemon", "--socket", socket], timeout: .seconds(15))
            #expect(result.exitCode != 0 && !result.signalled, "exit \(result.exitCode): \(result.stderr)")
            #expect(result.stderrLines.count == 1, "one line of stderr expected, got: \(result.stderr)")
            #expect(!fileExists(socket), "no socket may be created in a directory open to others")
            #expect(mode(of: directory) == 0o755, "the daemon must not change the directory's mode")
        }
    }

    @Test func aSecondDaemonOnTheSameSocketExits8AndTheFirstKeepsServing() async throws {
        try await withDaemon { sandbox, daemon, socket in
            let second = try await sandbox.run(["daemon", "--socket", socket], timeout: .seconds(15))
            #expect(second.exitCode == 8 && !second.signalled, "second daemon: exit \(second.exitCode): \(second.stderr)")
            #expect(daemon.isRunning, "the first daemon died: \(daemon.stderrSoFar())")
            let hello = try RawSocketClient(path: socket).call("daemon.hello", ["protocol": 1], id: 1)
            #expect(number(hello.result?["pid"]) == Int(daemon.pid), "the socket must still lead to the first daemon: \(hello)")
            let pidText = try? String(contentsOfFile: socket + ".pid", encoding: .utf8)
            #expect(pidText?.trimmingCharacters(in: .whitespacesAndNewlines) == String(daemon.pid))
        }
    }

    // MARK: 2. Parse errors

    /// Parse errors and what each request gets are HaulDaemonTests' (WireProtocolTests); on the socket, a line may end in
    /// `\r\n`, and a bad line leaves the connection usable.
    @Test func aLineMayEndInCRLFAndABadLineLeavesTheConnectionUsable() async throws {
        try await withDaemon { _, daemon, socket in
            let client = try RawSocketClient(path: socket)
            try client.sendLine("not json")
            let error = try client.readMessage()
            #expect(error.errorCode == -32700 && error.id == "null", "\(error)")
            try client.sendRequest("daemon.hello", ["protocol": 1], id: 2)
            let hello = try client.readMessage()
            #expect(hello.id == "2" && number(hello.result?["pid"]) == Int(daemon.pid), "\(hello)")
            try client.send(Array(#"{"jsonrpc":"2.0","id":"crlf","method":"daemon.hello","params":{"protocol":1}}"#.utf8) + [13, 10])
            let crlf = try client.readMessage()
            #expect(crlf.id == "\"crlf\"" && number(crlf.result?["protocol"]) == 1, "\(crlf)")
        }
    }

    // MARK: 3. Invalid params, invalid requests, unknown methods, notifications

    /// What each invalid request gets is HaulDaemonTests' (WireProtocolTests); on the socket, a notification's silence
    /// and pipelined requests keep the answers in order.
    @Test func notificationsGetNoLineAndPipelinedRequestsAreAnsweredInOrder() async throws {
        try await withDaemon { _, _, socket in
            let client = try RawSocketClient(path: socket)
            // Notifications (no id) are carried out silently: the next line is the response to the next request.
            try client.sendRequest("daemon.status", nil, id: nil)
            try client.sendRequest("tasks.list", ["session": "default"], id: nil)
            try client.sendRequest("no.such.method", nil, id: nil)
            try client.sendRequest("tasks.list", ["session": 5], id: nil)
            try client.sendRequest("daemon.status", nil, id: 26)
            let status = try client.readMessage()
            #expect(status.id == "26" && status.result?["sessions"] is [Any], "expected the response to id 26, got \(status)")
            // Pipelined requests are answered in order.
            let pipelined = [(30, "daemon.hello", ["protocol": 1] as [String: Any]?), (31, "daemon.status", nil),
                             (32, "tasks.list", ["session": "default"]), (33, "no.such", nil)]
            var batch: [UInt8] = []
            for (id, method, params) in pipelined {
                var message: [String: Any] = ["jsonrpc": "2.0", "id": id, "method": method]
                message["params"] = params
                batch += Array(try JSONSerialization.data(withJSONObject: message)) + [10]
            }
            try client.send(batch)
            let ids = try (0..<4).map { _ in try client.readMessage().id }
            #expect(ids == ["30", "31", "32", "33"], "responses out of order: \(ids)")
        }
    }

    // MARK: 4. Oversized lines

    @Test func aLineOverOneMiBGetsInvalidRequestAndOnlyThatConnectionIsClosed() async throws {
        try await withDaemon { _, daemon, socket in
            let bystander = try RawSocketClient(path: socket)
            #expect(number(try bystander.call("daemon.hello", ["protocol": 1], id: 1).result?["protocol"]) == 1)
            let flooder = try RawSocketClient(path: socket)
            var frame = Array(#"{"jsonrpc":"2.0","id":1,"method":"daemon.hello","params":{"pad":""#.utf8)
            frame += [UInt8](repeating: UInt8(ascii: "a"), count: (2 << 20) - frame.count)
            var sendError = "none"
            do { try flooder.send(frame, timeout: .seconds(15)) } catch { sendError = "\(error)" }  // the daemon may close first
            let error = try flooder.readMessage(timeout: .seconds(15))
            #expect(error.errorCode == -32600, "expected -32600 for a 2 MiB line (send error: \(sendError)), got \(error)")
            #expect(flooder.waitForClose(timeout: .seconds(5)), "the daemon must close the connection after the error")
            #expect(daemon.isRunning, "the daemon died: \(daemon.stderrSoFar())")
            let again = try bystander.call("daemon.hello", ["protocol": 1], id: 2)
            #expect(again.id == "2" && number(again.result?["protocol"]) == 1, "the other connection: \(again)")
            let fresh = try RawSocketClient(path: socket).call("daemon.status", id: 3)
            #expect(fresh.id == "3" && fresh.result != nil, "a new connection: \(fresh)")
        }
    }

    // MARK: 5. A client that stops reading

    @Test func aSubscriberThatStopsReadingDoesNotHoldUpOtherClients() async throws {
        try await withDaemon { sandbox, _, socket in
            let refusing = try RefusingPort()  // nothing listens: the tasks fail fast, making events
            defer { refusing.close() }
            let port = refusing.port
            let slow = try RawSocketClient(path: socket)
            // Only session.open and tasks.add create a session: subscribing needs one that exists.
            _ = try slow.call("session.open", ["session": "default"], id: "open")
            let subscribed = try slow.call("events.subscribe", ["session": "default"], id: "sub")
            #expect(subscribed.result?["journal"] is [Any], "events.subscribe: \(subscribed)")
            // From here on `slow` is never read again.
            let client = try RawSocketClient(path: socket)
            let batchSize = 1_000
            var slowest: Duration = .zero
            for batch in 0..<4 {
                let tasks: [[String: Any]] = (0..<batchSize).map {
                    ["url": "http://127.0.0.1:\(port)/b\(batch)/f\($0).bin", "directory": sandbox.work + "/out"]
                }
                let added = try client.call("tasks.add", ["session": "default", "tasks": tasks], id: "add\(batch)", timeout: .seconds(30))
                #expect((added.result?["tasks"] as? [Any])?.count == batchSize, "tasks.add: \(added)")
                let start = ContinuousClock.now
                let hello = try client.call("daemon.hello", ["protocol": 1], id: "hello\(batch)", timeout: .seconds(5))
                slowest = max(slowest, ContinuousClock.now - start)
                #expect(hello.id == "\"hello\(batch)\"" && number(hello.result?["protocol"]) == 1, "\(hello)")
            }
            let list = try client.call("tasks.list", ["session": "default"], id: "list", timeout: .seconds(30))
            #expect((list.result?["tasks"] as? [Any])?.count == 4 * batchSize, "tasks.list: \(list)")
            // Events keep coming (tasks failing) while the subscriber still does not read.
            let until = ContinuousClock.now + .seconds(2)
            for round in 0..<200 where ContinuousClock.now < until {
                let start = ContinuousClock.now
                let status = try client.call("daemon.status", id: round, timeout: .seconds(5))
                slowest = max(slowest, ContinuousClock.now - start)
                #expect(status.id == String(round) && status.result != nil, "\(status)")
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(slowest < .seconds(3), "a request of the reading client took \(slowest)")
            // The scenario happened: notifications piled up unread at the subscriber. (A full Unix socket holds
            // only ~48 KB of small writes: the sender's 208 KB buffer is charged each write's kernel overhead.)
            let pending = slow.pendingBytes()
            #expect(pending > 16_000, "only \(pending) bytes of notifications reached the subscriber")
        }
    }

    // MARK: 6. Many clients at once

    @Test func twentyConcurrentClientsEachGetTheirOwnResponses() async throws {
        try await withDaemon { _, daemon, socket in
            let collector = Collector()
            let pid = Int(daemon.pid)
            // The sessions the clients list exist (only session.open and tasks.add create one).
            let opener = try RawSocketClient(path: socket)
            for index in 0..<4 { _ = try opener.call("session.open", ["session": "s\(index)"], id: index) }
            for index in 0..<20 {
                Thread {
                    defer { collector.finished() }
                    do {
                        try Self.converse(client: index, socket: socket, pid: pid, collector: collector)
                    } catch {
                        collector.fail("client \(index): \(error)")
                    }
                }.start()
            }
            try await eventually("all 20 clients are done", timeout: .seconds(60)) { collector.done == 20 }
            let failures = collector.failures
            #expect(failures.isEmpty, "\(failures.count) failures, first: \(failures.prefix(5))")
        }
    }

    /// SIGTERM while clients keep connecting: a connection accepted as the listener closes is closed too, never
    /// left half made (SwiftNIO traps on a wrapped connection nobody finished: "Deinited NIOAsyncWriter without
    /// calling finish()"). The window is narrow, so four rounds, each with four threads connecting and hanging up
    /// until the daemon is gone (at most 20 s and 50,000 connections per thread).
    @Test func sigtermWhileClientsKeepConnectingExitsCleanly() async throws {
        try await Sandbox.with { sandbox in
            let socket = sandbox.home + "/run/daemon.sock"
            for round in 0..<4 {
                let daemon = try await startDaemon(sandbox, socket: socket, expectAt: socket)
                let result = try await sigtermWhileClientsConnect(daemon, round: round) { RawSocketClient.canConnect(socket) }
                #expect(result.exitCode == 0 && !result.signalled, "round \(round), SIGTERM: exit \(result.exitCode): \(result.stderr)")
                #expect(!result.stderr.contains("Fatal error"), "round \(round): \(result.stderr)")
                #expect(!fileExists(socket), "round \(round): the socket must be removed on SIGTERM")
            }
        }
    }

    /// Ten requests on one connection: five one at a time, then five pipelined; ids mix numbers and strings.
    private static func converse(client index: Int, socket: String, pid: Int, collector: Collector) throws {
        let client = try RawSocketClient(path: socket, timeout: .seconds(10))
        func request(_ step: Int) -> (id: Any, method: String, params: [String: Any]?) {
            let id: Any = step.isMultiple(of: 2) ? index * 1_000 + step : "c\(index)-\(step)"
            switch step % 3 {
            case 0: return (id, "daemon.hello", ["protocol": 1, "client": "test\(index)"])
            case 1: return (id, "tasks.list", ["session": "s\(index % 4)"])
            default: return (id, "daemon.status", nil)
            }
        }
        func check(_ response: RawRPCMessage, _ step: Int) {
            let (id, method, _) = request(step)
            let result = response.result
            let ok = switch method {
            case "daemon.hello": number(result?["protocol"]) == 1 && number(result?["pid"]) == pid
            case "tasks.list": result?["tasks"] is [Any]
            default: number(result?["protocol"]) == 1 && result?["sessions"] is [Any]
            }
            if response.id != RawRPCMessage.idText(id) || !ok {
                collector.fail("client \(index) step \(step) \(method) id \(RawRPCMessage.idText(id)): \(response)")
            }
        }
        for step in 0..<5 {
            let (id, method, params) = request(step)
            check(try client.call(method, params, id: id, timeout: .seconds(20)), step)
        }
        for step in 5..<10 {
            let (id, method, params) = request(step)
            try client.sendRequest(method, params, id: id)
        }
        for step in 5..<10 { check(try client.readResponse(timeout: .seconds(20)), step) }
    }

    // MARK: Helpers

    /// Starts `haul daemon` (with `--socket` unless `socket` is nil) and waits until `expectAt` accepts connections.
    private func startDaemon(_ sandbox: Sandbox, socket: String?, expectAt path: String) async throws -> HaulRun {
        let daemon = try sandbox.start(["daemon"] + (socket.map { ["--socket", $0] } ?? []))
        try await eventually("the daemon accepts connections on \(path)", timeout: .seconds(30)) {
            guard daemon.isRunning else { throw HarnessError("the daemon exited: \(daemon.stderrSoFar())") }
            return RawSocketClient.canConnect(path)
        }
        return daemon
    }

    /// A daemon on `<home>/run/daemon.sock` for `body`; then the end-of-test check.
    private func withDaemon(_ body: (Sandbox, HaulRun, String) async throws -> Void) async throws {
        try await Sandbox.with { sandbox in
            let socket = sandbox.home + "/run/daemon.sock"
            let daemon = try await startDaemon(sandbox, socket: socket, expectAt: socket)
            try await body(sandbox, daemon, socket)
            try await expectAnswersAndStopsOnSIGTERM(daemon, socket: socket)
        }
    }

    /// 7. The daemon still answers, then exits 0 within 3 s of SIGTERM and removes its socket.
    private func expectAnswersAndStopsOnSIGTERM(_ daemon: HaulRun, socket: String) async throws {
        let client = try RawSocketClient(path: socket)  // stays connected (idle) across the SIGTERM
        let hello = try client.call("daemon.hello", ["protocol": 1], id: "last")
        #expect(number(hello.result?["protocol"]) == 1, "the daemon no longer answers: \(hello)")
        let start = ContinuousClock.now
        daemon.signal(SIGTERM)
        let result = try await daemon.wait(timeout: .seconds(30))
        // Until the daemon ended, not until this test noticed (the cooperative pool may be busy for seconds).
        let took = (daemon.endedAt ?? ContinuousClock.now) - start
        #expect(took < .seconds(3), "SIGTERM took \(took)")
        #expect(result.exitCode == 0 && !result.signalled, "SIGTERM: exit \(result.exitCode): \(result.stderr)")
        #expect(!fileExists(socket), "the socket must be removed on SIGTERM")
        client.disconnect()
    }
}

/// Failures and completions of client threads.
private final class Collector: @unchecked Sendable {
    private let lock = NSLock()
    private var failed: [String] = []
    private var count = 0
    var failures: [String] { lock.withLock { failed } }
    var done: Int { lock.withLock { count } }
    func fail(_ message: String) { lock.withLock { failed.append(message) } }
    func finished() { lock.withLock { count += 1 } }
}

private func number(_ value: Any?) -> Int? { (value as? NSNumber)?.intValue }
private func mode(of path: String) -> mode_t? {
    var info = stat()
    return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
}
private func octal(_ mode: mode_t?) -> String { mode.map { "0" + String($0, radix: 8) } ?? "missing" }
#endif
