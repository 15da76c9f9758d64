import Foundation
import HaulDaemon
import HaulKit
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The daemon's web dashboard: a thin bridge from a browser (or a script with the API key) onto the daemon's own
/// service, with the daemon owner's rights. Its policy is in HaulCore (``WebAccess``, ``WebLogins``,
/// ``WebEventRing``, ``SegmentMap``); this is the shell: the listener, the logins' state and the event rings.
package final class WebDashboard: WebListener, Sendable {
    let service: DaemonService
    let home: HaulHome
    let logger: Logger
    let configuration: WebConfiguration
    /// Names this daemon run in event cursors: a cursor from another run gets a `reset`.
    let run = String(WebSecrets.token().prefix(12))
    /// The connection the bridge's requests come from, as far as the service is concerned (it never subscribes).
    let outbox = ConnectionOutbox(id: -1, onOverflow: {})
    let state: NIOLockedValueBox<State>
    private let control = ListenerControl()

    typealias Wake = AsyncStream<Void>.Continuation

    struct State {
        var logins = WebLogins()
        var listening = false
        /// The event streams (capped per login and in all) and the sessions' event rings.
        var streams: WebStreams<Wake>
        /// A sweep of the rings left after their last stream is scheduled.
        var sweepScheduled = false
        var segmentThrottle = KeyedThrottle(interval: .milliseconds(500))
        /// About two `progress` events a second per task at most (every other one of a session's 250 ms events, with
        /// room for jitter), whatever the session's progressInterval: the page moves as smoothly, and 50 running
        /// downloads cost the daemon half as many events to send (bench/web-dashboard.sh).
        var progressWindow = KeyedThrottle(interval: .milliseconds(450))
        var connections = 0
    }

    package init(service: DaemonService, home: HaulHome, logger: Logger, configuration: WebConfiguration) {
        self.service = service
        self.home = home
        self.logger = logger
        self.configuration = configuration
        state = NIOLockedValueBox(State(streams: WebStreams(run: run, limits: configuration.streamLimits)))
    }

    /// Attaches the dashboard to the daemon (`web.start` then works); with `listen`, starts listening now.
    package func attach(listen: Bool) async throws {
        await service.attach(web: self) { [weak self] session, event, sequence in
            self?.record(session, event, sequence)
        }
        if listen { _ = try await control.start(self, host: nil, port: nil) }
    }

    // MARK: WebListener

    package func start(host: String?, port: Int?) async throws -> (url: String, login: String) {
        let url = try await control.start(self, host: host, port: port)
        let token = mintLogin()
        // `haul web --open` may write a page holding this token (WebLoginPage): gone once the token has expired.
        Task { [home] in
            try? await Task.sleep(for: WebLogins.tokenLifetime)
            WebLoginPage.remove(token: token, home: home)
        }
        return (url, url + "login?token=" + token)
    }

    /// A fresh one-time login token (the in-process tests, Tests/HaulWebTests, log in with one without a listener).
    func mintLogin() -> String {
        let token = WebSecrets.token()
        state.withLockedValue { $0.logins.mint(token: token, at: .now) }
        return token
    }

    package func openConnections() -> Int { state.withLockedValue { $0.connections } }

    package func stop() async {
        // The streams end first: the listener waits for its connections.
        state.withLockedValue { state in
            state.listening = false
            for wake in state.streams.wakes { wake.finish() }
        }
        await control.stop()
    }
}

/// Starts and stops the listener, one call at a time.
actor ListenerControl {
    private var server: WebHTTPServer?
    private var serving: Task<Void, Never>?

    /// The dashboard's address, listening first if not yet. A listener already running keeps its address: asking
    /// for another one is an error.
    func start(_ dashboard: WebDashboard, host: String?, port: Int?) async throws -> String {
        if let server {
            func plain(_ host: String) -> String {
                let name = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
                return name == "localhost" ? WebListenPolicy.defaultHost : name
            }
            if let host, plain(host) != plain(server.host) || (port != nil && port != server.port) {
                throw HaulError(.usage, "the web dashboard already listens on \(server.url); stop the daemon to move it")
            }
            if host == nil, let port, port != server.port {
                throw HaulError(.usage, "the web dashboard already listens on \(server.url); stop the daemon to move it")
            }
            return server.url
        }
        var configuration = dashboard.configuration
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        if let refusal = configuration.refusal { throw HaulError(.usage, refusal) }
        let server = try await WebHTTPServer.listen(configuration, dashboard: dashboard)
        self.server = server
        dashboard.state.withLockedValue { $0.listening = true }
        serving = Task { await server.run() }
        dashboard.logger.info("web dashboard listening on \(server.url)")
        return server.url
    }

    func stop() async {
        guard let server else { return }
        await server.close()
        // Cancelled too: a stream that is gathering events (WebHTTPServer.gatherEvents) ends now, not after its pause,
        // so that the daemon still stops within its two seconds of SIGTERM.
        serving?.cancel()
        await serving?.value
        self.server = nil
        serving = nil
    }
}
