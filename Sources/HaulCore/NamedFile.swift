// Files a user names in an option (a CA bundle, a client key, a netrc file, a URL list): how each kind is read and
// what Haul refuses before and while reading it. Pure: the shell (HaulKit's `NamedFileReader`) opens the file
// without blocking, asks ``NamedFile/problem(type:size:)`` about what `fstat` says, and reads at most
// ``NamedFile/maxBytes`` + 1 bytes, whatever the size it was told.

/// A kind of file a user names in an option, and the rules Haul reads it by.
///
/// Every such file is opened with `O_NONBLOCK` (opening a FIFO never waits for a writer), checked to be a regular
/// file on the descriptor opened (so a link to a FIFO or a device is refused like the FIFO itself), and read up to
/// its limit, off the concurrency threads. Only Haul's own private files are opened with `O_NOFOLLOW`: a file a user
/// names through a link is what the user asked for (certbot's `live/` links, the hashed CA layout, a netrc kept
/// with other dotfiles), and what is checked is the file the link leads to.
package enum NamedFile: Sendable, Equatable {
    /// `--cacert`, `SSL_CERT_FILE`, a task's `tls.caFile`: a PEM bundle of CA certificates.
    case caBundle
    /// One `HASH.N` certificate of a `--capath` folder (OpenSSL's hashed layout).
    case caFolderEntry
    /// `--cert`: a PEM client certificate (which may hold its key).
    case clientCertificate
    /// `--key`: the PEM private key of `--cert`.
    case clientKey
    /// `--netrc-file`, or `~/.netrc` with `--netrc`.
    case netrc
    /// `-i FILE`: URLs, one a line (``URLListScanner``).
    case urlList
    /// `haul daemon --web-cert`: the dashboard's PEM certificate chain.
    case webCertificate
    /// `haul daemon --web-key`: the dashboard's PEM private key.
    case webKey
    /// Haul's own dashboard API key under the private `HAUL_HOME`.
    case apiKey

    /// The largest file of this kind that is read. A CA bundle is some 200 KiB (Debian's), a certificate or key a
    /// few KiB; curl reads at most 128 KiB of a netrc file's text (without comments: the file may be larger).
    public var maxBytes: Int {
        switch self {
        case .caBundle: return 16 << 20
        case .caFolderEntry, .clientCertificate, .clientKey, .webCertificate, .webKey, .netrc: return 1 << 20
        case .urlList: return URLListScanner.maxListBytes
        case .apiKey: return 4 << 10
        }
    }

    /// Whether the path is opened with `O_NOFOLLOW`: only for Haul's own files in its private home.
    public var followsLinks: Bool { self != .apiKey }

    /// How a message names a file of this kind.
    public var noun: String {
        switch self {
        case .caBundle: return "the CA file"
        case .caFolderEntry: return "the CA certificate"
        case .clientCertificate: return "the client certificate"
        case .clientKey: return "the client certificate's private key"
        case .netrc: return "the netrc file"
        case .urlList: return "the URL list"
        case .webCertificate: return "the dashboard's certificate"
        case .webKey: return "the dashboard's private key"
        case .apiKey: return "the API key file"
        }
    }

    /// What `fstat` says the opened file is.
    public enum FileType: Sendable, Equatable {
        case regular, directory, fifo, characterDevice, blockDevice, socket, symbolicLink, other
    }

    /// Why a file of this kind at `path`, of type `type` and `size` bytes (as `fstat` says), is not read; nil when
    /// it is. The size is checked again while reading: a file that grows, or one whose size `fstat` does not know
    /// (`/proc`), is cut at ``maxBytes`` + 1 bytes and refused.
    public func problem(_ path: String, type: FileType, size: Int64) -> String? {
        switch type {
        case .regular:
            return size > Int64(maxBytes) ? tooLarge(path) : nil
        case .directory:
            return "\(noun) \(path) is a folder, not a file"
        case .fifo, .characterDevice, .blockDevice, .socket, .symbolicLink, .other:
            let what: String
            switch type {
            case .fifo: what = "a FIFO"
            case .characterDevice, .blockDevice: what = "a device"
            case .socket: what = "a socket"
            case .symbolicLink: what = "a symbolic link"
            default: what = "not a regular file"
            }
            let hint = self == .urlList ? " (give - to read standard input)" : ""
            return "\(noun) \(path) is \(what == "not a regular file" ? what : what + ", not a regular file")\(hint)"
        }
    }

    /// The message for a file over ``maxBytes``.
    public func tooLarge(_ path: String) -> String {
        "\(noun) \(path) is larger than \(Self.describe(bytes: maxBytes)), the most Haul reads of it"
    }

    static func describe(bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// Whether a file name in a `--capath` folder is one OpenSSL's hashed lookup would open: `HASH.N`, eight hex
    /// digits, a dot and a number. Only those are read: the folder may hold anything else (Debian's
    /// `/etc/ssl/certs` also has each certificate under its own name, and the whole bundle).
    public static func isHashedCertificateName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count >= 10, bytes.count <= 12, bytes[8] == UInt8(ascii: ".") else { return false }
        let hex = bytes[0..<8].allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        let number = bytes[9...].allSatisfy { (0x30...0x39).contains($0) }
        return hex && number
    }

    /// The most `HASH.N` entries read from one `--capath` folder.
    public static let maxFolderEntries = 10_000
}

