#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// How a download confined below a folder (a URL list's `dir=` and `out=`: ``DownloadOptions/confinedTo``) reaches
// its own: no symbolic link below that folder is followed, not even one of the user's own.
extension OpenDirectory {
    /// Opens the folder at `path`, which is `root` or lies below it: `root` as ``open(_:create:)`` opens any folder,
    /// then each folder below it with `openat` and `O_NOFOLLOW`, never through a symbolic link (one there is refused,
    /// naming it), creating missing ones (mode 0755 before umask) when `create`. How a download confined below a
    /// folder (``DownloadOptions/confinedTo``: a URL list's `dir=` and `out=`) reaches its own. Without `root`,
    /// ``open(_:create:)``.
    static func open(_ path: String, create: Bool, below root: String?) throws(HaulError) -> OpenDirectory {
        guard let root else { return try open(path, create: create) }
        // Never nil when creating.
        guard let folder = try openIfPresent(path, create: create, below: root) else {
            throw POSIX.error("opening", POSIX.absolute(path), errno: ENOENT)
        }
        return folder
    }

    /// ``open(_:create:below:)``, but `nil` when a folder on the way is missing (and not `create`).
    static func openIfPresent(_ path: String, create: Bool, below root: String) throws(HaulError) -> OpenDirectory? {
        let top = POSIX.absolute(root), absolute = POSIX.absolute(path)
        guard let parts = ListedPath.parts(of: absolute, below: top) else {
            throw HaulError(.usage, "\(absolute) is not inside \(top), the folder the download is confined to")
        }
        let base: OpenDirectory
        do {
            base = try open(top, create: create)
        } catch {
            if !create, !POSIX.exists(top) { return nil }
            throw error
        }
        if parts.isEmpty { return base }
        defer { base.close() }
        var fd: Int32 = -1
        var walked = top == "/" ? "" : top
        do throws(HaulError) {
            for part in parts {
                let parent = fd >= 0 ? fd : base.fd
                let here = walked + "/" + part
                var next: Int32 = -1
                // Created, then opened: a folder removed in between is made again, a few times at most.
                for _ in 0..<8 {
                    next = openat(parent, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    if next >= 0 { break }
                    let reason = errno
                    var info = stat()
                    if fstatat(parent, part, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFLNK {
                        throw HaulError(.usage, "\(here) is a symbolic link, and a URL list's dir= and out= do not go through links",
                                        reason: .listedThroughLink(path: here))
                    }
                    if reason == ENOENT {
                        guard create else {
                            if fd >= 0 { closeDescriptor(fd) }
                            return nil
                        }
                        if mkdirat(parent, part, 0o755) != 0, errno != EEXIST { throw POSIX.error("creating directory", here) }
                        continue
                    }
                    if reason == ENOTDIR || reason == ELOOP {
                        throw HaulError(.fileSystem, "\(here) is not a folder; choose another destination")
                    }
                    throw POSIX.error("opening", here, errno: reason)
                }
                guard next >= 0 else { throw POSIX.error("opening", here, errno: ENOENT) }
                if fd >= 0 { closeDescriptor(fd) }
                fd = next
                walked = here
            }
        } catch {
            if fd >= 0 { closeDescriptor(fd) }
            throw error
        }
        return OpenDirectory(path: absolute, fd: fd)
    }
}

/// Closes a descriptor (`close` inside the type is its own method).
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }
