// Who else could change the bytes of a file Haul would continue and publish. Pure: the shell (HaulKit's
// `DownloadJob`) opens the file with `O_NOFOLLOW`, asks ``FileExposure/of(_:user:group:)`` about what `fstat` says of
// that descriptor, and refuses (a file given to `--continue`) or starts afresh (a partial file of its own found
// exposed) when another account could write to it.

/// What `fstat` says of an open file, as far as who may change its bytes.
package struct FileFacts: Sendable, Equatable {
    /// A regular file (not a folder, FIFO, device, socket or link).
    package var isRegular: Bool
    /// The owner's uid.
    package var owner: UInt32
    /// The file's group.
    package var group: UInt32
    /// The mode's permission bits (`st_mode & 0o7777`).
    package var permissions: UInt32
    /// How many names the file has (`st_nlink`).
    package var linkCount: UInt64

    package init(isRegular: Bool, owner: UInt32, group: UInt32, permissions: UInt32, linkCount: UInt64) {
        self.isRegular = isRegular
        self.owner = owner
        self.group = group
        self.permissions = permissions
        self.linkCount = linkCount
    }
}

/// Why another account than this user (and root) could change the bytes of a file: by owning it, through another
/// name of it, or by the write permission its mode gives. A file Haul would publish must have none: the checksum is
/// computed as the bytes are written, and only a file nobody else can write still holds those bytes when it is
/// published.
package enum FileExposure: Sendable, Equatable {
    /// Not a regular file.
    case notRegular
    /// Another user owns it: the owner may write to it, or make it writable, at any time.
    case ownedByAnotherUser(uid: UInt32)
    /// It has other names (hard links): whoever reaches one of them reaches its bytes, and a write of Haul's would
    /// change the file at those names too.
    case hardLinked(links: UInt64)
    /// Every user may write to it (`o+w`).
    case writableByEveryone
    /// Its group may write to it, and that group is not this user's own (`g+w`, another group).
    case writableByGroup(gid: UInt32)

    /// Why another account could change `file` for a process of user `user` whose own (effective) group is `group`;
    /// `nil` when nobody but this user and root can. A group-writable file of the user's own group is not exposed:
    /// under a umask of 002 every file the user makes is so, and that group is the user's private one on the systems
    /// that use that umask (Debian's and Fedora's user private groups).
    package static func of(_ file: FileFacts, user: UInt32, group: UInt32) -> FileExposure? {
        guard file.isRegular else { return .notRegular }
        guard file.owner == user else { return .ownedByAnotherUser(uid: file.owner) }
        guard file.linkCount <= 1 else { return .hardLinked(links: file.linkCount) }
        if file.permissions & 0o002 != 0 { return .writableByEveryone }
        if file.permissions & 0o020 != 0, file.group != group { return .writableByGroup(gid: file.group) }
        return nil
    }

    /// One line refusing `path`, a file given to `--continue`, for this exposure: what is wrong, and what to do.
    package func refusal(_ path: String) -> String {
        let copy = "copy it to a new file of your own (cp) and continue that, or remove it to start over"
        switch self {
        case .notRegular:
            return "\(path) is not a regular file, which --continue cannot continue; name the file itself, or choose another path"
        case .ownedByAnotherUser(let uid):
            return "\(path) belongs to another user (uid \(uid)), who could change its bytes while Haul continues it; copy it to a new file of your own (cp) and continue that, or choose another path"
        case .hardLinked(let links):
            return "\(path) has \(links - 1) other name\(links == 2 ? "" : "s") (hard links), through which its bytes could change while Haul continues it; \(copy)"
        case .writableByEveryone:
            return "\(path) can be written by every user, who could change its bytes while Haul continues it; \(copy)"
        case .writableByGroup(let gid):
            return "\(path) can be written by the users of group \(gid), who could change its bytes while Haul continues it; \(copy)"
        }
    }
}
