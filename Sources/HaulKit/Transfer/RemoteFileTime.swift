#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Gives a finished file the server's time (``RemoteTime``), just before it is synced and moved into place.
enum RemoteFileTime {
    /// Sets the modification time of `file` to `lastModified` when that is an HTTP-date; the access time is left
    /// as it is. A failure is not the download's: the file is complete, only its date is the local one. Through
    /// the open file, so the fsync that follows covers it and no path is looked up again.
    static func apply(lastModified: String?, to file: PartialFile) {
        guard let seconds = RemoteTime.modificationTime(lastModified: lastModified) else { return }
        file.setModificationTime(Int64(seconds))
    }

}
