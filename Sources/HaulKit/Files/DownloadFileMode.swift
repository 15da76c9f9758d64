#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The modes of the files a download writes beside its destination.
///
/// A partial file is created 0600 and keeps that mode while Haul writes it: no other account can open it, so none can
/// hold a descriptor through which it could change bytes Haul has checked. Once it is renamed into place it becomes
/// the user's download and gets ``published``, the mode curl, wget and aria2c create their files with.
package enum DownloadFileMode {
    /// A partial file's mode while it is written.
    package static let partial: mode_t = 0o600

    /// A finished file's mode: 0666 less the process's umask (0644 under 022, 0664 under 002). The umask is read once,
    /// at first use: `haul` reads it as it starts (``prepare()``), before any thread could change it for a moment
    /// (the daemon narrows it while it creates its socket).
    package static let published: mode_t = 0o666 & ~currentUmask()

    /// Reads the umask now, while the process has no other thread that could change it meanwhile.
    package static func prepare() { _ = published }

    /// The process's umask, read without changing it where the system tells it (Linux 4.7's `Umask:` line of
    /// `/proc/self/status`), else by setting it to 077 and back: a file another thread creates in between is made
    /// more private, never less.
    private static func currentUmask() -> mode_t {
        #if os(Linux)
        if let mask = umaskFromProc() { return mask }
        #endif
        let mask = umask(0o077)
        umask(mask)
        return mask
    }

    #if os(Linux)
    private static func umaskFromProc() -> mode_t? {
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Bounded: the file is a few KiB; 64 KiB is read at most.
        for _ in 0..<16 {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("Umask:") {
            let digits = line.dropFirst("Umask:".count).drop { $0 == " " || $0 == "\t" }
            return mode_t(digits, radix: 8).map { $0 & 0o777 }
        }
        return nil
    }
    #endif
}
