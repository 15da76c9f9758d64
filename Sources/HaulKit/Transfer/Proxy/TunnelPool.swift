import HaulCore
import NIOConcurrencyHelpers
import NIOCore

/// The HTTP/2 connections an engine keeps open through proxies' tunnels, so that downloads from one host through one
/// proxy become streams of one connection (one `CONNECT`, one TLS handshake) instead of a tunnel each.
///
/// A connection serves requests with the same ``Key``: the same proxy (and the same proxy credentials), host, port,
/// TLS trust and address family. It takes as many streams at once as the server allows
/// (`SETTINGS_MAX_CONCURRENT_STREAMS`); past that a request opens another connection, up to `maxConnections` per key,
/// and past those waits for a stream to end. While one request opens a key's first connection, the others for that
/// key wait for it rather than each opening a tunnel of its own; once a server is found to choose HTTP/1.1, requests
/// for its key stop waiting (each has a tunnel of its own, as before). A connection that closes or receives GOAWAY
/// leaves the pool; one without a stream for ``idleTimeout`` is closed (as AsyncHTTPClient's pool does after 60 s);
/// ``shutdown()`` closes them all.
///
/// It keeps HTTP/1.1 tunnels too: one whose response ended cleanly, and whose server did not ask to close it, waits
/// (``park(_:_:)``, at most `maxConnections` per key, for ``idleTimeout``) for the next HTTP/1.1 request of its key
/// (``takeIdle(_:)``), which is then sent without a new `CONNECT` and TLS handshake.
final class TunnelPool: Sendable {
    /// What a connection may be shared by.
    struct Key: Hashable, Sendable {
        /// The proxy, with its user and password: requests with other credentials never share its tunnel.
        var proxy: ProxyEndpoint
        var socks: Bool
        /// TLS to the server inside the tunnel (`https`; `--proxytunnel` tunnels plain http too).
        var tls = true
        var host: String
        var port: Int
        var trust: TLSTrust
        var family: IPFamily?
    }

    /// What a request is to do.
    enum Grant: Sendable {
        /// Open a stream on this connection (a slot is held for it: call ``streamEnded(_:on:)`` when it is over).
        case stream(TunnelledHTTP2Connection)
        /// Open a tunnel of its own; `shared`: the others for the key wait for it (call ``established(_:_:)`` or
        /// ``establishmentEnded(_:shared:serverChoseHTTP1:)`` once it is known).
        case establish(shared: Bool)
    }

    private struct Held {
        var connection: TunnelledHTTP2Connection
        var openStreams: Int
        /// Streams granted so far: an idle timer finding the same count finds the connection unused since.
        var uses = 1
    }

    /// How long a pooled connection without a stream stays open.
    static let idleTimeout: TimeAmount = .seconds(60)

    private struct Entry {
        var connections: [ObjectIdentifier: Held] = [:]
        var establishing = false
        var serverChoseHTTP1 = false
    }

    private struct Waiter {
        var key: Key
        var continuation: CheckedContinuation<Grant?, any Error>
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var waiters: [Int: Waiter] = [:]
        var cancelled: Set<Int> = []
        var nextWaiter = 0
        var isShutDown = false
        /// Every connection not yet closed, pooled or not: ``shutdown()`` closes them.
        var open: [ObjectIdentifier: TunnelledHTTP2Connection] = [:]
        /// Idle HTTP/1.1 tunnels, the last parked last.
        var idle: [Key: [Parked]] = [:]
        var parkings = 0
    }

    private struct Parked {
        var channel: any Channel
        /// Which parking this is: an idle timer closes the tunnel only if it was not taken since.
        var serial: Int
    }

    private let state = NIOLockedValueBox(State())
    private let maxConnections: Int

    init(maxConnectionsPerKey: Int) {
        maxConnections = max(1, maxConnectionsPerKey)
    }

