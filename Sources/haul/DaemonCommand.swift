import ArgumentParser
import Foundation
import HaulDaemon
import HaulFleet
import HaulKit
import HaulWeb
import Logging
import NIOConcurrencyHelpers

struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run the haul daemon in the foreground: it does the downloads of `haul add` and of background sessions.",
        discussion: """
            Logs go to stderr. SIGTERM or Ctrl-C saves every download's progress and exits; the next daemon resumes them. \
            Exit 8: another daemon is already running on the socket. --web serves the web dashboard (`haul web` \
            prints its login link) on loopback; another address needs --web-allow-remote, --web-cert and --web-key.

            """ + HelpText.examples(
                "haul daemon                                 # until Ctrl-C or SIGTERM",
                "haul daemon --socket \"$XDG_RUNTIME_DIR/haul-test.sock\" --verbose",
                "haul daemon --web 7711                      # and the web dashboard",
                "haul daemon --store postgres://haul@db/haul --node n1  # docs/fleet.md",
                "haul daemon stop",
                "systemctl --user enable --now haul-daemon   # contrib/haul-daemon.service"
            ),
        subcommands: [DaemonStopCommand.self]
    )

    @Option(help: "The control socket (default: $HAUL_SOCKET, else $XDG_RUNTIME_DIR/haul/daemon.sock, else $HAUL_HOME/run/daemon.sock).")
    var socket: String?

    @Flag(name: .shortAndLong, help: "Log every connection and request.")
    var verbose = false

    @Option(name: .customLong("max-sessions"), parsing: .unconditional, help: "Sessions open at once (idle ones are closed to make room).")
    var maxSessions = DaemonLimits().maxOpenSessions

    @Option(name: .customLong("session-idle-timeout"), parsing: .unconditional, help: "Seconds before a session with nothing to do and no client is closed.")
    var sessionIdleTimeout = Seconds(DaemonLimits().sessionIdleTimeout.seconds)

    @Option(name: .customLong("partial-line-timeout"), parsing: .unconditional, help: "Seconds a client may leave a message unfinished before it is disconnected.")
    var partialLineTimeout = Seconds(DaemonLimits().partialLineTimeout.seconds)

    @Option(name: .customLong("idle-exit"), parsing: .unconditional, help: "Exit after this many seconds with no task running or waiting and no client (default 0: never; a daemon haul starts by itself uses 600).")
    var idleExit = Seconds(0)

    @Option(name: .customLong("web"), help: "Serve the web dashboard on [HOST:]PORT (default host 127.0.0.1; `haul web` prints the login link).")
    var web: ListenAddress?

    @Option(name: .customLong("web-cert"), help: "A PEM certificate (chain): the dashboard speaks HTTPS.")
    var webCert: String?

    @Option(name: .customLong("web-key"), help: "The PEM private key of --web-cert.")
    var webKey: String?

    @Flag(name: .customLong("web-allow-remote"), help: "Allow the dashboard on a non-loopback address (needs --web-cert and --web-key).")
    var webAllowRemote = false

    @Option(name: .customLong("web-allow-host"), help: "Also accept this name in the Host header (repeatable), e.g. the name of a reverse proxy.")
    var webAllowHost: [String] = []

    @Flag(name: .customLong("web-allow-commands"), help: "Let the dashboard's login and API key set completion commands, which run as this user (off by default: they are code execution).")
    var webAllowCommands = false

    @Option(name: .customLong("store"), help: ArgumentHelp(
        "Keep the sessions in this PostgreSQL database, shared with every daemon given the same store (a fleet) (default: $HAUL_STORE, else SQLite under HAUL_HOME).",
        discussion: "postgres://USER@HOST:PORT/DATABASE; the password comes from the URL, PGPASSWORD or ~/.pgpass and is never printed.",
        valueName: "url"))
    var store: String?

    @Option(name: .customLong("node"), help: "This daemon's name in the fleet (default: the host name).")
    var node: String?

    @Option(name: .customLong("lease"), parsing: .unconditional, help: "Seconds a fleet node's claim holds a task unless renewed (default 30): how soon another node takes over the tasks of one that died.")
    var lease = Seconds(30)

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// The web dashboard's settings; the error is the one line saying why they cannot be used.
    func webConfiguration() throws(InputError) -> WebConfiguration {
        var configuration = WebConfiguration()
        if let web {
            configuration.host = web.host
            configuration.port = web.port
        }
        configuration.certificatePath = webCert.map { Self.absolute($0) }
        configuration.keyPath = webKey.map { Self.absolute($0) }
        configuration.allowRemote = webAllowRemote
        for name in webAllowHost {
            guard WebAccess.parseHost(name) != nil else { throw InputError("--web-allow-host \(name) is not a host name") }
        }
        configuration.allowedHosts = webAllowHost
        configuration.allowCommands = webAllowCommands
        if let refusal = configuration.refusal { throw InputError(refusal) }
        return configuration
    }

    /// The ranges, the node's name and the dashboard's flags, before anything starts.
    func validate() throws {
        _ = try webConfiguration()
        guard maxSessions >= 1, maxSessions <= 10_000 else { throw InputError("--max-sessions must be between 1 and 10000") }
        for (name, seconds) in [("--session-idle-timeout", sessionIdleTimeout), ("--partial-line-timeout", partialLineTimeout)] {
            guard seconds.value > 0, seconds.value <= 86_400 else { throw InputError("\(name) must be between 0 and 86400 seconds") }
        }
        guard idleExit.value >= 0, idleExit.value <= 31_536_000 else {
            throw InputError("--idle-exit must be between 0 (never) and 31536000 seconds")
        }
        guard lease.value >= 3, lease.value <= 3_600 else { throw InputError("--lease must be between 3 and 3600 seconds") }
        if let node {
            do { try PostgresFleet.validate(node: node) } catch { throw InputError("--node: \(error.message)") }
        }
    }

    /// The limits the options ask for.
    var limits: DaemonLimits {
        var limits = DaemonLimits()
        limits.maxOpenSessions = maxSessions
        limits.sessionIdleTimeout = sessionIdleTimeout.duration
        limits.partialLineTimeout = partialLineTimeout.duration
        limits.idleExit = idleExit.duration
        return limits
    }

    func run() async throws {
        var logger = Logger(label: "haul.daemon", factory: { LineLogHandler(.daemon(label: $0), level: .info) })
        logger.logLevel = verbose ? .debug : .info
        let environment = ProcessInfo.processInfo.environment
        let home = HaulHome(environment: environment)
        let location = DaemonLocation(explicit: socket, environment: environment, home: home)
        // Checked by validate().
        let webConfiguration = try self.webConfiguration()
        // Signals are handled from the start: one that arrives while the daemon is still starting stops it
        // as soon as it has started.
        typealias Stopping = (requested: Bool, server: DaemonServer?, task: Task<Void, Never>?)
        let stopping = NIOLockedValueBox<Stopping>((false, nil, nil))
        /// Starts the shutdown once it is both asked for and possible.
        @Sendable func stopIfAsked(_ state: inout Stopping) {
            if state.requested, let server = state.server, state.task == nil { state.task = Task { await server.shutdown() } }
        }
        let signals = SignalForwarder(signals: [SIGINT, SIGTERM]) {
            stopping.withLockedValue { state in
                state.requested = true
                stopIfAsked(&state)
            }
        }
        let catalog: (any SessionCatalog)?
        do {
            catalog = try await openFleet(environment: environment, home: home, logger: logger)
        } catch {
            signals.stop()
            throw error
        }
        let server: DaemonServer
        do {
            server = try await DaemonServer(location: location, home: home, logger: logger, limits: limits, catalog: catalog)
        } catch let error as HaulError {
            await catalog?.close()
            signals.stop()
            Reporter.printError("haul daemon: error: \(error.line)")
            throw ExitCode(ExitStatus.code(for: error.kind))
        }
        let dashboard = WebDashboard(service: server.service, home: home, logger: logger, configuration: webConfiguration)
        do {
            try await dashboard.attach(listen: web != nil)
        } catch {
            Reporter.printError("haul daemon: error: \((error as? HaulError)?.line ?? "\(error)")")
            await server.shutdown()
            signals.stop()
            throw ExitCode(ExitStatus.usage)
        }
        stopping.withLockedValue { state in
            state.server = server
            stopIfAsked(&state)
        }
        defer { signals.stop() }
        do {
            try await server.run()
        } catch {
            logger.error("the daemon's socket failed: \(error)")
        }
        if let shutdown = stopping.withLockedValue({ $0.task }) {
            await shutdown.value
        } else {
            await server.shutdown()
        }
    }

    /// The fleet's sessions when a store is given (`--store`, else `HAUL_STORE`): connected, this node registered and
    /// listening for the others' changes. `nil`: sessions stay in SQLite under HAUL_HOME.
    private func openFleet(environment: [String: String], home: HaulHome, logger: Logger) async throws -> (any SessionCatalog)? {
        guard let url = store ?? environment["HAUL_STORE"].flatMap({ $0.isEmpty ? nil : $0 }) else {
            if node != nil {
                Reporter.printError("haul daemon: error: --node names a daemon of a fleet; give the fleet's store with --store too")
                throw ExitCode(ExitStatus.usage)
            }
            return nil
        }
        let address: PostgresAddress
        do {
            address = try PostgresAddress.parse(url)
        } catch {
            Reporter.printError("haul daemon: error: --store: \(error.message)")
            throw ExitCode(ExitStatus.usage)
        }
        let name = node ?? Self.defaultNodeName()
        do {
            let fleet = try await PostgresFleet.open(
                address, node: name, leaseTerms: LeaseTerms(duration: lease.duration), environment: environment,
                logger: logger)
            do {
                try await fleet.register(home: home.path)
            } catch {
                await fleet.close()
                throw error
            }
            fleet.startListening()
            logger.info("node \(name) of the fleet whose store is \(address.redacted)")
            return PostgresCatalog(fleet: fleet)
        } catch let error as SessionStoreError {
            Reporter.printError("haul daemon: error: \(error.haulError.line)")
            throw ExitCode(ExitStatus.code(for: error.haulError.kind))
        } catch let error as HaulError {
            Reporter.printError("haul daemon: error: \(error.line)")
            throw ExitCode(ExitStatus.code(for: error.kind))
        }
    }

    /// The host name, made a valid node name.
    static func defaultNodeName() -> String {
        let host = ProcessInfo.processInfo.hostName.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "-" }
        let name = String(String(host).prefix(64))
        return name.isEmpty ? "node" : name
    }
}
