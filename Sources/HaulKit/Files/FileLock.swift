import Crypto
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on a file: one session, or one download, per process at a time. Released by
/// ``release()``, or when the process exits or crashes.
///
/// `haul clean` deletes lock files, but only while holding them; a lock taken on a file that is no longer at its
/// path protects nothing, so taking one checks that the file locked is still the one at the path, else tries again.
package final class FileLock: Sendable {
    private let fd: Int32
    /// What this lock is called in ``heldHere``, while held.
    private let name: String?

    /// The locks this process holds, by ``registryName(key:among:)``: a second download of this process that
    /// wants one is refused at once, and told that it is this process's own (a batch's or a daemon's other
    /// download), not another process.
    private static let heldHere = NIOLockedValueBox<Set<String>>([])

    /// Whether this process holds the lock of `key` among the ones kept in `path` (or the lock file `path`).
    package static func isHeldHere(key: String? = nil, among path: String) -> Bool {
        heldHere.withLockedValue { $0.contains(registryName(key: key, among: path)) }
    }

    private static func registryName(key: String?, among path: String) -> String {
        key.map { "\(path)\u{0}\($0)" } ?? path
    }

    /// Enters `name` as held by this process; `false` when it is already.
    private static func enter(_ name: String) -> Bool {
        heldHere.withLockedValue { $0.insert(name).inserted }
    }

    /// Takes the lock at `path` (creating the file), or throws `busy` when another process holds it.
    package convenience init(path: String, busy: @autoclosure () -> HaulError) throws(HaulError) {
        let name = Self.registryName(key: nil, among: path)
        guard Self.enter(name) else { throw busy() }
        do {
            self.init(descriptor: try Self.acquire(path, busy: busy), name: name)
        } catch {
            Self.heldHere.withLockedValue { _ = $0.remove(name) }
            throw error
        }
    }

    /// The descriptor of the file at `path`, locked.
    private static func acquire(_ path: String, busy: () -> HaulError) throws(HaulError) -> Int32 {
        // Bounded: each turn either takes the lock of the file at `path`, or finds that file replaced meanwhile.
        for _ in 0..<16 {
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw POSIX.error("opening", path) }
            _ = fchmod(fd, 0o600)
            // A lock just released can still be held for a moment by a child process between fork and exec
            // (the descriptor is close-on-exec, but shared until then): try again briefly before calling it busy.
            var attempts = 0
            while flock(fd, LOCK_EX | LOCK_NB) != 0 {
                attempts += 1
                guard attempts < 25 else {
                    close(fd)
                    throw busy()
                }
                usleep(20_000)
            }
            if isStill(fd, at: path) { return fd }
            close(fd)
        }
        throw busy()
    }

    private init(descriptor: Int32, name: String? = nil) {
        fd = descriptor
        self.name = name
    }

    /// Takes the lock of `key` among the many kept in the one file at `path`, or throws `busy` when another
    /// download (of this process or another) holds it.
    ///
    /// On Linux it is a one-byte open-file-description lock (`F_OFD_SETLK`) at an offset derived from `key`: a
    /// download takes its destination's lock without creating a file, and in a batch of thousands of tiny files
    /// creating a lock inode per file was the largest cost (ext4's inode allocation, and the folder's lock). Held by
    /// this open file description only, released on ``release()`` or exit, like `flock`. Elsewhere (no OFD locks) it
    /// is the `flock` of the file `path.key`.
    package convenience init(key: String, among path: String, busy: @autoclosure () -> HaulError) throws(HaulError) {
        #if os(Linux)
        let name = Self.registryName(key: key, among: path)
        guard Self.enter(name) else { throw busy() }
        do {
            if let fd = try Self.acquireRange(Self.offset(of: key), in: path, busy: busy) {
                self.init(descriptor: fd, name: name)
                return
            }
        } catch {
            Self.heldHere.withLockedValue { _ = $0.remove(name) }
            throw error
        }
        Self.heldHere.withLockedValue { _ = $0.remove(name) }
        #endif
        try self.init(path: "\(path).\(key)", busy: busy())
    }

    /// Takes the lock of `key` in the file at `path` if it is free, without waiting (for `haul clean`).
    package static func takeExisting(key: String, among path: String) -> Probe {
        #if os(Linux)
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return errno == ENOENT ? .missing : .held }
        guard lockRange(fd, offset(of: key)) else {
            close(fd)
            return .held
        }
        return .taken(FileLock(descriptor: fd))
        #else
        return takeExisting("\(path).\(key)")
        #endif
    }

    #if os(Linux)
    /// `F_OFD_SETLK` (asm-generic/fcntl.h; not exported by Swift's Glibc module).
    private static let ofdSetLock: Int32 = 37

    /// Where `key`'s byte is: its first 60 bits. Keys are digests in hex (``TransferRecord/key(destinationPath:)``);
    /// any other text is digested first.
    static func offset(of key: String) -> Int64 {
        if key.utf8.count >= 15, let value = Int64(key.prefix(15), radix: 16) { return value }
        return Int64(hexString(SHA256.hash(data: Array(key.utf8))).prefix(15), radix: 16) ?? 0
    }

    /// Locks the byte at `offset` for writing on `fd`'s open file description; false when another holds it.
    private static func lockRange(_ fd: Int32, _ offset: Int64) -> Bool {
        var range = flock()
        range.l_type = Int16(F_WRLCK)
        range.l_whence = Int16(SEEK_SET)
        range.l_start = off_t(offset)
        range.l_len = 1
        return fcntl(fd, ofdSetLock, &range) == 0
    }

    /// The locked descriptor, or `nil` when the kernel has no OFD locks (before Linux 3.15).
    private static func acquireRange(_ offset: Int64, in path: String, busy: () -> HaulError) throws(HaulError) -> Int32? {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw POSIX.error("opening", path) }
        // As for `flock`: a lock just released may be held a moment longer by a child between fork and exec.
        var attempts = 0
        while !lockRange(fd, offset) {
            let reason = errno
            guard reason != EINVAL else {
                close(fd)
                return nil
            }
            attempts += 1
            guard attempts < 25 else {
                close(fd)
                throw busy()
            }
            usleep(20_000)
        }
        return fd
    }
    #endif

    /// What ``takeExisting(_:)`` found.
    package enum Probe {
        /// No file at the path.
        case missing
        /// Another process holds the lock.
        case held
        /// Taken: release it when done.
        case taken(FileLock)
    }

    /// Takes the lock of the file at `path` if there is one, without creating it and without waiting.
    package static func takeExisting(_ path: String) -> Probe {
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return errno == ENOENT ? .missing : .held }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return .held
        }
        guard isStill(fd, at: path) else {
            // Deleted or replaced meanwhile: whoever replaced it may hold the new one.
            close(fd)
            return FileLock.exists(path) ? .held : .missing
        }
        return .taken(FileLock(descriptor: fd))
    }

    package func release() {
        if let name { Self.heldHere.withLockedValue { _ = $0.remove(name) } }
        _ = close(fd)
    }

    /// Whether the open file `fd` is the file now at `path`.
    private static func isStill(_ fd: Int32, at path: String) -> Bool {
        var open = stat(), named = stat()
        guard fstat(fd, &open) == 0, lstat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// A short note kept in the lock file itself (the name a `--dir` download chose): one write on the open
    /// descriptor, no file of its own. Empty text clears it.
    func setNote(_ text: String) {
        let bytes = Array(text.utf8)
        _ = ftruncate(fd, 0)
        guard !bytes.isEmpty else { return }
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    /// The note kept in the lock file at `path`, if any.
    static func note(at path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }
}
