import Foundation
import HaulKit
import HaulTestSupport
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import HaulDaemon

/// The daemon's service in this process over a fresh `HAUL_HOME`, driven as its socket drives it — a JSON-RPC line in,
/// the answer line out, a client's events read from its connection's outbox — in the manner of Hummingbird's router
/// tests: no socket, no process. What only a process shows (signals, the socket's peer check, autostart, SIGKILL,
/// file modes) stays in HaulCLITests.
final class InProcessDaemon: Sendable {
    let root: String
    let home: HaulHome
    let service: DaemonService
    let log: CollectedLog
    private let lastConnection = NIOLockedValueBox(0)

    /// A folder for downloads, outside `HAUL_HOME`.
    var work: String { root + "/work" }

    private init(root: String?, limits: DaemonLimits) async throws {
        self.root = root ?? NSTemporaryDirectory() + "haul-daemon-test-" + UUID().uuidString
        home = HaulHome(path: self.root + "/home")
        try FileManager.default.createDirectory(atPath: self.root + "/work", withIntermediateDirectories: true)
        try home.prepare()
        let log = CollectedLog()
        self.log = log
        service = DaemonService(home: home, logger: Logger(label: "haul.daemon") { _ in log }, limits: limits)
        // As `DaemonServer` starts it.
        await service.restoreSessions()
        await service.startSweeping()
    }

    /// A service for `body` over a fresh folder (or `root`, an earlier one's), shut down afterwards (also when `body`
    /// throws) and its folder removed unless `keepingFiles`. Returns the folder.
    @discardableResult
    static func with(
        limits: DaemonLimits = DaemonLimits(), root: String? = nil, keepingFiles: Bool = false, _ body: (InProcessDaemon) async throws -> Void
    ) async throws -> String {
        let daemon = try await InProcessDaemon(root: root, limits: limits)
        defer { if !keepingFiles { try? FileManager.default.removeItem(atPath: daemon.root) } }
        do {
            try await body(daemon)
        } catch {
            await daemon.service.shutdown()
            throw error
        }
        await daemon.service.shutdown()
        return daemon.root
    }

    /// A new client connection, as the socket would make on `connect`.
    func connect(as caller: DaemonCaller = .owner) -> Client {
        let id = lastConnection.withLockedValue { $0 += 1; return $0 }
        return Client(service: service, id: id, caller: caller)
    }

    /// The folders under `<home>/sessions`.
    var sessionFolders: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: home.path + "/sessions")) ?? []).sorted()
    }
}

/// One client connection: requests go to the service as lines; what the daemon sends it unasked (events) is collected
/// as the socket's writer would take it from the outbox.
final class Client: Sendable {
    let service: DaemonService
    let caller: DaemonCaller
    let outbox: ConnectionOutbox
    private let received = NIOLockedValueBox<[String]>([])
    private let reader: Task<Void, Never>
    /// Notifications already handed out by ``nextEvent(where:)``.
    private let taken = NIOLockedValueBox(0)

    init(service: DaemonService, id: Int, caller: DaemonCaller) {
        self.service = service
        self.caller = caller
        let outbox = ConnectionOutbox(id: id, onOverflow: {})
        self.outbox = outbox
        let received = received
        // Ends when the outbox is finished (the daemon shuts down, or the client hangs up).
        reader = Task {
            for await line in outbox.lines {
                received.withLockedValue { $0.append(line) }
                outbox.written(line)
            }
        }
    }

    deinit { reader.cancel() }

    /// Sends one line as the socket reads it (without its newline): the answer, parsed, or nil for a notification.
    func send(_ line: String) async throws -> Message? {
        guard let answer = await service.answer(Array(line.utf8), from: outbox, caller: caller) else { return nil }
        #expect(answer.hasSuffix("\n") && answer.dropLast().firstIndex(of: "\n") == nil, "an answer is one line: \(answer)")
        return try Message(answer)
    }

    /// A request (an id unless `id` is nil, which makes it a notification): its answer.
    @discardableResult
    func call(_ method: String, _ params: JSONValue? = nil, id: JSONValue? = 1) async throws -> Message {
        var request: [String: JSONValue] = ["jsonrpc": "2.0", "method": .string(method)]
        if let id { request["id"] = id }
        if let params { request["params"] = params }
        guard let answer = try await send(JSONValue.object(request).serialized) else {
            throw HarnessError("no answer to \(method) with id \(id?.serialized ?? "none")")
        }
        return answer
    }

    /// The result of `method`, or a thrown error naming what came instead.
    func result(_ method: String, _ params: JSONValue? = nil) async throws -> JSONValue {
        let answer = try await call(method, params)
        guard let result = answer["result"] else { throw HarnessError("\(method): \(answer.line)") }
        return result
    }

    /// Hangs up: the service forgets the connection's subscriptions.
    func disconnect() async {
        outbox.finish()
        await service.disconnected(outbox)
    }

    /// Every line the daemon sent this client unasked, so far.
    var notifications: [Message] {
        received.withLockedValue { $0 }.compactMap { try? Message($0) }
    }

    /// The next `event` notification not yet taken that satisfies `matching` (the ones before it are taken too),
    /// waiting for it up to `timeout`.
    func nextEvent(timeout: Duration = .seconds(30), where matching: (JSONValue) -> Bool = { _ in true }) async throws -> JSONValue {
        let step = Duration.milliseconds(20)
        // Bounded: at most timeout/step turns.
        for _ in 0...Int(timeout / step) {
            let lines = received.withLockedValue { $0 }
            let start = taken.withLockedValue { $0 }
            for index in start..<max(start, lines.count) {
                guard let message = try? Message(lines[index]), message["method"]?.stringValue == "event",
                      let event = message["params"]?["event"] else { continue }
                if matching(event) {
                    taken.withLockedValue { $0 = index + 1 }
                    return event
                }
            }
            try await Task.sleep(for: step)
        }
        throw HarnessError("no matching event within \(timeout); received: \(received.withLockedValue { $0 }.suffix(20))")
    }
}

/// A line the daemon sent, parsed.
struct Message: CustomStringConvertible {
    let line: String
    let value: JSONValue

    init(_ line: String) throws {
        self.line = line
        guard let value = JSONValue.parse(Array(line.utf8)), value.objectValue != nil else { throw HarnessError("not a JSON object: \(line)") }
        self.value = value
    }

    subscript(key: String) -> JSONValue? { value[key] }

    var id: String { value["id"]?.serialized ?? "absent" }
    var result: JSONValue? { value["result"] }
    var errorCode: Int? { value["error"]?["code"]?.intValue }
    var errorMessage: String { value["error"]?["message"]?.stringValue ?? "" }
    var errorReason: String? { value["error"]?["data"]?["reason"]?.stringValue }
    var isNoSuchSession: Bool { errorCode == -32001 && errorReason == "noSuchSession" }
    var description: String { line }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
