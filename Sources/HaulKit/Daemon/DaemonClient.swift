import NIOCore
import NIOPosix

/// One connection to `haul daemon`: JSON-RPC calls, and the notifications the daemon sends.
package actor DaemonClient {
    public let socketPath: String
    /// The process id of the daemon that answered (its hello).
    package private(set) var daemonPID = 0
    /// The daemon's notifications (`method`, `params`), in order; ends when the connection closes.
    public nonisolated let notifications: AsyncStream<(method: String, params: JSONValue)>
    private let notify: AsyncStream<(method: String, params: JSONValue)>.Continuation
    private var channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>?
    private var outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>?
    private var pending: [Int64: CheckedContinuation<JSONValue, any Error>] = [:]
    private var nextID: Int64 = 0
    private var closedError: HaulError?

    private init(socketPath: String) {
        self.socketPath = socketPath
        (notifications, notify) = AsyncStream.makeStream(of: (method: String, params: JSONValue).self, bufferingPolicy: .unbounded)
    }

    /// Connects and says hello (checking the protocol version); throws when no daemon answers at `socketPath`.
    public static func connect(socketPath: String, client: String = "haulkit") async throws -> DaemonClient {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: socketPath) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFrameDecoder()))
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw HaulError(.network, "no haul daemon answers at \(socketPath): \(error)")
        }
        // Connected, and before a byte is sent (the peer's credentials are known once the connection is made): a
        // socket another user listens on (planted at a shared path, or named by HAUL_SOCKET or XDG_RUNTIME_DIR) would
        // be handed every task's URL, headers and cookies.
        if let uid = try? await PeerCredentials.uid(of: channel.channel).get(), uid != PeerCredentials.ownUID {
            try? await channel.channel.close()
            throw HaulError(.usage, "\(socketPath) is another user's socket (uid \(uid)), not your haul daemon; nothing was sent to it: remove it or give --socket a path of your own")
        }
        let connection = DaemonClient(socketPath: socketPath)
        await connection.start(channel)
        do {
            let hello: Hello.Result
            do {
                hello = try await connection.call(Hello.self, Hello.Parameters(client: client))
            } catch is GarbledAnswer {
                throw HaulError(.server, "the haul daemon at \(socketPath) speaks another protocol; restart it with this haul")
            }
            guard hello.protocolVersion == DaemonProtocol.version else {
                throw HaulError(.server, "the haul daemon at \(socketPath) speaks another protocol; restart it with this haul")
            }
            await connection.noteDaemonPID(hello.pid)
        } catch {
            await connection.close()
            throw error
        }
        return connection
    }

    private func noteDaemonPID(_ pid: Int) { daemonPID = pid }

    private func start(_ channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>) {
        self.channel = channel
        let (writerStream, writerContinuation) = AsyncStream.makeStream(of: NIOAsyncChannelOutboundWriter<ByteBuffer>.self)
        Task {
            do {
                try await channel.executeThenClose { inbound, outbound in
                    writerContinuation.yield(outbound)
                    writerContinuation.finish()
                    for try await line in inbound { self.receive(line) }
                }
            } catch {}
            writerContinuation.finish()
            self.ended()
        }
        // The writer is available as soon as executeThenClose runs; calls wait for it.
        Task { for await writer in writerStream { self.attach(writer) } }
    }

    private func attach(_ writer: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
        outbound = writer
        for waiter in writerWaiters { waiter.resume() }
        writerWaiters = []
    }

    private var writerWaiters: [CheckedContinuation<Void, Never>] = []

    /// Calls `method` and returns its result; a JSON-RPC error is thrown as ``RPCError``.
    public func call(_ method: DaemonMethod, _ params: JSONValue = [:]) async throws -> JSONValue {
        if let closedError { throw closedError }
        if outbound == nil { await withCheckedContinuation { writerWaiters.append($0) } }
        guard let outbound else { throw closedError ?? HaulError(.network, "the connection to the haul daemon closed") }
        nextID += 1
        let id = nextID
        let line = JSONRPC.request(id: JSONValue(id), method: method.rawValue, params: params)
        return try await withCheckedThrowingContinuation { continuation in
            pending[id] = continuation
            Task {
                do {
                    try await outbound.write(ByteBuffer(string: line))
                } catch {
                    self.fail(id, HaulError(.network, "could not reach the haul daemon: \(error)"))
                }
            }
        }
    }

    private func fail(_ id: Int64, _ error: any Error) {
        pending.removeValue(forKey: id)?.resume(throwing: error)
    }

    private func receive(_ line: ByteBuffer) {
        switch JSONRPC.decodeIncoming(line.readableBytesView) {
        case .response(let id, let result)?:
            guard let key = id.int64Value, let continuation = pending.removeValue(forKey: key) else { return }
            continuation.resume(with: result.mapError { $0 })
        case .notification(let method, let params)?:
            notify.yield((method, params))
        case nil:
            break
        }
    }

    private func ended() {
        let error = closedError ?? HaulError(.network, "the haul daemon closed the connection; is it still running? (`haul ls` starts one)")
        closedError = error
        for (_, continuation) in pending { continuation.resume(throwing: error) }
        pending = [:]
        for waiter in writerWaiters { waiter.resume() }
        writerWaiters = []
        notify.finish()
    }

    /// Calls a method on the daemon's session `session` (added to `params`); a JSON-RPC error is thrown as
    /// the ``HaulError`` it stands for.
    public func call(_ method: DaemonMethod, session: String, _ params: [String: JSONValue] = [:]) async throws -> JSONValue {
        var params = params
        params["session"] = .string(session)
        do {
            return try await call(method, .object(params))
        } catch let error as RPCError {
            throw error.haulError
        }
    }

    /// Calls `C` on the daemon's session `session`: its parameters are sent with `session`, its result is read back. A
    /// JSON-RPC error, or an answer that is not `C`'s result (``GarbledAnswer``), is thrown as the ``HaulError`` it
    /// stands for.
    public func call<C: DaemonCall>(_ call: C.Type, session: String, _ parameters: C.Parameters) async throws -> C.Result {
        do {
            return try await self.call(C.self, parameters, session: session)
        } catch let error as RPCError {
            throw error.haulError
        } catch let error as GarbledAnswer {
            throw error.haulError
        }
    }

    /// Calls `C` (with `session` beside its parameters when given); a JSON-RPC error is thrown as ``RPCError``, an
    /// answer that is not `C`'s result as ``GarbledAnswer``.
    public func call<C: DaemonCall>(_ call: C.Type, _ parameters: C.Parameters, session: String? = nil) async throws -> C.Result {
        guard case .object(var members) = try JSONValueEncoder.encode(parameters) else {
            preconditionFailure("the parameters of \(C.method.rawValue) are not a JSON object")
        }
        if let session { members["session"] = .string(session) }
        let answer = try await self.call(C.method, .object(members))
        do {
            return try JSONValueDecoder.decode(C.Result.self, from: answer)
        } catch {
            throw GarbledAnswer(method: C.method, why: error.message)
        }
    }

    /// The tasks of the daemon's session `session`, in the order added, fetched a page at a time; with `ids`, those
    /// of them that exist, in the order of `ids`. With `missingSessionIsEmpty`, a session the daemon does not have
    /// lists no tasks instead of failing.
    public func tasks(session: String, ids: [String]? = nil, missingSessionIsEmpty: Bool = false) async throws -> [TaskSnapshot] {
        guard let ids else { return try await tasks(session: session, only: nil, missingSessionIsEmpty: missingSessionIsEmpty) }
        var found: [String: TaskSnapshot] = [:]
        // The ids go in groups that fit a message each.
        for group in DaemonProtocol.chunks(ids, count: DaemonProtocol.maxPageLimit, bytes: DaemonProtocol.addChunkBytes, JSONValue.string) {
            for task in try await tasks(session: session, only: group, missingSessionIsEmpty: missingSessionIsEmpty) { found[task.id] = task }
        }
        var seen: Set<String> = []
        return ids.compactMap { id in seen.insert(id).inserted ? found[id] : nil }
    }

    private func tasks(session: String, only ids: [String]?, missingSessionIsEmpty: Bool) async throws -> [TaskSnapshot] {
        var tasks: [TaskSnapshot] = []
        try await eachPage(session: session, only: ids, missingSessionIsEmpty: missingSessionIsEmpty) { tasks += $0 }
        return tasks
    }

    /// Every task of the session `session`, in the order added, a page at a time: `body` gets each page as it arrives,
    /// so that a session of a million tasks is never held whole (`haul ls --json`). With `missingSessionIsEmpty`, a
    /// session that does not exist has no page.
    public func eachTaskPage(
        session: String, missingSessionIsEmpty: Bool = false, _ body: @Sendable ([TaskSnapshot]) throws -> Void
    ) async throws {
        try await eachPage(session: session, only: nil, missingSessionIsEmpty: missingSessionIsEmpty, body)
    }

    private func eachPage(
        session: String, only ids: [String]?, missingSessionIsEmpty: Bool, _ body: ([TaskSnapshot]) throws -> Void
    ) async throws {
        var parameters = ListTasks.Parameters(ids: ids, limit: Self.pageSize)
        // Bounded: the daemon's cursor moves forward with every page, and a session holds finitely many tasks.
        for _ in 0..<Self.maxPages {
            let page: ListTasks.Result
            do {
                page = try await call(ListTasks.self, parameters, session: session)
            } catch let error as RPCError {
                if error.isNoSuchSession, missingSessionIsEmpty { return }
                throw error.haulError
            } catch is GarbledAnswer {
                throw Self.garbledList
            }
            try body(page.tasks.map(\.value))
            guard let next = page.next else { return }
            guard next != parameters.cursor, !page.tasks.isEmpty else { throw Self.garbledList }
            parameters.cursor = next
        }
        throw HaulError(.server, "the haul daemon's task list did not end after \(Self.maxPages) pages")
    }

    /// Adds tasks to the session `session`, in as many messages as it takes; returns their ids in order (an
    /// existing task's id when it was already there).
    public func add(session: String, _ additions: [AddTasks.Addition]) async throws -> [String] {
        var ids: [String] = []
        let chunks = DaemonProtocol.chunks(
            additions, count: DaemonProtocol.addChunkTasks, bytes: DaemonProtocol.addChunkBytes) { JSONValue.object($0.members) }
        for chunk in chunks {
            let answer: AddTasks.Result
            do {
                answer = try await call(AddTasks.self, AddTasks.Parameters(tasks: chunk, reply: "ids"), session: session)
            } catch let error as RPCError {
                throw error.haulError
            } catch is GarbledAnswer {
                throw Self.garbledAddition
            }
            guard answer.ids.count == chunk.count else { throw Self.garbledAddition }
            ids += answer.ids
        }
        return ids
    }

    /// Tasks asked for per page: well within the line limit for ordinary tasks (the daemon also stops a page
    /// short of the limit).
    static let pageSize = 2_000
    static let maxPages = 1_000_000
    private static let garbledList = HaulError(.server, "the haul daemon sent a task list this haul does not understand; restart the daemon")
    private static let garbledAddition = HaulError(
        .server, "the haul daemon answered an addition in a way this haul does not understand; restart the daemon")

    /// True once the connection has closed.
    public var isClosed: Bool { closedError != nil }

    /// Closes the connection; pending calls fail.
    public func close() async {
        if closedError == nil { closedError = HaulError(.network, "the connection to the haul daemon was closed") }
        try? await channel?.channel.close()
        ended()
    }
}

/// An answer of the daemon that is not what its method returns: the daemon is another version, or broken.
package struct GarbledAnswer: Error, Sendable, CustomStringConvertible {
    /// The method answered.
    public var method: DaemonMethod
    /// What is wrong with the answer.
    public var why: String

    public var description: String {
        "the haul daemon answered \(method.rawValue) in a way this haul does not understand (\(why)); restart the daemon"
    }

    /// The error as a person should read it.
    public var haulError: HaulError { HaulError(.server, description) }
}
