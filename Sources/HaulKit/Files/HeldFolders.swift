import NIOConcurrencyHelpers

/// The folders an engine's running downloads hold, shared: downloads into one folder at the same time (a batch's,
/// a session's) open it once, not once each, and keep it until the last of them ends. A download that starts once
/// no download holds the folder opens it afresh (so a folder swapped between a task's runs is resolved again and,
/// if it became another user's link, refused).
final class HeldFolders: Sendable {
    private struct Entry {
        var folder: OpenDirectory
        var users: Int
    }

    private let entries = NIOLockedValueBox<[String: Entry]>([:])

    /// The folder at `path`: the one held by running downloads, else opened now (``OpenDirectory/open(_:create:)``;
    /// with `root`, reached below it without following a link: ``OpenDirectory/open(_:create:below:)``). A folder
    /// opened one way is never shared with a download that asks the other way (a folder of the user's reached through
    /// their own link is no folder of a confined download's). Give it back with ``release(_:as:below:)``.
    func acquire(_ path: String, create: Bool, below root: String? = nil) throws(HaulError) -> OpenDirectory {
        let key = Self.key(path, below: root)
        if let held = entries.withLockedValue({ entries -> OpenDirectory? in
            guard var entry = entries[key] else { return nil }
            entry.users += 1
            entries[key] = entry
            return entry.folder
        }) {
            return held
        }
        let opened = try OpenDirectory.open(path, create: create, below: root)
        let (shared, unused) = entries.withLockedValue { entries -> (OpenDirectory, OpenDirectory?) in
            // Another download opened it meanwhile: share that one.
            if var entry = entries[key] {
                entry.users += 1
                entries[key] = entry
                return (entry.folder, opened)
            }
            entries[key] = Entry(folder: opened, users: 1)
            return (opened, nil)
        }
        unused?.close()
        return shared
    }

    /// A download is done with `folder`, acquired as `path` (below `root`): closed once no download holds it.
    func release(_ folder: OpenDirectory, as path: String, below root: String? = nil) {
        let key = Self.key(path, below: root)
        let closing = entries.withLockedValue { entries -> OpenDirectory? in
            guard var entry = entries[key], entry.folder === folder else { return folder }
            entry.users -= 1
            if entry.users > 0 {
                entries[key] = entry
                return nil
            }
            entries[key] = nil
            return folder
        }
        closing?.close()
    }

    /// Where a folder is kept: its path, and the folder it was reached below, if any (a NUL is in no path).
    private static func key(_ path: String, below root: String?) -> String {
        root.map { path + "\u{0}" + $0 } ?? path
    }
}
