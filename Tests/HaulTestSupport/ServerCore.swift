import NIOConcurrencyHelpers
import NIOCore

/// Shared, lock-protected state of one `TestServer`: routes, request log, open connections.
final class ServerCore: Sendable {
    typealias Handler = @Sendable (RecordedRequest) -> ResponsePlan

    private struct State {
        var routes: [String: Handler] = [:]
        var requests: [RecordedRequest] = []
        var countsByPath: [String: Int] = [:]
        var connections: [ObjectIdentifier: any Channel] = [:]
        var shuttingDown = false
    }

    private let state = NIOLockedValueBox(State())

    func setRoute(_ path: String, _ handler: @escaping Handler) {
        state.withLockedValue { $0.routes[path] = handler }
    }

    /// Logs a request, assigning its per-path index. Returns the stored record's id and the handler to use.
    func record(method: String, uri: String, headers: [(String, String)], body: [UInt8])
        -> (id: Int, request: RecordedRequest, handler: Handler?)
    {
        state.withLockedValue { state in
            var request = RecordedRequest(method: method, uri: uri, headers: headers, body: body)
            request.index = state.countsByPath[request.path, default: 0]
            state.countsByPath[request.path] = request.index + 1
            state.requests.append(request)
            return (state.requests.count - 1, request, state.routes[request.path])
        }
    }

    func addBytesSent(_ count: Int, toRecord id: Int) {
        state.withLockedValue { $0.requests[id].bytesSent += count }
    }

    func requests(_ path: String) -> [RecordedRequest] {
        state.withLockedValue { $0.requests.filter { $0.path == path } }
    }

    func allRequests() -> [RecordedRequest] {
        state.withLockedValue { $0.requests }
    }

    /// Returns false if the server is shutting down (the caller should close the channel).
    func connectionOpened(_ channel: any Channel) -> Bool {
        state.withLockedValue { state in
            guard !state.shuttingDown else { return false }
            state.connections[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    func connectionClosed(_ channel: any Channel) {
        _ = state.withLockedValue { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Marks the server as shutting down and returns the connections still open.
    func beginShutdown() -> [any Channel] {
        state.withLockedValue { state in
            state.shuttingDown = true
            return Array(state.connections.values)
        }
    }
}