    /// A stream on a pooled connection, or the go-ahead to open a tunnel; waits while another request opens the
    /// key's connection or every connection is full. Cancellation ends the wait.
    func acquire(_ key: Key) async throws -> Grant {
        while true {
            try Task.checkCancellation()
            let id = state.withLockedValue { state in
                defer { state.nextWaiter += 1 }
                return state.nextWaiter
            }
            let grant = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Grant?, any Error>) in
                    let decided = state.withLockedValue { state -> Result<Grant?, any Error>? in
                        if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                        if let grant = Self.decide(key, in: &state, maxConnections: maxConnections) { return .success(grant) }
                        state.waiters[id] = Waiter(key: key, continuation: continuation)
                        return nil
                    }
                    if let decided { continuation.resume(with: decided) }
                }
            } onCancel: {
                let waiter = state.withLockedValue { state -> Waiter? in
                    guard let waiter = state.waiters.removeValue(forKey: id) else {
                        state.cancelled.insert(id)
                        return nil
                    }
                    return waiter
                }
                waiter?.continuation.resume(throwing: CancellationError())
            }
            state.withLockedValue { _ = $0.cancelled.remove(id) }
            if let grant { return grant }
        }
    }

    /// What a request for `key` may do now; `nil`: wait.
    private static func decide(_ key: Key, in state: inout State, maxConnections: Int) -> Grant? {
        if state.isShutDown { return .establish(shared: false) }
        var entry = state.entries[key] ?? Entry()
        defer { state.entries[key] = entry }
        // The busiest connection with room left: the others may go idle (and be closed by the server).
        let usable = entry.connections.filter { !$0.value.connection.isGoingAway && $0.value.openStreams < $0.value.connection.maxStreams }
        if let busiest = usable.max(by: { $0.value.openStreams < $1.value.openStreams }) {
            entry.connections[busiest.key]?.openStreams += 1
            entry.connections[busiest.key]?.uses += 1
            return .stream(busiest.value.connection)
        }
        if entry.serverChoseHTTP1 { return .establish(shared: false) }
        if entry.establishing { return nil }
        if entry.connections.filter({ !$0.value.connection.isGoingAway }).count >= maxConnections { return nil }
        entry.establishing = true
        return .establish(shared: true)
    }

    /// The tunnel opened for `key` carries HTTP/2: pooled, with one stream held for the request that opened it.
    func established(_ key: Key, _ connection: TunnelledHTTP2Connection) {
        let id = ObjectIdentifier(connection)
        let waiters = state.withLockedValue { state -> [Waiter] in
            state.open[id] = connection
            guard !state.isShutDown else { return [] }
            var entry = state.entries[key] ?? Entry()
            entry.connections[id] = Held(connection: connection, openStreams: 1)
            entry.establishing = false
            entry.serverChoseHTTP1 = false
            state.entries[key] = entry
            return Self.takeWaiters(for: key, from: &state)
        }
        connection.channel.closeFuture.whenComplete { [self] _ in removed(key, connection) }
        if state.withLockedValue({ $0.isShutDown }) { connection.close() }
        waiters.forEach { $0.continuation.resume(returning: nil) }
    }

    /// The tunnel opened for `key` failed, or its server chose HTTP/1.1 (then the key's requests stop waiting).
    func establishmentEnded(_ key: Key, shared: Bool, serverChoseHTTP1: Bool) {
        let waiters = state.withLockedValue { state -> [Waiter] in
            var entry = state.entries[key] ?? Entry()
            if shared { entry.establishing = false }
            if serverChoseHTTP1 { entry.serverChoseHTTP1 = true }
            state.entries[key] = entry
            return Self.takeWaiters(for: key, from: &state)
        }
        waiters.forEach { $0.continuation.resume(returning: nil) }
    }

    /// A stream on `connection` is over: its slot is free.
    func streamEnded(_ key: Key, on connection: TunnelledHTTP2Connection) {
        let id = ObjectIdentifier(connection)
        let (waiters, idleSinceUse) = state.withLockedValue { state -> ([Waiter], Int?) in
            guard let held = state.entries[key]?.connections[id] else { return ([], nil) }
            let open = max(0, held.openStreams - 1)
            state.entries[key]?.connections[id]?.openStreams = open
            return (Self.takeWaiters(for: key, from: &state), open == 0 ? held.uses : nil)
        }
        waiters.forEach { $0.continuation.resume(returning: nil) }
        if let idleSinceUse {
            connection.channel.eventLoop.scheduleTask(in: Self.idleTimeout) { [self] in
                closeIfUnused(key, connection, since: idleSinceUse)
            }
        }
    }

    /// Closes `connection` if no stream was granted on it since its `uses`-th.
    private func closeIfUnused(_ key: Key, _ connection: TunnelledHTTP2Connection, since uses: Int) {
        let unused = state.withLockedValue { state -> Bool in
            guard let held = state.entries[key]?.connections[ObjectIdentifier(connection)] else { return false }
            guard held.openStreams == 0, held.uses == uses else { return false }
            // Out of the pool first: no request is granted a stream on a connection being closed.
            state.entries[key]?.connections.removeValue(forKey: ObjectIdentifier(connection))
            return true
        }
        if unused { connection.close() }
    }

    /// The server's limits changed (SETTINGS) or it sent GOAWAY: a connection going away leaves the pool.
    func changed(_ key: Key, _ connection: TunnelledHTTP2Connection) {
        let waiters = state.withLockedValue { state -> [Waiter] in
            if connection.isGoingAway { state.entries[key]?.connections.removeValue(forKey: ObjectIdentifier(connection)) }
            return Self.takeWaiters(for: key, from: &state)
        }
        waiters.forEach { $0.continuation.resume(returning: nil) }
    }

    private func removed(_ key: Key, _ connection: TunnelledHTTP2Connection) {
        let id = ObjectIdentifier(connection)
        let waiters = state.withLockedValue { state -> [Waiter] in
            state.open.removeValue(forKey: id)
            state.entries[key]?.connections.removeValue(forKey: id)
            if state.entries[key].map({ $0.connections.isEmpty && !$0.establishing && !$0.serverChoseHTTP1 }) == true {
                state.entries.removeValue(forKey: key)
            }
            return Self.takeWaiters(for: key, from: &state)
        }
        waiters.forEach { $0.continuation.resume(returning: nil) }
    }

    private static func takeWaiters(for key: Key, from state: inout State) -> [Waiter] {
        let ids = state.waiters.filter { $0.value.key == key }.map(\.key)
        return ids.compactMap { state.waiters.removeValue(forKey: $0) }
    }

    /// Closes every connection; from now on nothing is pooled.
    func shutdown() {
        let (connections, idle, waiters) = state.withLockedValue { state in
            state.isShutDown = true
            state.entries = [:]
            defer {
                state.waiters = [:]
                state.idle = [:]
            }
            return (Array(state.open.values), state.idle.values.flatMap { $0.map(\.channel) }, Array(state.waiters.values))
        }
        connections.forEach { $0.close() }
        idle.forEach { $0.close(promise: nil) }
        waiters.forEach { $0.continuation.resume(returning: nil) }
    }

    // MARK: Idle HTTP/1.1 tunnels

    /// An idle HTTP/1.1 tunnel for `key` (the one parked last), if any is still open.
    func takeIdle(_ key: Key) -> (any Channel)? {
        state.withLockedValue { state in
            while let parked = state.idle[key]?.popLast() {
                if state.idle[key]?.isEmpty == true { state.idle.removeValue(forKey: key) }
                if parked.channel.isActive { return parked.channel }
            }
            return nil
        }
    }

    /// Keeps `channel` (an HTTP/1.1 tunnel whose response ended cleanly) for the next request of `key`; closes it
    /// when the pool is shut down or already holds `maxConnections` idle ones for the key.
    func park(_ key: Key, _ channel: any Channel) {
        let serial = state.withLockedValue { state -> Int? in
            guard !state.isShutDown, channel.isActive, state.idle[key, default: []].count < maxConnections else { return nil }
            state.parkings += 1
            state.idle[key, default: []].append(Parked(channel: channel, serial: state.parkings))
            return state.parkings
        }
        guard let serial else {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { [self] _ in _ = unpark(key, serial: serial) }
        channel.eventLoop.scheduleTask(in: Self.idleTimeout) { [self] in
            if unpark(key, serial: serial) { channel.close(promise: nil) }
        }
    }

    /// Takes the parking `serial` of `key` out, if it is still idle.
    private func unpark(_ key: Key, serial: Int) -> Bool {
        state.withLockedValue { state in
            guard let index = state.idle[key]?.firstIndex(where: { $0.serial == serial }) else { return false }
            state.idle[key]?.remove(at: index)
            if state.idle[key]?.isEmpty == true { state.idle.removeValue(forKey: key) }
            return true
        }
    }

    /// How many HTTP/1.1 tunnels wait idle.
    var idleTunnels: Int { state.withLockedValue { $0.idle.values.reduce(0) { $0 + $1.count } } }

    /// How many connections are open (pooled or finishing their streams after GOAWAY).
    var openConnections: Int { state.withLockedValue { $0.open.count } }
}
