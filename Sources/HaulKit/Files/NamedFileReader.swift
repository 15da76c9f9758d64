import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the files users name in options by ``NamedFile``'s rules: opened with `O_NONBLOCK` (a FIFO never
/// blocks the open), checked on the opened descriptor to be a regular file within the kind's size, and read at
/// most to that size. Every file a user names goes through here: CA files and folders, client certificates and
/// keys, netrc files, URL lists, the dashboard's certificate and key.
package enum NamedFileReader {
    /// A file's bytes, and the permission bits of what was opened (a netrc file must be private).
    package struct Contents: Sendable {
        package var bytes: [UInt8]
        package var permissions: UInt32
    }

    /// Reads `path` on a blocking-I/O thread. A caller that is cancelled (Ctrl-C, SIGTERM) stops waiting at once.
    package static func read(_ path: String, as kind: NamedFile) async throws -> Contents {
        try await BlockingIO.runInterruptibly { try readNow(path, as: kind) }
    }

    /// Reads `path` as ``read(_:as:)`` does; `nil` when nothing is at `path` (curl's `--netrc-optional`: a file
    /// that is not there holds no login). Any other problem is thrown as by ``read(_:as:)``.
    package static func readIfPresent(_ path: String, as kind: NamedFile) async throws -> Contents? {
        try await BlockingIO.runInterruptibly { () throws -> Contents? in
            guard let fd = try NamedFileReader.open(path, as: kind, missingIsNil: true) else { return nil }
            defer { close(fd) }
            return try NamedFileReader.readOpened(fd, path: path, as: kind)
        }
    }

    /// Reads `path` on the calling thread, which should be a blocking-I/O one (``read(_:as:)``).
    package static func readNow(_ path: String, as kind: NamedFile) throws(HaulError) -> Contents {
        let fd = try open(path, as: kind)
        defer { close(fd) }
        return try readOpened(fd, path: path, as: kind)
    }

    /// Opens `path` read-only and non-blocking, and checks what was opened; the caller closes the descriptor.
    /// `readsPipe`: a pipe or FIFO is opened too (``NamedFile/problem(_:type:size:readsPipe:)``).
    package static func open(_ path: String, as kind: NamedFile, relativeTo folder: Int32? = nil, readsPipe: Bool = false) throws(HaulError) -> Int32 {
        // Never nil: a missing file is thrown.
        guard let fd = try open(path, as: kind, relativeTo: folder, missingIsNil: false, readsPipe: readsPipe) else {
            throw failure(path, as: kind, errno: ENOENT)
        }
        return fd
    }

    /// ``open(_:as:relativeTo:readsPipe:)``, or `nil` when nothing is at `path` and `missingIsNil`.
    private static func open(
        _ path: String, as kind: NamedFile, relativeTo folder: Int32? = nil, missingIsNil: Bool, readsPipe: Bool = false
    ) throws(HaulError) -> Int32? {
        guard !path.utf8.contains(0) else { throw HaulError(.usage, "\(kind.noun) \(PathText.shown(path)) has a NUL byte in its name") }
        let flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (kind.followsLinks ? 0 : O_NOFOLLOW)
        let fd = folder.map { openat($0, path, flags) } ?? Glibc_open(path, flags)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT, missingIsNil { return nil }
            throw failure(path, as: kind, errno: code)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw failure(path, as: kind, errno: code)
        }
        if let problem = kind.problem(PathText.shown(path), type: fileType(info), size: Int64(info.st_size), readsPipe: readsPipe) {
            close(fd)
            throw HaulError(.usage, problem, reason: reason(kind))
        }
        return fd
    }

    /// Reads an opened regular file to its end, refusing it past the kind's size.
    static func readOpened(_ fd: Int32, path: String, as kind: NamedFile) throws(HaulError) -> Contents {
        var info = stat()
        let permissions = fstat(fd, &info) == 0 ? UInt32(info.st_mode) & 0o7777 : 0
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc_read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure(path, as: kind, errno: errno)
            }
            if count == 0 { break }
            guard bytes.count + count <= kind.maxBytes else { throw HaulError(.usage, kind.tooLarge(PathText.shown(path)), reason: reason(kind)) }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return Contents(bytes: bytes, permissions: permissions)
    }

    /// Calls `body` with each chunk of `path` (or of standard input for `nil`) as it is read, at most 64 KiB at a time,
    /// until the end or until `body` throws. Standard input may be anything (a pipe, a terminal, a device): it is the
    /// user's own, read as it comes; a path must be a regular file.
    package static func forEachChunk(of path: String?, as kind: NamedFile, _ body: ([UInt8]) throws -> Void) throws {
        let fd: Int32
        if let path { fd = try open(path, as: kind) } else { fd = STDIN_FILENO }
        defer { if path != nil { close(fd) } }
        try forEachChunk(ofDescriptor: fd, shownAs: path ?? "standard input", as: kind, waitsFirst: false, body)
    }

    /// Calls `body` with each chunk read from the open `fd` to its end. `waitsFirst`: each read waits until the
    /// descriptor has something to say (a FIFO opened without blocking reads as ended until a writer comes: polled,
    /// it waits for one, as a blocking open would, and ends when the last writer has gone).
    package static func forEachChunk(
        ofDescriptor fd: Int32, shownAs path: String, as kind: NamedFile, waitsFirst: Bool, _ body: ([UInt8]) throws -> Void
    ) throws {
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            if waitsFirst {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&ready, 1, -1) < 0, errno != EINTR { throw failure(path, as: kind, errno: errno) }
            }
            let count = chunk.withUnsafeMutableBytes { Glibc_read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    // A standard input left non-blocking by whoever started haul: wait until it has something.
                    var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    _ = poll(&ready, 1, -1)
                    continue
                }
                throw failure(path, as: kind, errno: errno)
            }
            if count == 0 { return }
            try body(Array(chunk[0..<count]))
        }
    }

    /// The `HASH.N` certificates of a `--capath` folder (OpenSSL's hashed layout, where each is usually a link):
    /// each read by ``NamedFile/caFolderEntry``'s rules relative to the folder opened once, at most
    /// ``NamedFile/maxFolderEntries`` of them.
    package static func readHashedFolder(_ path: String) throws(HaulError) -> [(name: String, bytes: [UInt8])] {
        let folder = Glibc_open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC)
        guard folder >= 0 else {
            let code = errno
            if code == ENOTDIR { throw HaulError(.usage, "the CA folder \(PathText.shown(path)) is not a folder", reason: .unusableTLSFiles) }
            throw failure(path, as: .caFolderEntry, errno: code, noun: "the CA folder")
        }
        defer { close(folder) }
        var names: [String] = []
        // fdopendir takes its own descriptor: the folder's stays ours to open the entries relative to.
        let listing = dup(folder)
        guard listing >= 0, let directory = fdopendir(listing) else {
            if listing >= 0 { close(listing) }
            throw failure(path, as: .caFolderEntry, errno: errno, noun: "the CA folder")
        }
        defer { closedir(directory) }
        // Each turn reads one entry; a folder with more hashed names than the limit is refused.
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard NamedFile.isHashedCertificateName(name) else { continue }
            names.append(name)
            guard names.count <= NamedFile.maxFolderEntries else {
                throw HaulError(.usage, "the CA folder \(PathText.shown(path)) holds more than \(NamedFile.maxFolderEntries) certificates", reason: .unusableTLSFiles)
            }
        }
        var files: [(name: String, bytes: [UInt8])] = []
        for name in names.sorted() {
            let fd = try open(name, as: .caFolderEntry, relativeTo: folder)
            defer { close(fd) }
            files.append((name, try readOpened(fd, path: path + "/" + name, as: .caFolderEntry).bytes))
        }
        return files
    }

    /// What `info` (of `fstat`, `lstat` or `stat`) says the file is; `/dev/null` by its device number.
    static func fileType(_ info: stat) -> NamedFile.FileType {
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        case S_IFIFO: return .fifo
        case S_IFCHR:
            var null = stat()
            return stat("/dev/null", &null) == 0 && (null.st_mode & S_IFMT) == S_IFCHR && null.st_rdev == info.st_rdev ? .nullDevice : .characterDevice
        case S_IFBLK: return .blockDevice
        case S_IFSOCK: return .socket
        case S_IFLNK: return .symbolicLink
        default: return .other
        }
    }

    private static func reason(_ kind: NamedFile) -> FailureReason {
        switch kind {
        case .caBundle, .caFolderEntry, .clientCertificate, .clientKey: return .unusableTLSFiles
        default: return .other
        }
    }

    private static func failure(_ path: String, as kind: NamedFile, errno code: Int32, noun: String? = nil) -> HaulError {
        let what = (noun ?? kind.noun) + " " + PathText.shown(path)
        let message: String
        switch code {
        case ENOENT: message = "\(what) does not exist"
        case EACCES, EPERM: message = "cannot read \(what) (permission denied)"
        case ELOOP: message = "\(what) is a symbolic link, which Haul does not follow for its own files"
        case EISDIR: message = "\(what) is a folder, not a file"
        default: message = "cannot read \(what): \(String(cString: strerror(code)))"
        }
        return HaulError(.usage, message, reason: reason(kind))
    }
}