/// Reads a URL list (`-i FILE`, or `-i -` for standard input) as it arrives, in bounded memory: one URL a line,
/// blank lines and lines starting with `#` skipped, surrounding spaces trimmed. Pure: the shell feeds it chunks.
///
/// A line over ``maxLineBytes`` is refused as soon as its 64 KiB have arrived without a newline (so `-i /dev/zero`
/// fails at once), as is a list over ``maxListBytes`` or with more than ``maxURLs`` URLs.
package struct URLListScanner: Sendable {
    /// The longest line, as the daemon's longest URL (`tasks.add`).
    public static let maxLineBytes = 65_536
    /// The most bytes a list may have.
    public static let maxListBytes = 128 << 20
    /// The most URLs a list may give.
    public static let maxURLs = 1_000_000

    /// Why a list is refused, with the line it stopped at (1-based).
    public enum Refusal: Error, Equatable, Sendable {
        case lineTooLong(line: Int)
        case listTooLarge
        case tooManyURLs
        case notUTF8(line: Int)

        /// One line, naming the list as `name`.
        public func message(_ name: String) -> String {
            switch self {
            case .lineTooLong(let line):
                return "\(name), line \(line): longer than \(URLListScanner.maxLineBytes / 1_024) KiB, which no URL is"
            case .listTooLarge:
                return "\(name) is larger than \(URLListScanner.maxListBytes >> 20) MiB; split it"
            case .tooManyURLs:
                return "\(name) gives more than \(URLListScanner.maxURLs) URLs; split it"
            case .notUTF8(let line):
                return "\(name), line \(line): not UTF-8 text"
            }
        }
    }

    /// A URL given on a line.
    public struct Entry: Equatable, Sendable {
        public var line: Int
        public var text: String
    }

    private var pending: [UInt8] = []
    private var line = 0
    private var total = 0
    private var urls = 0
    private let listLimit: Int
    private let urlLimit: Int

    /// A scanner with the limits of a list (smaller ones for tests).
    public init(maxListBytes: Int = URLListScanner.maxListBytes, maxURLs: Int = URLListScanner.maxURLs) {
        listLimit = maxListBytes
        urlLimit = maxURLs
    }

    /// The URLs of the complete lines in `chunk` (with what was held of an unfinished one).
    public mutating func consume(_ chunk: some Collection<UInt8>) throws(Refusal) -> [Entry] {
        total += chunk.count
        guard total <= listLimit else { throw .listTooLarge }
        var entries: [Entry] = []
        var start = chunk.startIndex
        while let newline = chunk[start...].firstIndex(of: UInt8(ascii: "\n")) {
            let piece = chunk[start..<newline]
            guard pending.count + piece.count <= Self.maxLineBytes + 1 else { throw .lineTooLong(line: line + 1) }
            if pending.isEmpty {
                if let entry = try take(piece) { entries.append(entry) }
            } else {
                pending.append(contentsOf: piece)
                let whole = pending
                pending = []
                if let entry = try take(whole) { entries.append(entry) }
            }
            start = chunk.index(after: newline)
        }
        let rest = chunk[start...]
        guard pending.count + rest.count <= Self.maxLineBytes + 1 else { throw .lineTooLong(line: line + 1) }
        pending.append(contentsOf: rest)
        return entries
    }

    /// The URL of a last line without a newline, once the list has ended.
    public mutating func finish() throws(Refusal) -> [Entry] {
        guard !pending.isEmpty else { return [] }
        let whole = pending
        pending = []
        return try take(whole).map { [$0] } ?? []
    }

    /// Lines read so far.
    public var lines: Int { line }

    private mutating func take(_ bytes: some Collection<UInt8>) throws(Refusal) -> Entry? {
        line += 1
        var text = Array(bytes)
        if text.last == UInt8(ascii: "\r") { text.removeLast() }
        guard text.count <= Self.maxLineBytes else { throw .lineTooLong(line: line) }
        guard let decoded = String(validating: text, as: UTF8.self) else { throw .notUTF8(line: line) }
        let trimmed = decoded.trimmingASCIIWhitespace()
        guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { return nil }
        urls += 1
        guard urls <= urlLimit else { throw .tooManyURLs }
        return Entry(line: line, text: trimmed)
    }
}
