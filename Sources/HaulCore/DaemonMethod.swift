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
