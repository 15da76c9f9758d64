import ArgumentParser
import Foundation
import HaulKit

/// How the CLI's queue commands reach the daemon, and which of its sessions they act on.
struct DaemonClientOptions: ParsableArguments {
    @Option(help: "The daemon's control socket (default: $HAUL_SOCKET, else $XDG_RUNTIME_DIR/haul/daemon.sock, else $HAUL_HOME/run/daemon.sock).")
    var socket: String?

    @Flag(name: .customLong("no-autostart"), help: "Fail instead of starting a daemon when none is running.")
    var noAutostart = false

    @Option(help: "The daemon session to use.")
    var session = "default"

    /// A session name the daemon would refuse is refused here, before anything is sent (exit 2).
    func validate() throws {
        do {
            try SessionFolder.validate(identifier: session)
        } catch {
            throw InputError("--session: \(error.message)")
        }
    }

    /// Connects (starting a daemon unless --no-autostart); on failure prints one line and exits.
    func connect() async throws -> DaemonConnection {
        let environment = ProcessInfo.processInfo.environment
        var executable: String?
        if let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { executable = own }
        let endpoint = DaemonEndpoint(socketPath: socket, autostart: !noAutostart, executable: executable)
        let home = HaulHome(environment: environment)
        do {
            // Said once, when this command started the daemon: where to look when something goes wrong.
            let client = try await DaemonLauncher.connect(endpoint, home: home, client: "haul-cli") { pid, log in
                Reporter.printError("haul: started the haul daemon (pid \(pid)); it logs to \(log)")
            }
            return DaemonConnection(client: client, session: session, endpoint: endpoint, home: home)
        } catch let error as HaulError {
            throw CLIFailure(error)
        }
    }
}

/// A one-line failure that maps to the exit code of its kind.
struct CLIFailure: Error {
    var error: HaulError
    init(_ error: HaulError) { self.error = error }

    static func exit(_ error: any Error) -> ExitCode {
        let failure: HaulError
        switch error {
        case let cli as CLIFailure: failure = cli.error
        case let haul as HaulError: failure = haul
        case let rpc as RPCError: failure = rpc.haulError
        default: failure = HaulError(.network, String(describing: error))
        }
        Reporter.printError("haul: error: \(failure.line)")
        return ExitCode(ExitStatus.code(for: failure.kind))
    }
}

/// A connection to the daemon bound to one session.
final class DaemonConnection: Sendable {
    let client: DaemonClient
    let session: String
    let endpoint: DaemonEndpoint
    let home: HaulHome

    init(client: DaemonClient, session: String, endpoint: DaemonEndpoint, home: HaulHome) {
        self.client = client
        self.session = session
        self.endpoint = endpoint
        self.home = home
    }

    /// Calls `Call` on the session.
    func call<Call: DaemonCall>(_ call: Call.Type, _ parameters: Call.Parameters) async throws -> Call.Result {
        do {
            return try await client.call(Call.self, session: session, parameters)
        } catch let error as HaulError {
            throw CLIFailure(error)
        }
    }

    /// The session's tasks (only those of `ids`, in that order, when given), a page at a time. A session the daemon
    /// does not have is an error, except that `default` (the one the CLI uses unless told) then lists nothing.
    /// Every task of the session, a page at a time (see ``DaemonClient/eachTaskPage(session:missingSessionIsEmpty:_:)``).
    func eachTaskPage(_ body: @escaping @Sendable ([TaskSnapshot]) throws -> Void) async throws {
        do {
            try await client.eachTaskPage(session: session, missingSessionIsEmpty: session == "default", body)
        } catch let error as HaulError {
            throw CLIFailure(error)
        }
    }

    func tasks(ids: [String]? = nil) async throws -> [TaskSnapshot] {
        do {
            return try await client.tasks(session: session, ids: ids, missingSessionIsEmpty: session == "default")
        } catch let error as HaulError {
            throw CLIFailure(error)
        }
    }

    /// Subscribes this connection to the session's events (no replay); false when the session does not exist,
    /// which is an error unless it is `default`.
    func subscribe() async throws -> Bool {
        do {
            _ = try await client.call(Subscribe.self, .init(replay: false), session: session)
            return true
        } catch let error as RPCError {
            if error.isNoSuchSession, session == "default" { return false }
            throw CLIFailure(error.haulError)
        } catch let error as HaulError {
            throw CLIFailure(error)
        }
    }

    /// Adds tasks in as many messages as it takes; their ids, in order.
    func add(_ requests: [AddTasks.Addition]) async throws -> [String] {
        do {
            return try await client.add(session: session, requests)
        } catch let error as HaulError {
            throw CLIFailure(error)
        }
    }

    /// Acknowledges the journal entries of the tasks `ids` (whose end this command has shown), in messages that
    /// fit; best effort: an older daemon, or a connection that closed, leaves them for later.
    func acknowledgeJournal(of ids: [String]) async {
        let groups = DaemonProtocol.chunks(ids, count: DaemonProtocol.maxPageLimit, bytes: DaemonProtocol.addChunkBytes, JSONValue.string)
        for group in groups {
            guard (try? await client.call(AcknowledgeJournal.self, session: session, .init(ids: group))) != nil else { return }
        }
    }

    /// Whether the session is not there yet (adding to it will create it); never for `default`, every daemon's.
    func isNewSession() async -> Bool {
        guard session != "default" else { return false }
        do {
            _ = try await client.call(SessionSettings.self, NoParameters(), session: session)
            return false
        } catch let error as RPCError {
            return error.isNoSuchSession
        } catch {
            return false
        }
    }

    /// Full task ids for what the user typed: an id, or a prefix of exactly one id (among `ids`, else the session's).
    func resolve(_ typed: [String], among ids: [String]? = nil) async throws -> [String] {
        // An empty word (`haul rm "$unset"`) is the prefix of every id: it names no task.
        if typed.contains(where: { $0.isEmpty }) {
            throw CLIFailure(HaulError(.usage, "an empty task id names no task; give an id from `haul ls`"))
        }
        let known: [String]
        if let ids {
            known = ids
        } else {
            // Whole ids are looked up by themselves; only a prefix needs the session's ids (a long queue read in pages).
            let exact = Set(try await tasks(ids: typed).map(\.id))
            if typed.allSatisfy(exact.contains) { return typed }
            known = try await tasks().map(\.id)
        }
        return try typed.map { prefix in
            if known.contains(prefix) { return prefix }
            let matches = known.filter { $0.hasPrefix(prefix) }
            guard matches.count == 1 else {
                throw CLIFailure(HaulError(
                    .usage,
                    matches.isEmpty ? "no task \(prefix) in session \(session); `haul ls` lists them"
                        : "\(prefix) matches \(matches.count) tasks; give more of the id"))
            }
            return matches[0]
        }
    }

    func close() async { await client.close() }
}
