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

    /// The folder at `path`: the one held by running downloads, else opened now (``OpenDirectory/open(_:create:)``).
    /// Give it back with ``release(_:)``.
    func acquire(_ path: String, create: Bool) throws(HaulError) -> OpenDirectory {
        if let held = entries.withLockedValue({ entries -> OpenDirectory? in
            guard var entry = entries[path] else { return nil }
            entry.users += 1
            entries[path] = entry
            return entry.folder
        }) {
            return held
        }
        let opened = try OpenDirectory.open(path, create: create)
        return entries.withLockedValue { entries in
            // Another download opened it meanwhile: share that one.
            if var entry = entries[path] {
                entry.users += 1
                entries[path] = entry
                return entry.folder
            }
            entries[path] = Entry(folder: opened, users: 1)
            return opened
        }
    }

    /// A download is done with `folder`: closed once no download holds it.
    func release(_ folder: OpenDirectory, as path: String) {
        let closing = entries.withLockedValue { entries -> OpenDirectory? in
            guard var entry = entries[path], entry.folder === folder else { return folder }
            entry.users -= 1
            if entry.users > 0 {
                entries[path] = entry
                return nil
            }
            entries[path] = nil
            return folder
        }
        closing?.close()
    }
}
