#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on a session's folder: one process runs a session at a time. Released on exit or crash.
final class SessionLock: Sendable {
    private let fd: Int32

    init(path: String, identifier: String) throws(HaulError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw POSIX.error("opening", path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw HaulError(.busy, "session \"\(identifier)\" is open in another process; close it there first")
        }
        self.fd = fd
    }

    func release() { _ = close(fd) }
}
