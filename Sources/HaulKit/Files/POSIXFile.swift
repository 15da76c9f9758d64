import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin wrappers over the POSIX calls the shell needs, turning errno into one-line `HaulError`s that name the path.
package enum POSIX {
    /// What `EMFILE` and `ENFILE` mean while `doing` something ("while creating PATH"), and what to do.
    static func tooManyOpenFiles(_ doing: String) -> String {
        let limit = DescriptorLimit.soft
        let allowed = limit == .max ? "" : " (this process may have \(limit))"
        return "too many files and connections open \(doing)\(allowed); raise the limit (ulimit -n) or run fewer downloads at once (-j)"
    }

    package static func error(_ action: String, _ path: String, errno code: Int32 = errno) -> HaulError {
        let reason = String(cString: strerror(code))
        switch code {
        case ENOSPC, EDQUOT:
            return HaulError(.fileSystem, "no space left on device while \(action) \(path)", reason: .noSpace(path: path))
        case EACCES, EPERM, EROFS:
            return HaulError(.fileSystem, "permission denied while \(action) \(path) (\(reason)); fix the permissions or choose another path")
        case ENOENT:
            return HaulError(.fileSystem, "no such file or directory while \(action) \(path)")
        case EMFILE, ENFILE:
            return HaulError(.fileSystem, tooManyOpenFiles("while \(action) \(path)"))
        case ELOOP:
            return HaulError(.fileSystem, "\(path) is a symbolic link, which Haul never writes through; remove it, or name the real path")
        default:
            return HaulError(.fileSystem, "\(reason) while \(action) \(path)")
        }
    }

    static func fileSize(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// The size and modification time (seconds since 1970) of a regular file at `path` (not through a final
    /// symbolic link); `nil` for anything else.
    static func regularFileSizeAndTime(_ path: String) -> (size: Int64, modified: Int64)? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        #if canImport(Darwin)
        return (Int64(info.st_size), Int64(info.st_mtimespec.tv_sec))
        #else
        return (Int64(info.st_size), Int64(info.st_mtim.tv_sec))
        #endif
    }

    static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether `path` names anything (a link itself, not followed): its size when it is a regular file, else 0;
    /// `nil` when the name is free.
    static func sizeOfAnyName(_ path: String) -> Int64? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (info.st_mode & S_IFMT) == S_IFREG ? Int64(info.st_size) : 0
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    static func rename(_ from: String, _ to: String) throws(HaulError) {
        guard Glibc_rename(from, to) == 0 else { throw error("moving the download to", to) }
    }

    static func unlink(_ path: String) {
        _ = Glibc_unlink(path)
    }

    /// Creates `path` and its parents (mode 0755 before umask).
    static func makeDirectories(_ path: String) throws(HaulError) {
        if isDirectory(path) { return }
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if isDirectory(current) { continue }
            if mkdir(current, 0o755) != 0 && errno != EEXIST { throw error("creating directory", current) }
        }
    }

    /// Creates `path` (inside Haul's own state, at or below `root`) so that only its owner can enter it:
    /// `root`, `path` and every folder between them end up 0700 whatever the umask, including folders an
    /// older version created more openly. Folders above `root` are made as ``makeDirectories(_:)`` makes them.
    package static func makePrivateDirectories(_ path: String, root: String) throws(HaulError) {
        let target = normalize(path), top = normalize(root)
        guard target == top || target.hasPrefix(top == "/" ? "/" : top + "/") else {
            throw HaulError(.fileSystem, "\(path) is outside \(root)")
        }
        try makeDirectories(directoryOf(top))
        var current = top
        let below = target == top ? [] : target.dropFirst(top == "/" ? 1 : top.count + 1).split(separator: "/")
        try makePrivateDirectory(current)
        for component in below {
            current += "/" + component
            try makePrivateDirectory(current)
        }
    }

    private static func makePrivateDirectory(_ path: String) throws(HaulError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw error("creating directory", path) }
        var info = stat()
        guard lstat(path, &info) == 0 else { throw error("reading", path) }
        if (info.st_mode & S_IFMT) == S_IFLNK {
            throw HaulError(.fileSystem, "\(path) is a symbolic link; Haul keeps its state only in a real folder: give HAUL_HOME the folder it points to")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw HaulError(.fileSystem, "\(path) is not a directory; Haul keeps its state there")
        }
        // Another user's folder could be read, or its files swapped, by that user: Haul's state (credentials in
        // records, the daemon's socket) stays in folders of this user's own.
        guard info.st_uid == geteuid() else {
            throw HaulError(.fileSystem, "\(path) belongs to another user (uid \(info.st_uid)); Haul keeps its state only in a folder of your own: set HAUL_HOME to one")
        }
        if info.st_mode & 0o077 != 0, chmod(path, 0o700) != 0 {
            throw error("making private", path)
        }
    }

    /// Makes an existing file of Haul's own state readable by its owner only (files from older versions).
    static func makePrivate(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & 0o077 != 0,
              info.st_uid == geteuid() else { return }
        _ = chmod(path, 0o600)
    }

    /// Makes a rename or file creation in `directory` durable.
    static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        _ = close(fd)
    }

    /// The last component of `path`: a file's name in its folder (``directoryOf(_:)``).
    static func nameOf(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    static func directoryOf(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let dir = String(path[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    /// An absolute version of `path`, relative to the working directory.
    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return normalize(path) }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return normalize(cwd + "/" + path)
    }

    /// Folds `.` and `..` components and repeated slashes.
    static func normalize(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }
}

private func Glibc_rename(_ from: String, _ to: String) -> Int32 { rename(from, to) }
private func Glibc_unlink(_ path: String) -> Int32 { unlink(path) }

/// An open file written at explicit offsets; `sync()` may run on another thread while writes go on.
final class PartialFile: Sendable {
    let path: String
    /// -1 once closed, so that a late use fails (EBADF) instead of reaching whatever file reuses the number.
    private let descriptor: NIOLockedValueBox<Int32>
    private var fd: Int32 { descriptor.withLockedValue { $0 } }

    /// Opens (and with `create`, creates) `path` for reading and writing, never truncating it. `private`
    /// files (Haul's own state) are created 0600 whatever the umask.
    init(path: String, create: Bool, private isPrivate: Bool = false) throws(HaulError) {
        // Never through a symbolic link: one planted at a partial file's path would redirect Haul's writes.
        let flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0)
        let fd = open(path, flags, isPrivate ? 0o600 : 0o666)
        guard fd >= 0 else { throw POSIX.error("opening", path) }
        if isPrivate { _ = fchmod(fd, 0o600) }
        self.path = path
        self.descriptor = NIOLockedValueBox(fd)
        self.identity = nil
    }

    /// Takes over `descriptor`, an open file at `path` (see ``OpenDirectory/openFile(_:exclusive:)``) that is the file
    /// `identity` (``FileIdentity``).
    init(descriptor: Int32, path: String, identity: String? = nil) {
        self.path = path
        self.descriptor = NIOLockedValueBox(descriptor)
        self.identity = identity
    }

    /// Which file this is (``FileIdentity``), as found when it was opened: the same whatever its name becomes (a
    /// rename into place keeps it).
    let identity: String?

    /// What the open file is (device, inode, size), wherever its name is now.
    func status() throws(HaulError) -> FileStatus {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw POSIX.error("reading", path) }
        return FileStatus(info)
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(HaulError) {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw POSIX.error("writing", path)
            }
            done += n
        }
    }

    func write(_ bytes: [UInt8], at offset: Int64) throws(HaulError) {
        // `withUnsafeBytes` rethrows untyped: the only error it can pass on is the HaulError of `write`.
        do {
            try bytes.withUnsafeBytes { raw in try write(raw, at: offset) }
        } catch let error as HaulError {
            throw error
        } catch {
            throw HaulError(.fileSystem, "could not write \(path): \(error)")
        }
    }

    func read(count: Int, at offset: Int64) throws(HaulError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw POSIX.error("reading", path)
            }
            if n == 0 { break }
            done += n
        }
        return Array(buffer.prefix(done))
    }

    /// Cuts (or extends) the file to `length` bytes; nothing to do when it has that length already (a file written
    /// from its start to its end, most of them): ext4 charges an `ftruncate` to the same size like a real one.
    func truncate(to length: Int64) throws(HaulError) {
        if let current = try? size(), current == length { return }
        guard ftruncate(fd, off_t(length)) == 0 else { throw POSIX.error("truncating", path) }
    }

    /// Reserves `length` bytes so that a full disk shows now, not at 90%; extends sparsely where
    /// the file system cannot reserve.
    func preallocate(_ length: Int64) throws(HaulError) {
        #if os(Linux)
        let result = posix_fallocate(fd, 0, off_t(length))
        // Longer than a file here can be (ext4: 16 TiB): the server's claim, not a disk to free.
        if result == EFBIG { throw HaulError.impossibleLength(length, onThisFileSystem: true) }
        if result == ENOSPC || result == EDQUOT {
            throw HaulError(.fileSystem, "not enough space for \(length) bytes at \(path)", reason: .noSpace(path: path))
        }
        if result == 0 { return }
        #endif
        guard try size() < length else { return }
        guard ftruncate(fd, off_t(length)) == 0 else {
            if errno == EFBIG || errno == EINVAL { throw HaulError.impossibleLength(length, onThisFileSystem: true) }
            throw POSIX.error("truncating", path)
        }
    }

    func sync() throws(HaulError) {
        guard fsync(fd) == 0 else { throw POSIX.error("saving", path) }
    }

    /// Gives the open file the permissions `mode` (``DownloadFileMode``); `false` when the file system refused (a
    /// FAT or SMB mount, whose files have the mode of the mount).
    @discardableResult
    func setMode(_ mode: mode_t) -> Bool {
        fchmod(fd, mode) == 0
    }

    /// `UTIME_OMIT` of `<sys/stat.h>`, a macro Swift does not import: leave that time as it is.
    #if os(Linux)
    static let omitTime = (1 << 30) - 2
    #else
    static let omitTime = -2
    #endif

    /// Sets the modification time (seconds since 1970), leaving the access time; `false` when it could not be set.
    @discardableResult
    func setModificationTime(_ seconds: Int64) -> Bool {
        var times = [timespec(tv_sec: 0, tv_nsec: Self.omitTime), timespec(tv_sec: time_t(seconds), tv_nsec: 0)]
        return futimens(fd, &times) == 0
    }

    func size() throws(HaulError) -> Int64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw POSIX.error("reading", path) }
        return Int64(info.st_size)
    }

    /// Applies `body` to successive chunks of bytes `0..<length`.
    func forEachChunk(upTo length: Int64, chunkSize: Int = 1 << 20, _ body: ([UInt8]) -> Void) throws(HaulError) {
        var offset: Int64 = 0
        while offset < length {
            let chunk = try read(count: Int(min(Int64(chunkSize), length - offset)), at: offset)
            if chunk.isEmpty { break }
            body(chunk)
            offset += Int64(chunk.count)
        }
    }

    func close() {
        let fd = descriptor.withLockedValue { fd in
            defer { fd = -1 }
            return fd
        }
        if fd >= 0 { _ = Glibc_close(fd) }
    }
}

private func Glibc_close(_ fd: Int32) -> Int32 { close(fd) }

/// `path` made absolute against the working directory, with `.` and `..` folded.
public func absolutePath(_ path: String) -> String { POSIX.absolute(path) }
