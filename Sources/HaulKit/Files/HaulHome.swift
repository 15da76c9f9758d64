#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where Haul keeps its own state: `$HAUL_HOME`, else `$XDG_DATA_HOME/haul`, else `~/.local/share/haul`.
public struct HaulHome: Equatable, Sendable {
    /// The folder; it and what Haul makes in it are private to the user (0700 folders, 0600 files).
    public var path: String

    /// The state folder at `path`.
    public init(path: String) { self.path = path }

    /// Resolves the location from an environment (normally `ProcessInfo.processInfo.environment`). A relative
    /// `HAUL_HOME` (or `HOME`) is taken from the current folder, once, here: the daemon this process starts runs
    /// elsewhere (in `/`) and is given the absolute path, so both use the same folder.
    public init(environment: [String: String]) {
        if let home = environment["HAUL_HOME"], !home.isEmpty {
            path = Self.absolute(home)
        } else if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            path = data + "/haul"
        } else {
            path = Self.absolute((environment["HOME"] ?? ".") + "/.local/share/haul")
        }
    }

    /// `path` from the current folder when it is relative (`.haul`, `./state`, ``POSIX/absolute(_:)``); as given
    /// when absolute.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : POSIX.absolute(path)
    }

    /// The folder holding one resume record per download.
    public var transfersPath: String { path + "/transfers" }

    /// Creates the folder (owner-only) if needed. The error names `HAUL_HOME`: a folder that cannot be made or
    /// written is a setting to change, not a download's failure.
    public func prepare() throws(HaulError) {
        do {
            try POSIX.makePrivateDirectories(path, root: path)
        } catch {
            // A message that already says what to do with HAUL_HOME (another user's folder) is the whole line.
            if error.message.contains("HAUL_HOME") { throw HaulError(.fileSystem, error.message) }
            throw HaulError(.fileSystem, "cannot use \(path) for Haul's state (\(error.message)); set HAUL_HOME to a folder you can write")
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw HaulError(.fileSystem, "cannot write to \(path), Haul's state folder; set HAUL_HOME to a folder you can write")
        }
    }
}
