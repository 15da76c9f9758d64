import Foundation
import HaulKit
import PostgresNIO

/// Who waits for the fleet's doorbell: each session store's rings, and the daemon's (which session changed).
struct Bells {
    var sessions: [String: [UUID: AsyncStream<Void>.Continuation]] = [:]
    var catalog: [UUID: AsyncStream<FleetSignal>.Continuation] = [:]
    var listening = false
    var listener: Task<Void, Never>?
    var heartbeat: Task<Void, Never>?
    var closed = false
}

// The doorbell: one connection per daemon listens on `haul_fleet`; every write of the store notifies it (delivered at
// commit). A broken connection is made again, with a growing pause; meanwhile, and until it is back, the sessions poll
// (``SharedSessionStore/isListening``), and when it is back every session is rung once to catch up.
extension PostgresFleet {
    /// Whether the doorbell is heard now.
    package var isListening: Bool { bells.withLockedValue { $0.listening } }

    /// Starts listening (once; until ``close()``).
    package func startListening() {
        bells.withLockedValue { bells in
            guard bells.listener == nil, !bells.closed else { return }
            bells.listener = Task { [self] in await listen() }
        }
    }

    func stopListening() async {
        let (listener, sessions, catalog, heartbeat) = bells.withLockedValue { bells in
            bells.closed = true
            defer {
                bells.listener = nil
                bells.heartbeat = nil
                bells.sessions = [:]
                bells.catalog = [:]
            }
            return (bells.listener, bells.sessions.values.flatMap(\.values), Array(bells.catalog.values), bells.heartbeat)
        }
        heartbeat?.cancel()
        listener?.cancel()
        await listener?.value
        for continuation in sessions { continuation.finish() }
        for continuation in catalog { continuation.finish() }
    }

    /// Rings when session `name` changed anywhere in the fleet.
    func doorbell(session name: String) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let key = UUID()
        let closed = bells.withLockedValue { bells in
            if !bells.closed { bells.sessions[name, default: [:]][key] = continuation }
            return bells.closed
        }
        if closed { continuation.finish() }
        continuation.onTermination = { [weak self] _ in
            self?.bells.withLockedValue { bells in
                bells.sessions[name]?[key] = nil
                if bells.sessions[name]?.isEmpty == true { bells.sessions[name] = nil }
            }
        }
        return stream
    }

    /// Which session changed, anywhere in the fleet: its tasks or its settings.
    package func signals() -> AsyncStream<FleetSignal> {
        let (stream, continuation) = AsyncStream.makeStream(of: FleetSignal.self, bufferingPolicy: .bufferingNewest(256))
        let key = UUID()
        let closed = bells.withLockedValue { bells in
            if !bells.closed { bells.catalog[key] = continuation }
            return bells.closed
        }
        if closed { continuation.finish() }
        continuation.onTermination = { [weak self] _ in self?.bells.withLockedValue { _ = $0.catalog.removeValue(forKey: key) } }
        return stream
    }

    /// Listens until cancelled, making the connection again after each break.
    private func listen() async {
        var pause = Duration.milliseconds(250)
        while !Task.isCancelled {
            var listening: PostgresConnection?
            do {
                let connection = try await link.dedicatedConnection()
                listening = connection
                try await withTaskCancellationHandler {
                    try await connection.listen(on: PostgresSessionStore.channel) { notifications in
                        setListening(true)
                        pause = .milliseconds(250)
                        ringEverything()
                        for try await notification in notifications { deliver(notification.payload) }
                    }
                } onCancel: {
                    PostgresLink.closeQuietly(connection)
                }
            } catch {
                if !Task.isCancelled { logger.debug("the fleet's notifications stopped: \(PostgresLink.describe(error))") }
            }
            if let listening { try? await listening.close() }
            setListening(false)
            ringEverything()
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .seconds(5))
        }
    }

    private func setListening(_ listening: Bool) {
        bells.withLockedValue { $0.listening = listening }
    }

    /// `t:SESSION` (its tasks changed), `w:SESSION` (and one may be waiting now) or `s:SESSION` (its settings).
    private func deliver(_ payload: String) {
        guard payload.count > 2, let colon = payload.firstIndex(of: ":") else { return }
        let kind = payload[..<colon]
        let name = String(payload[payload.index(after: colon)...])
        let signal: FleetSignal
        switch kind {
        case "t": signal = .tasks(name, waiting: false)
        case "w": signal = .tasks(name, waiting: true)
        case "s": signal = .settings(name)
        default: return
        }
        let (sessions, catalog) = bells.withLockedValue { bells in
            (kind == "s" ? [] : Array((bells.sessions[name] ?? [:]).values), Array(bells.catalog.values))
        }
        for continuation in sessions { continuation.yield() }
        for continuation in catalog { continuation.yield(signal) }
    }

    /// Rings every session: the notifications were missed or are heard again; each catches up by reading.
    private func ringEverything() {
        let (sessions, catalog) = bells.withLockedValue { bells in (bells.sessions.values.flatMap(\.values), Array(bells.catalog.values)) }
        for continuation in sessions { continuation.yield() }
        for continuation in catalog { continuation.yield(.everything) }
    }
}
