import Foundation

/// A session's place in `HAUL_HOME` (`sessions/NAME/`: its store and lock) and the names it may have: what a local
/// session, the daemon's catalog and `haul clean` share.
package enum SessionFolder {
    /// Throws unless `identifier` is letters, digits, `.`, `_` and `-` (not starting with `.`).
    package static func validate(identifier: String) throws(HaulError) {
        guard !identifier.isEmpty, identifier.count <= 100,
              identifier.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }),
              !identifier.hasPrefix(".") else {
            throw HaulError(.usage, "session identifier \"\(identifier.prefix(100))\" must be letters, digits, '.', '_' or '-' (1 to 100 of them, not starting with '.')")
        }
    }

    /// The folder of the session's store and lock.
    package static func path(_ identifier: String, home: HaulHome) -> String { home.path + "/sessions/" + identifier }

    /// Whether the stored session `identifier` has a task waiting or running, read without opening the session
    /// (false when it has no store).
    package static func hasWaitingOrRunningTasks(_ identifier: String, home: HaulHome) -> Bool {
        let file = path(identifier, home: home) + "/tasks.sqlite"
        guard FileManager.default.fileExists(atPath: file), let store = try? TaskStore(path: file) else { return false }
        return (try? store.hasWaitingOrRunningTasks()) ?? false
    }
}
