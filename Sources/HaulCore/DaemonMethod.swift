/// The daemon's methods: the one vocabulary the server dispatches on and its clients (the CLI, background
/// sessions) call by, so that neither spells a method name. The raw values are the wire names (docs/protocol.md).
package enum DaemonMethod: String, CaseIterable, Sendable {
    case hello = "daemon.hello"
    case status = "daemon.status"
    case openSession = "session.open"
    case setMaxConcurrentDownloads = "session.setMaxConcurrentDownloads"
    case setRateLimit = "session.setRateLimit"
    case sessionConfiguration = "session.configuration"
    case addTasks = "tasks.add"
    case listTasks = "tasks.list"
    case pauseTasks = "tasks.pause"
    case resumeTasks = "tasks.resume"
    case cancelTasks = "tasks.cancel"
    case removeTasks = "tasks.remove"
    case setPriority = "tasks.setPriority"
    case segments = "tasks.segments"
    case subscribe = "events.subscribe"
    case unsubscribe = "events.unsubscribe"
    case listJournal = "journal.list"
    case acknowledgeJournal = "journal.ack"
    /// Unix socket only: starts the web dashboard's listener and mints a login link (docs/web.md).
    case startWeb = "web.start"
    /// The daemons of the fleet, with the tasks each runs (one machine: this daemon).
    case fleetNodes = "fleet.nodes"
}

/// Who a daemon request comes from, and so what it may do. The owner (the Unix socket, whose peer the kernel
/// vouches for; a library's background session) may do everything. The web dashboard's bridge acts with the
/// owner's rights but holds only a cookie or an API key, which can be stolen: it may not set a command the daemon
/// runs unless the daemon was started with `--web-allow-commands`.
package enum DaemonCaller: Sendable, Equatable {
    case owner
    case dashboard(commandsAllowed: Bool)

    /// Whether this caller may set a completion command (a session's, or a task's).
    public var maySetCommands: Bool {
        switch self {
        case .owner: return true
        case .dashboard(let allowed): return allowed
        }
    }

    /// Why a request that sets a command is refused to this caller; nil when it is not.
    public func commandRefusal(setsCommand: Bool) -> String? {
        guard setsCommand, !maySetCommands else { return nil }
        return "a completion command cannot be set through the web dashboard: it would run as the daemon's user; "
            + "set it with haul add --on-complete or haul session set --on-complete, or start the daemon with --web-allow-commands"
    }
}
