import Foundation

/// Where a daemon keeps its sessions and their settings: files under `HAUL_HOME/sessions/` on one machine
/// (``FileSessionCatalog``), or a fleet's database, shared by every daemon of the fleet (HaulFleet).
package protocol SessionCatalog: Sendable {
    /// This daemon's name in its fleet; `nil` on one machine.
    var node: String? { get }
    /// Where the sessions are kept, for messages (never a password); `nil` for `HAUL_HOME`.
    var location: String? { get }
    /// The store of session `name`; `nil`: the session's own SQLite file under `HAUL_HOME`.
    func store(for name: String) -> (any SessionStore)?
    /// The saved settings of session `name` (the protocol's configuration object), or `nil` when it has none: a
    /// session exists once its settings are saved.
    func settings(of name: String) async throws -> JSONValue?
    /// Saves the settings of session `name` (creating the session).
    func saveSettings(_ settings: JSONValue, for name: String) async throws
    /// The sessions that exist and have a task waiting or running, by name.
    func sessionsWithWork() async -> [String]
    /// Every session that exists (has saved settings), by name.
    func sessionNames() async -> [String]
    /// What the other daemons of a fleet change, session by session; `nil` on one machine.
    func signals() -> AsyncStream<FleetSignal>?
    /// The sessions with a task whose node is gone (its lease expired), which no one rings about: a daemon opens
    /// them so that its next claim takes the task over. Empty on one machine.
    func sessionsToTakeOver() async -> [String]
    /// How often to look for them (`nil` on one machine).
    var takeOverInterval: Duration? { get }
    /// The fleet's daemons, with the tasks each runs now; empty on one machine.
    func nodes() async throws -> [FleetNode]
    /// Lets go of the store (a fleet: this node is marked stopped, its connections closed).
    func close() async
}

/// Which session another daemon of the fleet changed.
package enum FleetSignal: Sendable, Equatable {
    /// Its tasks; `waiting`: one may be waiting now (added, resumed or given back).
    case tasks(String, waiting: Bool)
    /// Its settings.
    case settings(String)
    /// Anything may have changed (the notifications were missed): every session is to be looked at again.
    case everything
}

/// A daemon of a fleet, as `haul fleet` shows it.
package struct FleetNode: Sendable, Equatable {
    /// Its name (`--node`).
    package var name: String
    /// The machine it runs on, and its process id there.
    package var host: String
    package var pid: Int
    /// Seen within a lease's length, by the database's clock.
    package var alive: Bool
    /// It stopped in an orderly way.
    package var stopped: Bool
    /// How long ago the database last heard from it.
    package var secondsSinceSeen: Double
    /// The tasks it runs, under their leases.
    package var leases: [FleetLease]

    package init(name: String, host: String, pid: Int, alive: Bool, stopped: Bool, secondsSinceSeen: Double, leases: [FleetLease]) {
        self.name = name
        self.host = host
        self.pid = pid
        self.alive = alive
        self.stopped = stopped
        self.secondsSinceSeen = secondsSinceSeen
        self.leases = leases
    }
}

/// A task a node runs, under its lease.
package struct FleetLease: Sendable, Equatable {
    package var session: String
    package var taskID: String
    /// The task's URL (it may hold credentials: shown redacted).
    package var url: String
    package var bytes: Int64
    package var total: Int64?
    /// Until the lease expires, by the database's clock (negative: expired, its node gone).
    package var secondsLeft: Double

    package init(session: String, taskID: String, url: String, bytes: Int64, total: Int64?, secondsLeft: Double) {
        self.session = session
        self.taskID = taskID
        self.url = url
        self.bytes = bytes
        self.total = total
        self.secondsLeft = secondsLeft
    }
}

/// One machine's sessions: `HAUL_HOME/sessions/<name>/`, each with its settings in `daemon.json` and its tasks in
/// `tasks.sqlite` (made by ``LocalSession``).
package struct FileSessionCatalog: SessionCatalog {
    let home: HaulHome

    package init(home: HaulHome) {
        self.home = home
    }

    package var node: String? { nil }
    package var location: String? { nil }

    package func store(for name: String) -> (any SessionStore)? { nil }

    static func settingsPath(_ name: String, home: HaulHome) -> String {
        SessionFolder.path(name, home: home) + "/daemon.json"
    }

    package func settings(of name: String) -> JSONValue? {
        let path = Self.settingsPath(name, home: home)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        // Unreadable: `null`, which the daemon reports and replaces by the defaults.
        guard let data = FileManager.default.contents(atPath: path), let saved = JSONValue.parse(Array(data)) else { return .null }
        return saved
    }

    package func saveSettings(_ settings: JSONValue, for name: String) throws {
        let folder = SessionFolder.path(name, home: home)
        try POSIX.makePrivateDirectories(folder, root: home.path)
        let path = Self.settingsPath(name, home: home)
        let text = settings.serialized + "\n"
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]),
              rename(temporary, path) == 0 else {
            throw POSIX.error("saving", path)
        }
    }

    package func sessionsWithWork() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: home.path + "/sessions")) ?? []
        return names.sorted().filter { name in
            FileManager.default.fileExists(atPath: Self.settingsPath(name, home: home))
                && (try? SessionFolder.validate(identifier: name)) != nil
                && SessionFolder.hasWaitingOrRunningTasks(name, home: home)
        }
    }

    package func sessionNames() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: home.path + "/sessions")) ?? []
        return names.sorted().filter { FileManager.default.fileExists(atPath: Self.settingsPath($0, home: home)) }
    }

    package func signals() -> AsyncStream<FleetSignal>? { nil }
    package func sessionsToTakeOver() -> [String] { [] }
    package var takeOverInterval: Duration? { nil }
    package func nodes() -> [FleetNode] { [] }
    package func close() {}
}
