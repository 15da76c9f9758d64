#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on a file: one session, or one download, per process at a time. Released by
/// ``release()``, or when the process exits or crashes.
package final class FileLock: Sendable {
    private let fd: Int32

    /// Takes the lock at `path` (creating the file), or throws `busy` when another process holds it.
    package init(path: String, busy: @autoclosure () -> HaulError) throws(HaulError) {
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
        self.fd = fd
    }

    package func release() { _ = close(fd) }

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
