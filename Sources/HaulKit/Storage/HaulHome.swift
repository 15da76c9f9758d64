/// Where Haul keeps its own state: `$HAUL_HOME`, else `$XDG_DATA_HOME/haul`, else `~/.local/share/haul`.
public struct HaulHome: Equatable, Sendable {
    public var path: String

    public init(path: String) { self.path = path }

    /// Resolves the location from an environment (normally `ProcessInfo.processInfo.environment`).
    public init(environment: [String: String]) {
        if let home = environment["HAUL_HOME"], !home.isEmpty {
            path = home
        } else if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            path = data + "/haul"
        } else {
            path = (environment["HOME"] ?? ".") + "/.local/share/haul"
        }
    }

    /// The folder holding one resume record per download.
    public var transfersPath: String { path + "/transfers" }
}
