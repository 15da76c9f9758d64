/// Whether removing a task (`haul rm`, `tasks.remove`) deletes a file its name leads to, and if not, why. Haul
/// deletes only a file it wrote itself for the task, and only while the name still holds that very file: a file
/// `-nc` or `-N` kept, a file saved at the name later, or one reached through a folder swapped for a link is the
/// user's, and stays. aria2c's remove never deletes a file at all.
public enum FileRemoval: Equatable, Sendable {
    /// The name holds the very file Haul wrote: it is deleted.
    case delete
    /// Nothing has the name: nothing to delete, nothing to say.
    case nothingThere
    /// The file stays, for this reason.
    case keep(Reason)

    /// Why a file stays.
    public enum Reason: Equatable, Sendable {
        /// Haul has no record of writing a file at that name for the task (a file `-nc` or `-N` kept, a file the
        /// user had before, a record of an older version that does not name the file).
        case notWrittenByHaul
        /// The name holds another file than the one Haul wrote (saved there later, or reached through a folder
        /// swapped for a link).
        case replaced
        /// Not a regular file (a link, a folder, a device): Haul writes only regular files.
        case notAFile
    }

    /// What is at a file's name now: which file (``identity``, as the records keep it) and whether it is a regular file.
    public struct Found: Equatable, Sendable {
        /// Which file the name leads to (not following a link).
        public var identity: String
        /// A regular file, not a link, folder or device.
        public var isRegular: Bool

        /// What was found at the name.
        public init(identity: String, isRegular: Bool) {
            self.identity = identity
            self.isRegular = isRegular
        }
    }

    /// The decision for a name: `written` is the identity of the file Haul wrote there for the task (`nil`: none it
    /// knows of), `found` what the name holds now (`nil`: nothing).
    public static func decide(written: String?, found: Found?) -> FileRemoval {
        guard let found else { return .nothingThere }
        guard found.isRegular else { return .keep(.notAFile) }
        guard let written else { return .keep(.notWrittenByHaul) }
        return found.identity == written ? .delete : .keep(.replaced)
    }
}
