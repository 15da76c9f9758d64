import HaulKit
import Foundation

/// The web dashboard as the daemon sees it: something that can start listening and mint a login link. HaulWeb
/// implements it; the daemon only forwards `web.start` (Unix socket only) and shuts it down with itself.
package protocol WebListener: Sendable {
    /// Starts listening if not yet (on `host`/`port`, or the configured ones) and mints a fresh one-time login
    /// token: the dashboard's address and its login link.
    func start(host: String?, port: Int?) async throws -> (url: String, login: String)
    /// Stops listening and closes every connection.
    func stop() async
    /// Browser or script connections open now: while there are any, the daemon is not idle.
    func openConnections() -> Int
}

// The methods the web dashboard added to the protocol: `web.start`, `session.configuration` (and `tasks.segments`,
// DaemonService+Tasks.swift).
extension DaemonService {
    /// Attaches the web dashboard (`web.start` starts it) and the tap its event stream reads every event from.
    package func attach(web: any WebListener, eventTap: @escaping @Sendable (String, SessionEvent, Int64?) -> Void) {
        self.web = web
        self.eventTap = eventTap
    }

    /// Every session that exists: open ones and those with a saved configuration, sorted.
    package func knownSessions() async -> [String] {
        var names = Set(sessions.keys)
        for name in await catalog.sessionNames() where (try? SessionFolder.validate(identifier: name)) != nil { names.insert(name) }
        return names.sorted()
    }

    /// `web.start`: `host` and `port` optional.
    func startWeb(_ parameters: StartWeb.Parameters) async throws -> StartWeb.Result {
        guard let web else { throw HaulError(.usage, "this haul daemon has no web dashboard; update haul and restart the daemon") }
        if let port = parameters.port, !(1...65_535).contains(port) { throw RPCError.invalidParams("\"port\" must be between 1 and 65535") }
        let (url, login) = try await web.start(host: parameters.host, port: parameters.port)
        return StartWeb.Result(url: url, login: login)
    }

    /// `session.configuration`: the saved configuration, with the values of default headers hidden (they may be
    /// credentials), and `store`, the path of the session's task store.
    func configuration(of name: String) async throws -> SessionSettings.Result {
        let session = try await session(name)
        guard var object = configurations[name].map({ DaemonProtocol.encode($0) })?.objectValue else { throw RPCError.noSuchSession(name) }
        if case .array(let headers)? = object["defaultHeaders"] {
            object["defaultHeaders"] = .array(headers.map { header in
                guard var fields = header.objectValue else { return header }
                fields["value"] = "***"
                return .object(fields)
            })
        }
        // Not a setting: where the session's tasks are kept, for `haul session show`.
        // The session's own store says where it is (a SQLite file, or a fleet's PostgreSQL database without its password).
        object["store"] = .string(session.store.location)
        return object
    }

    /// A segment map on the wire: `{"id", "total", "done": [[start, end]], "active": [[start, end]]}`.
    package static func encode(_ map: SegmentMap, id: String) -> JSONValue {
        (try? JSONValueEncoder.encode(TaskSegments.Result(map, id: id))) ?? .null
    }
}
