import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A folder held open by its descriptor. A download resolves its destination's folder once, then creates, opens,
/// checks, renames and syncs its files relative to this descriptor: a folder renamed or swapped for a symbolic link
/// while the download runs never redirects a write, because no path is looked up twice.
///
/// Opening walks the path one component at a time without following symbolic links, except one that only its
/// owner or root could have put there (see ``isTrusted(link:in:)``): `~/Downloads` linked to another disk is
/// followed, a link another user planted in a folder they can write is refused.
final class OpenDirectory: Sendable {
    /// The path as given, for messages.
    let path: String
    /// -1 once closed, so that a late use fails (EBADF) instead of reaching whatever reuses the number.
    private let descriptor: NIOLockedValueBox<Int32>
    var fd: Int32 { descriptor.withLockedValue { $0 } }

    /// Takes over the open folder `fd` (closed with this), opened as `path`.
    init(path: String, fd: Int32) {
        self.path = path
        self.descriptor = NIOLockedValueBox(fd)
        var info = stat()
        identityKey = fstat(fd, &info) == 0 ? "folder:\(info.st_dev):\(info.st_ino)" : "unknown:" + path
    }

    deinit { close() }

    /// Removes the file at `path` through its folder, opened as any download's (no link another user could have
    /// planted is followed; with `root`, no link below it at all: ``open(_:create:below:)``); nothing when the folder
    /// or the file is not there, or when a download writes the file (a `haul` of another `HAUL_HOME`:
    /// ``removeUnlessInUse(_:)``).
    static func unlink(_ path: String, below root: String? = nil) {
        guard let folder = try? open(POSIX.directoryOf(path), create: false, below: root) else { return }
        defer { folder.close() }
        try? folder.removeUnlessInUse(POSIX.nameOf(path))
    }

    /// Symbolic links followed at most while opening one folder, as the kernel's own limit (`ELOOP`).
    static let maxLinks = 40

