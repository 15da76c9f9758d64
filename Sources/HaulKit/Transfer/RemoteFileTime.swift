#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Gives a finished file the server's time (``RemoteTime``), once it is complete at its final path.
enum RemoteFileTime {
    /// Sets the modification time of `path` to `lastModified` when that is an HTTP-date; the access time is left
    /// as it is. A failure is not the download's: the file is complete, only its date is the local one.
    static func apply(lastModified: String?, to path: String) {
        guard let seconds = RemoteTime.modificationTime(lastModified: lastModified) else { return }
        var times = [timespec(tv_sec: 0, tv_nsec: omit), timespec(tv_sec: time_t(seconds), tv_nsec: 0)]
        _ = utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
    }

    /// `UTIME_OMIT` of `<sys/stat.h>`, a macro Swift does not import: leave that time as it is.
    #if os(Linux)
    private static let omit = (1 << 30) - 2
    #else
    private static let omit = -2
    #endif
}
