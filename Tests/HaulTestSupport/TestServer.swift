import NIOCore
import NIOHTTP1
import NIOPosix

/// An in-process HTTP/1.1 server on 127.0.0.1 with per-path routes and fault injection.
///
/// ```swift
/// let server = try await TestServer.start()
/// defer { Task { try await server.shutdown() } }
/// server.serve("/file.bin", Resource(body: TestData.bytes(1 << 20), etag: "\"v1\""))
/// let url = server.url("/file.bin")
/// ```
public final class TestServer: Sendable {
    private let core: ServerCore
    private let channel: any Channel
    /// The TCP port the server listens on (127.0.0.1 only).
    public let port: Int

    private init(core: ServerCore, channel: any Channel, port: Int) {
        self.core = core
        self.channel = channel
        self.port = port
    }

    /// Binds 127.0.0.1 on an ephemeral port using `MultiThreadedEventLoopGroup.singleton`.
    public static func start() async throws -> TestServer {
        let core = ServerCore()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
                    try sync.addHandler(ConnectionHandler(core: core))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw TestServerError.noLocalAddress
        }
        return TestServer(core: core, channel: channel, port: port)
    }

    /// `"http://127.0.0.1:<port><path>"`; `path` should start with "/".
    public func url(_ path: String) -> String {
        "http://127.0.0.1:\(port)\(path)"
    }

    /// The `host:port` authority, e.g. for Host-header assertions.
    public var authority: String { "127.0.0.1:\(port)" }

    /// Registers (or replaces) the handler for an exact path (query string ignored when matching).
    /// The handler runs on an event loop: it must not block.
    public func route(_ path: String, _ handler: @escaping @Sendable (RecordedRequest) -> ResponsePlan) {
        core.setRoute(path, handler)
    }

    /// Serves `resource` at `path` with RFC 9110 Range/If-Range semantics and its `faults`.
    /// Calling it again replaces the resource; per-path request indices keep counting.
    public func serve(_ path: String, _ resource: Resource) {
        core.setRoute(path) { request in
            RangeResponder.plan(for: resource, request: request)
        }
    }

    /// Every request received for `path` (query ignored), in order, including faulted ones.
    public func requests(_ path: String) -> [RecordedRequest] {
        core.requests(RecordedRequest.stripQuery(path))
    }

    /// Every request received, in order.
    public func allRequests() -> [RecordedRequest] {
        core.allRequests()
    }

    /// Stops listening and closes every open connection (including stalled ones).
    /// Safe to call more than once. Does not shut down the shared event loop group.
    public func shutdown() async throws {
        do {
            try await channel.close()
        } catch ChannelError.alreadyClosed {
            // already shut down
        }
        let open = core.beginShutdown()
        for connection in open {
            do {
                try await connection.close()
            } catch ChannelError.alreadyClosed {
                // closed concurrently by the peer
            }
        }
    }
}

public enum TestServerError: Error, Sendable {
    case noLocalAddress
}

extension Resource {
    /// The response `serve` would give to `request` (Range, If-Range and faults applied), for routes that
    /// adjust it per request, e.g. throttling or falsifying only one segment's answer.
    public func response(to request: RecordedRequest) -> ResponsePlan {
        RangeResponder.plan(for: self, request: request)
    }
}