    /// Opens the folder at `path` (made absolute against the working directory), creating missing folders (mode
    /// 0755 before umask) when `create`.
    static func open(_ path: String, create: Bool) throws(HaulError) -> OpenDirectory {
        let absolute = POSIX.absolute(path)
        var fd = Glibc_open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw POSIX.error("opening", "/") }
        var remaining = absolute.split(separator: "/").map(String.init)
        var walked = ""
        var links = 0
        do throws(HaulError) {
            while !remaining.isEmpty {
                let component = remaining.removeFirst()
                if component == "." || component.isEmpty { continue }
                let next = openat(fd, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if next >= 0 {
                    _ = Glibc_close(fd)
                    fd = next
                    walked = component == ".." ? POSIX.directoryOf(walked) : walked + "/" + component
                    continue
                }
                let reason = errno
                let here = walked + "/" + component
                if reason == ENOENT, create {
                    if mkdirat(fd, component, 0o755) != 0, errno != EEXIST { throw POSIX.error("creating directory", here) }
                    remaining.insert(component, at: 0)
                    continue
                }
                var info = stat()
                guard fstatat(fd, component, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFLNK else {
                    if reason == ENOTDIR || reason == ELOOP {
                        throw HaulError(.fileSystem, "\(here) is not a folder; choose another destination")
                    }
                    throw POSIX.error("opening", here, errno: reason)
                }
                links += 1
                guard links <= maxLinks else { throw POSIX.error("opening", absolute, errno: ELOOP) }
                guard isTrusted(link: info, in: fd) else {
                    throw HaulError(.fileSystem, "\(here) is a symbolic link in a folder another user can change, which Haul does not follow; name the real folder",
                                    reason: .untrustedFolder(path: here))
                }
                guard let target = readLink(component, in: fd) else { throw POSIX.error("reading the link", here) }
                if target.hasPrefix("/") {
                    _ = Glibc_close(fd)
                    fd = Glibc_open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                    guard fd >= 0 else { throw POSIX.error("opening", "/") }
                    walked = ""
                }
                remaining.insert(contentsOf: target.split(separator: "/").map(String.init), at: 0)
            }
        } catch {
            _ = Glibc_close(fd)
            throw error
        }
        return OpenDirectory(path: absolute, fd: fd)
    }

    /// Whether a symbolic link found in the folder `parent` may be followed: it belongs to root or to this
    /// process's user, and nobody else can replace it, because the folder is writable only by its owner (root or
    /// this user) or is sticky (as `/tmp`, where only a link's owner may remove it). The kernel's
    /// `protected_symlinks` reasons the same way.
    static func isTrusted(link: stat, in parent: Int32) -> Bool {
        let me = geteuid()
        guard link.st_uid == 0 || link.st_uid == me else { return false }
        var folder = stat()
        guard fstat(parent, &folder) == 0 else { return false }
        if folder.st_mode & S_ISVTX != 0 { return true }
        let ownerTrusted = folder.st_uid == 0 || folder.st_uid == me
        return ownerTrusted && folder.st_mode & (S_IWGRP | S_IWOTH) == 0
    }

    private static func readLink(_ name: String, in fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlinkat(fd, name, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `name` as a path, for messages and records.
    func pathOf(_ name: String) -> String { path == "/" ? "/" + name : path + "/" + name }

    /// What is at `name` (not following a symbolic link), or `nil` when nothing is.
    func status(_ name: String) -> FileStatus? {
        var info = stat()
        guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return FileStatus(info)
    }

    /// What is at `name` and which file it is (``FileIdentity``), not following a link; `nil` when nothing is there.
    func statusAndIdentity(_ name: String) -> (status: FileStatus, identity: String)? {
        var info = stat()
        guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return (FileStatus(info), FileIdentity.of(info, at: fd, name))
    }

    /// Opens the regular file `name` for reading and writing (`writable: false`: reading), never through a symbolic
    /// link. `exclusive` creates it, and fails when anything is there already: with mode 0600
    /// (``DownloadFileMode/partial``), so that no other account can ever open a file Haul writes; it gets its final
    /// mode when it is published.
    ///
    /// A file opened for writing is locked (`flock`, exclusive) for as long as it is open: a download of another
    /// `HAUL_HOME` (another process of this user, a daemon of another home) that finds it beside its destination sees
    /// it is in use (``removeUnlessInUse(_:)``) rather than removing it. When another holds its lock already, this
    /// throws `busy`. `destination`: the file the one created is the partial file of, which a failure is said of.
    func openFile(_ name: String, exclusive: Bool = false, writable: Bool = true, savingAs destination: String? = nil) throws(HaulError) -> PartialFile {
        let flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (exclusive ? O_CREAT | O_EXCL : 0)
        let fd = openat(self.fd, name, flags, DownloadFileMode.partial)
        guard fd >= 0 else {
            let code = errno
            // A folder that takes no new file (`-o /proc/x`, a read-only mount): said of the file asked for, not of
            // the partial file beside it that nobody named (whose name may be shortened, or carry a user id).
            if exclusive, let destination, [ENOENT, EACCES, EPERM, EROFS].contains(code) {
                let reason = String(cString: strerror(code))
                if code == ENOENT {
                    throw HaulError(.fileSystem, "cannot save \(destination): \(path) takes no new files (\(reason.lowercased())); choose another path")
                }
                throw HaulError(.fileSystem, "permission denied while saving \(destination) (\(reason)); fix the permissions of \(path) or choose another path")
            }
            throw POSIX.error(exclusive ? "creating" : "opening", pathOf(name), errno: code)
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            _ = Glibc_close(fd)
            throw HaulError(.fileSystem, "\(pathOf(name)) is not a regular file; Haul writes only files of its own there")
        }
        // Writes block as on any file; O_NONBLOCK only kept the open of a FIFO planted at the name from waiting.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        if writable {
            // Locked, then the name checked again: a download of another home that removed the file just before the
            // lock (it found it unlocked) leaves this one holding a file without a name.
            if Self.isLockedElsewhere(fd) {
                _ = Glibc_close(fd)
                throw inUse(name)
            }
            guard status(name)?.isSameFile(as: FileStatus(info)) == true else {
                _ = Glibc_close(fd)
                // The name is another download's now (it holds the lock of what is there), or something else was
                // put in the file's place (moved away, a link or a copy planted): said as what it is.
                if isInUse(name) { throw inUse(name) }
                throw HaulError(.fileSystem, "\(pathOf(name)) was replaced by another program as Haul opened it (it is no longer the file Haul made), so nothing was written there",
                                reason: .replacedWhileDownloading(path: pathOf(name)))
            }
        }
        return PartialFile(descriptor: fd, path: pathOf(name), identity: FileIdentity.of(info, at: fd, nil))
    }

    /// Takes the exclusive `flock` of the open file `fd`; `true` when another open file holds it. A file system
    /// without `flock` (an old NFS) locks nothing: `false`.
    private static func isLockedElsewhere(_ fd: Int32) -> Bool {
        // A lock just released can still be held for a moment by a child process between fork and exec (the
        // descriptor is close-on-exec, but shared until then): tried again briefly (100 ms in all) before it is
        // called held, as ``FileLock`` does.
        for attempt in 0..<10 {
            if attempt > 0 { usleep(10_000) }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return false }
            guard errno == EWOULDBLOCK || errno == EINTR else { return false }
        }
        return true
    }

    /// Another download holds `name` open for writing.
    private func inUse(_ name: String) -> HaulError {
        HaulError(.busy, "another haul process is already writing \(pathOf(name)) (a download of another HAUL_HOME?); wait for it or stop it first",
                  reason: .busy)
    }

    /// Creates `name` afresh: whatever is there (a stale partial file, a link planted in its place) is removed
    /// first, never opened for writing, truncated or written through; a file another download writes (it holds
    /// its lock) is left alone, and this throws `busy`. `destination`: the file it is the partial file of.
    func createFresh(_ name: String, savingAs destination: String? = nil) throws(HaulError) -> PartialFile {
        for _ in 0..<8 {
            do {
                return try openFile(name, exclusive: true, savingAs: destination)
            } catch {
                guard error.kind != .busy, status(name) != nil else { throw error }
                try removeUnlessInUse(name)
            }
        }
        throw HaulError(.fileSystem, "\(pathOf(name)) keeps being recreated by another program; stop it or choose another destination")
    }

    /// Whether `name` is a regular file a download is writing (it holds the lock ``openFile(_:exclusive:writable:)``
    /// takes).
    func isInUse(_ name: String) -> Bool {
        guard let probe = lockProbe(name) else { return false }
        defer { _ = Glibc_close(probe) }
        return Self.isLockedElsewhere(probe)
    }

    /// `name` opened for reading, to try its lock, when it is a regular file (only a regular file can be a
    /// download's: a link is never followed, a FIFO or device never opened); `nil` otherwise. Close it.
    private func lockProbe(_ name: String) -> Int32? {
        guard status(name)?.isRegular == true else { return nil }
        let probe = openat(fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        return probe >= 0 ? probe : nil
    }

    /// Whether this process may open `name` for reading and writing, as its effective user (not following a link).
    func mayWrite(_ name: String) -> Bool {
        faccessat(fd, name, R_OK | W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0
    }

    /// Removes what is at `name` unless it is a file a download is writing (``openFile(_:exclusive:writable:)`` holds
    /// its lock): then it throws `busy`, and the file stays. Nothing when nothing is there.
    func removeUnlessInUse(_ name: String) throws(HaulError) {
        // Held through the unlink: a download that opens the file meanwhile finds it locked, and gives way.
        let probe = lockProbe(name)
        defer { if let probe { _ = Glibc_close(probe) } }
        if let probe, Self.isLockedElsewhere(probe) { throw inUse(name) }
        if unlinkat(fd, name, 0) != 0, errno != ENOENT {
            throw HaulError(.fileSystem, "\(pathOf(name)) is in the way and could not be removed (\(String(cString: strerror(errno)))); remove it or choose another destination")
        }
    }

    /// Removes the file (or link) `name`; nothing when it is not there.
    func unlink(_ name: String) {
        _ = unlinkat(fd, name, 0)
    }

    /// What ``rename(_:to:replacing:)`` did.
    enum Renamed: Equatable {
        case moved
        /// Without `replacing`, `to` exists: nothing moved.
        case destinationExists
        /// Nothing is named `from` (another program moved it away): nothing moved.
        case sourceGone
    }

    /// Renames `from` to `to` in this folder. Without `replacing`, an existing `to` is never replaced.
    func rename(_ from: String, to: String, replacing: Bool) throws(HaulError) -> Renamed {
        let code: Int32
        if replacing {
            code = renameat(fd, from, fd, to) == 0 ? 0 : errno
        } else {
            code = Self.renameNoReplace(fd, from, to)
        }
        switch code {
        case 0: return .moved
        case EEXIST where !replacing: return .destinationExists
        // The folder is held open, so a missing name can only be `from`'s.
        case ENOENT: return .sourceGone
        default: throw POSIX.error("moving the download to", pathOf(to), errno: code)
        }
    }

    /// `renameat2(…, RENAME_NOREPLACE)` where the system has it, else a hard link and an unlink (a link never
    /// replaces a file either); returns 0 or the errno.
    private static func renameNoReplace(_ fd: Int32, _ from: String, _ to: String) -> Int32 {
        #if os(Linux)
        if let call = renameat2Function {
            if call(fd, from, fd, to, 1 /* RENAME_NOREPLACE */) == 0 { return 0 }
            let code = errno
            // EINVAL/ENOSYS: the file system or kernel lacks the flag; fall back to the link.
            guard code == EINVAL || code == ENOSYS else { return code }
        }
        #elseif canImport(Darwin)
        if renameatx_np(fd, from, fd, to, UInt32(RENAME_EXCL)) == 0 { return 0 }
        let code = errno
        guard code == ENOTSUP || code == EINVAL else { return code }
        #endif
        guard linkat(fd, from, fd, to, 0) == 0 else { return errno }
        _ = unlinkat(fd, from, 0)
        return 0
    }

    #if os(Linux)
    private typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
    /// glibc 2.28 has `renameat2`, but Swift's Glibc module does not declare it: looked up once at run time.
    private static let renameat2Function: RenameAt2? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else { return nil }
        return unsafeBitCast(symbol, to: RenameAt2.self)
    }()
    #endif

    /// Tells this folder from another whatever its path: its device and inode.
    let identityKey: String

    /// Makes creations and renames in this folder durable.
    func sync() {
        _ = fsync(fd)
    }

    func close() {
        let fd = descriptor.withLockedValue { fd in
            defer { fd = -1 }
            return fd
        }
        if fd >= 0 { _ = Glibc_close(fd) }
    }
}

/// What `fstat`/`fstatat` says of a file, as far as Haul asks.
struct FileStatus: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var isRegular: Bool
    var isDirectory: Bool
    var linkCount: UInt64
    /// The owner's uid.
    var owner: UInt32
    /// The file's group.
    var group: UInt32
    /// The mode's permission bits.
    var permissions: UInt32

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        isRegular = (info.st_mode & S_IFMT) == S_IFREG
        isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
        linkCount = UInt64(info.st_nlink)
        owner = UInt32(info.st_uid)
        group = UInt32(info.st_gid)
        permissions = UInt32(info.st_mode & 0o7777)
    }

    /// What ``FileExposure`` judges of it.
    var facts: FileFacts {
        FileFacts(isRegular: isRegular, owner: owner, group: group, permissions: permissions, linkCount: linkCount)
    }

    /// Who else than this process's user (and root) could change the file's bytes (``FileExposure``); `nil`: nobody.
    var exposure: FileExposure? {
        FileExposure.of(facts, user: UInt32(geteuid()), group: UInt32(getegid()))
    }

    /// Owned by this process's user: a file another user owns may be rewritten by that user at any time.
    var isOwnedByThisUser: Bool { owner == UInt32(geteuid()) }

    /// Whether both describe the same file (device and inode).
    func isSameFile(as other: FileStatus) -> Bool { device == other.device && inode == other.inode }
}

private func Glibc_open(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }
private func Glibc_close(_ fd: Int32) -> Int32 { close(fd) }
