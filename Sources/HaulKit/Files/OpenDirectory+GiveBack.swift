/// What became of a file given to `--continue` that Haul gave back to its owner (``OpenDirectory/giveBack(_:named:length:as:)``).
enum GivenBack: Equatable {
    /// Cut back to the length it had, at its own name again.
    case restored
    /// Cut back to the length it had, and left at the partial file's name (this path): something else has its own
    /// name now, which is never replaced.
    case keptAt(String)
    /// Its name leads to another file now, or it could not be cut back: nothing was done.
    case untouched
}

extension OpenDirectory {
    /// Gives back a file the user gave to `--continue`: `file`, open and named `name` in this folder, is cut back to
    /// `length` (the bytes that were the user's), made the user's file again (the mode a new file gets: curl's and
    /// wget's), made durable, and renamed to `destination` unless something has that name (never replaced). Done
    /// only while `name` still holds that very file.
    func giveBack(_ file: PartialFile, named name: String, length: Int64, as destination: String) -> GivenBack {
        guard let held = try? file.status(), held.isRegular, status(name)?.isSameFile(as: held) == true else { return .untouched }
        guard held.size <= length || (try? file.truncate(to: length)) != nil else { return .untouched }
        _ = file.setMode(DownloadFileMode.published)
        try? file.sync()
        guard name != destination else { return .restored }
        switch try? rename(name, to: destination, replacing: false) {
        case .moved?:
            sync()
            // Swapped between the check and the rename: put back where it was found.
            guard status(destination)?.isSameFile(as: held) == true else {
                _ = try? rename(destination, to: name, replacing: false)
                return .untouched
            }
            return .restored
        case .destinationExists?: return .keptAt(pathOf(name))
        case .sourceGone?, nil: return .untouched
        }
    }

    /// ``giveBack(_:named:length:as:)`` of the file at `name`, opened here (never through a link; not when a
    /// download writes it), when it is the file `identity` names. `nil` when nothing is at the name.
    func giveBack(named name: String, identity: String?, length: Int64, as destination: String) -> GivenBack? {
        guard let (found, current) = statusAndIdentity(name) else { return nil }
        guard found.isRegular, let identity, current == identity, let file = try? openFile(name) else { return .untouched }
        defer { file.close() }
        guard file.identity == identity else { return .untouched }
        return giveBack(file, named: name, length: length, as: destination)
    }
}

extension GivenBack {
    /// The clause saying where the user's bytes are, for a message: `PATH is back as it was (N bytes)`.
    func said(path: String, length: Int64) -> String? {
        switch self {
        case .restored: return "\(path) is back as it was (\(length) bytes)"
        case .keptAt(let partial): return "its first \(length) bytes, which were \(POSIX.nameOf(path)) as you gave it, are kept in \(partial) (\(path) exists now)"
        case .untouched: return nil
        }
    }
}
