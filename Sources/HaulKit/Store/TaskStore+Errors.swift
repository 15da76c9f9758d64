import GRDB

// Turning SQLite failures into the one-line HaulError a person sees.
extension TaskStore {
    /// Runs `body`, translating any failure into a `HaulError` about the store at `path`.
    static func mapErrors<T>(path: String, _ body: () throws -> T) throws(HaulError) -> T {
        do {
            return try body()
        } catch let error as HaulError {
            throw error
        } catch let error as DatabaseError {
            throw haulError(error, path: path)
        } catch let error as StoreDecodingError {
            throw damaged(path: path, reason: error.description)
        } catch {
            throw HaulError(.fileSystem, "the session store at \(path) failed: \(oneLine("\(error)"))")
        }
    }

    static func damaged(path: String, reason: String) -> HaulError {
        HaulError(.fileSystem, "the session store at \(path) is damaged (\(oneLine(reason))); move it away to start over")
    }

    static func haulError(_ error: DatabaseError, path: String) -> HaulError {
        let reason = oneLine(error.message ?? "\(error.resultCode)")
        switch error.resultCode {
        case .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_FORMAT:
            return damaged(path: path, reason: reason)
        case .SQLITE_FULL:
            return HaulError(.fileSystem, "the session store at \(path) could not be written: the disk is full; free some space and try again")
        case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_AUTH:
            return HaulError(.fileSystem, "the session store at \(path) cannot be written (\(reason)); check the permissions of the file and its folder")
        case .SQLITE_CANTOPEN:
            return HaulError(.fileSystem, "the session store at \(path) cannot be opened (\(reason)); check that its folder exists and is writable")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return HaulError(.busy, "the session store at \(path) is locked by another haul process; try again when it finishes", reason: .busy)
        case .SQLITE_IOERR:
            return HaulError(.fileSystem, "the session store at \(path) could not be read or written (\(reason)); check the disk")
        case .SQLITE_CONSTRAINT:
            return HaulError(.usage, "the session store at \(path) refused a change (\(reason)); another task already uses that id or URL and destination")
        default:
            return HaulError(.fileSystem, "the session store at \(path) failed (\(reason))")
        }
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
