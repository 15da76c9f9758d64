#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The URL list of `-i`, held open for the readings of a batch (one to check and name it, one to add its tasks):
/// a regular file by the descriptor opened once, never looked up by its path again. A list that can be read only
/// once (standard input, a pipe or FIFO: `-i <(command)`, `-i /path/to/fifo`, as wget and aria2c read them) is first
/// kept, as it arrives and within the limits of a list, in a private file of Haul's own that has no name once
/// opened, so that nothing of it is left behind.
package final class URLListFile: Sendable {
    private let fd: Int32
    /// How messages name the list: "the URL list urls.txt", "the URL list on standard input".
    package let name: String

    private init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    deinit { close(fd) }

    /// Opens the list `path` (`nil`: standard input), off the concurrency threads (a cancelled caller stops waiting
    /// at once). A regular file (or `/dev/null`) is held as it is; standard input, a pipe or a FIFO is read to its end
    /// into a new private file in `spoolFolder` (a folder of Haul's private home); a folder, a device or a socket is
    /// refused. Throws a ``HaulError`` of kind `usage` for a list that cannot be read or is over a list's limits.
    package static func open(_ path: String?, name: String, spoolFolder: @escaping @Sendable () throws -> String) async throws -> URLListFile {
        try await BlockingIO.runInterruptibly {
            guard let path else {
                return try URLListFile.kept(STDIN_FILENO, shownAs: "standard input", name: name, waitsFirst: false, in: try spoolFolder())
            }
            let fd = try NamedFileReader.open(path, as: .urlList, readsPipe: true)
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                let code = errno
                close(fd)
                throw HaulError(.usage, "cannot read \(name): \(String(cString: strerror(code)))")
            }
            guard info.st_mode & S_IFMT == S_IFIFO else { return URLListFile(fd: fd, name: name) }
            defer { close(fd) }
            return try URLListFile.kept(fd, shownAs: path, name: name, waitsFirst: true, in: try spoolFolder())
        }
    }

    /// What `source` gives, to its end, kept in a new private file in `folder` (unlinked at once: only the
    /// descriptor returned holds it).
    private static func kept(_ source: Int32, shownAs path: String, name: String, waitsFirst: Bool, in folder: String) throws -> URLListFile {
        let spool = folder + "/list-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let fd = createFile(spool, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw HaulError(.fileSystem, "cannot keep \(name) in \(spool): \(String(cString: strerror(errno)))") }
        unlink(spool)
        let list = URLListFile(fd: fd, name: name)
        var scanner = URLListScanner()
        var written: Int64 = 0
        do {
            try NamedFileReader.forEachChunk(ofDescriptor: source, shownAs: path, as: .urlList, waitsFirst: waitsFirst) { chunk in
                _ = try scanner.consume(chunk)
                try list.write(chunk, at: written)
                written += Int64(chunk.count)
            }
            _ = try scanner.finish()
        } catch let refusal as URLListScanner.Refusal {
            throw HaulError(.usage, refusal.message(name))
        }
        return list
    }

    private func write(_ bytes: [UInt8], at offset: Int64) throws(HaulError) {
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw HaulError(.fileSystem, "cannot keep \(name): \(String(cString: strerror(errno)))")
            }
            done += count
        }
    }

    /// Up to `buffer.count` bytes at `offset`; 0 at the end.
    fileprivate func read(into buffer: inout [UInt8], at offset: Int64) throws(HaulError) -> Int {
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
            if count >= 0 { return count }
            if errno != EINTR { throw HaulError(.usage, "cannot read \(name): \(String(cString: strerror(errno)))") }
        }
    }
}

/// A URL list read a part at a time (``next(_:)``), in bounded memory whatever its length: the entries of the lines
/// read so far, checked as ``URLListReader`` checks them. For `haul get -i`, which adds a list of a million URLs to its
/// session a few hundred at a time instead of holding them all. Each cursor reads its list from the start.
package final class URLListCursor {
    private let list: URLListFile
    private var offset: Int64 = 0
    private var scanner = URLListScanner()
    private var builder = InputList.Builder()
    private var ready: [InputList.Entry] = []
    private var ended = false
    private var chunk = [UInt8](repeating: 0, count: 64 << 10)

    /// A reading of `list` from its start.
    package init(_ list: URLListFile) {
        self.list = list
    }

    private var name: String { list.name }

    /// Up to `count` more entries, in order; none once the list has ended. Throws a ``HaulError`` of kind `usage`
    /// for the first line that is not a URL or an option, or a list over its limits.
    package func next(_ count: Int) throws(HaulError) -> [InputList.Entry] {
        while ready.count < count, !ended {
            let read = try list.read(into: &chunk, at: offset)
            offset += Int64(read)
            do {
                if read == 0 {
                    ended = true
                    try take(try scanner.finish())
                    try append(builder.finish())
                } else {
                    try take(try scanner.consume(chunk[0..<read]))
                }
            } catch let refusal as URLListScanner.Refusal {
                throw HaulError(.usage, refusal.message(name))
            } catch let error as HaulError {
                throw error
            } catch {
                throw HaulError(.usage, "\(name): \(error)")
            }
        }
        let taken = Array(ready.prefix(count))
        ready.removeFirst(taken.count)
        return taken
    }

    private func take(_ lines: [URLListScanner.Entry]) throws {
        for line in lines {
            do {
                try append(try builder.add(line.text, indented: line.indented, line: line.line))
            } catch let error as InputError {
                throw HaulError(.usage, "\(name): \(error.message)")
            }
        }
    }

    private func append(_ entry: InputList.Entry?) throws(HaulError) {
        guard let entry else { return }
        do {
            _ = try UserInput.typedURL(entry.url)
        } catch {
            throw HaulError(.usage, "\(name), line \(entry.line): \(error.message)")
        }
        ready.append(entry)
    }
}

private func createFile(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
