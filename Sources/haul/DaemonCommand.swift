import ArgumentParser
import Foundation
import HaulKit
import Logging
import NIOConcurrencyHelpers

struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run the haul daemon in the foreground: it does the downloads of `haul add` and of background sessions.",
        discussion: "Logs go to stderr. SIGTERM or Ctrl-C saves every download's progress and exits; the next daemon resumes them."
    )

    @Option(help: "The control socket (default: $HAUL_SOCKET, else $XDG_RUNTIME_DIR/haul/daemon.sock, else $HAUL_HOME/run/daemon.sock).")
    var socket: String?

    @Flag(name: .shortAndLong, help: "Log every connection and request.")
    var verbose = false

    func run() async throws {
        var logger = Logger(label: "haul.daemon", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .debug : .info
        let environment = ProcessInfo.processInfo.environment
        let home = HaulHome(environment: environment)
        let location = DaemonLocation(explicit: socket, environment: environment, home: home)
        // Signals are handled from the start: one that arrives while the daemon is still starting stops it
        // as soon as it has started.
        typealias Stopping = (requested: Bool, server: DaemonServer?, task: Task<Void, Never>?)
        let stopping = NIOLockedValueBox<Stopping>((false, nil, nil))
        /// Starts the shutdown once it is both asked for and possible.
        @Sendable func stopIfAsked(_ state: inout Stopping) {
            if state.requested, let server = state.server, state.task == nil { state.task = Task { await server.shutdown() } }
        }
        let signals = SignalForwarder {
            stopping.withLockedValue { state in
                state.requested = true
                stopIfAsked(&state)
            }
        }
        let server: DaemonServer
        do {
            server = try await DaemonServer(location: location, home: home, logger: logger)
        } catch let error as HaulError {
            signals.stop()
            Reporter.printError("haul daemon: error: \(error.message)")
            throw ExitCode(ExitStatus.code(for: error.kind))
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
}
