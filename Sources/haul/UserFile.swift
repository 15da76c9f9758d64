import Foundation
import HaulKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file a user named (a URL list, a cookie jar): opened without blocking (a FIFO without a writer never
/// hangs the open), checked to be a regular file, a pipe (`-i <(command)`) or a character device (`/dev/null`),
/// and read up to a limit.
enum UserFile {
    /// The bytes of the file at `path`; the error names `what` and the path.
    static func read(_ path: String, what: String, limit: Int) throws -> Data {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw InputError("cannot read \(what) \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, [S_IFREG, S_IFIFO, S_IFCHR].contains(info.st_mode & S_IFMT) else {
            throw InputError("\(what) \(path) is not a file")
        }
        // Opened; from here a pipe is read as it is written (until its writer closes it), within the limit.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        guard Int64(info.st_size) <= Int64(limit) else {
            throw InputError("\(what) \(path) is larger than \(ByteFormat.string(Int64(limit)))")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while data.count <= limit {
            let count = buffer.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw InputError("cannot read \(what) \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        guard data.count <= limit else { throw InputError("\(what) \(path) is larger than \(ByteFormat.string(Int64(limit)))") }
        return data
    }
}

/// `read(2)`, where `UserFile.read` would hide it.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}