/// A path as a message shows it: control characters (a newline in a file name) as `?`.
package enum PathText {
    package static func shown(_ path: String) -> String {
        String(String.UnicodeScalarView(path.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }))
    }
}

private func Glibc_open(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }
private func Glibc_read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }

/// Reads a URL list (`-i FILE`, `nil` for standard input) by ``URLListScanner``'s rules, checking each URL as it
/// arrives: a list of garbage is refused at its first line, a line of 64 KiB without a newline (`/dev/zero`) as
/// soon as it has arrived, and nothing more is read once the list is refused.
package enum URLListReader {
    /// The list's entries (each URL with the aria2c-style options on the indented lines below it), in order, read on a
    /// blocking-I/O thread (a cancelled caller stops waiting at once). `name` names the list in messages. Throws a
    /// ``HaulError`` of kind `usage` for any problem.
    package static func read(_ path: String?, name: String) async throws -> [InputList.Entry] {
        try await BlockingIO.runInterruptibly { try readNow(path, name: name) }
    }

    /// The same on the calling thread.
    package static func readNow(_ path: String?, name: String) throws(HaulError) -> [InputList.Entry] {
        var entries: [InputList.Entry] = []
        try forEachEntry(path, name: name) { entries.append($0) }
        return entries
    }

    /// Calls `body` with each entry of the list as its lines arrive, its URL checked: a list of any length is read in
    /// bounded memory.
    package static func forEachEntry(_ path: String?, name: String, _ body: (InputList.Entry) throws -> Void) throws(HaulError) {
        var scanner = URLListScanner()
        var builder = InputList.Builder()
        func take(_ entry: InputList.Entry?) throws {
            guard let entry else { return }
            do {
                _ = try UserInput.typedURL(entry.url)
            } catch {
                throw HaulError(.usage, "\(name), line \(entry.line): \(error.message)")
            }
            try body(entry)
        }
        func check(_ lines: [URLListScanner.Entry]) throws {
            for line in lines {
                do {
                    try take(try builder.add(line.text, indented: line.indented, line: line.line))
                } catch let error as InputError {
                    throw HaulError(.usage, "\(name): \(error.message)")
                }
            }
        }
        do {
            try NamedFileReader.forEachChunk(of: path, as: .urlList) { chunk in
                do {
                    try check(try scanner.consume(chunk))
                } catch let refusal as URLListScanner.Refusal {
                    throw HaulError(.usage, refusal.message(name))
                }
            }
            try check(try scanner.finish())
            try take(builder.finish())
        } catch let error as HaulError {
            throw error
        } catch let refusal as URLListScanner.Refusal {
            throw HaulError(.usage, refusal.message(name))
        } catch {
            throw HaulError(.usage, "cannot read \(name): \(error)")
        }
    }
}
