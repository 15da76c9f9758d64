/// Reads a URL list (`-i FILE`, or `-i -` for standard input) as it arrives, in bounded memory: one URL a line,
/// blank lines and lines starting with `#` skipped, surrounding spaces trimmed. Pure: the shell feeds it chunks.
///
/// A line over ``maxLineBytes`` is refused as soon as its 64 KiB have arrived without a newline (so `-i /dev/zero`
/// fails at once), as is a list over ``maxListBytes`` or with more than ``maxURLs`` URLs. A UTF-8 byte-order mark
/// that starts the list (Windows Notepad saves one) is no part of its first line: it is skipped (wget and aria2c
/// refuse that line as a URL without a known scheme, wget2 looks up a host named "https"). A NUL byte in a line
/// refuses the list at that line, and UTF-16 text at its start.
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
        /// A line holds a NUL byte, which no URL or option has (a binary file given as a list).
        case nulByte(line: Int)
        /// The list starts with UTF-16's byte-order mark: saved as "Unicode" text, not as UTF-8.
        case utf16

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
            case .nulByte(let line):
                return "\(name), line \(line): has a NUL byte, which no URL has; give a text file, one URL a line"
            case .utf16:
                return "\(name) is UTF-16 text; save it as UTF-8 (one URL a line)"
            }
        }
    }

    /// A line that is not blank nor a comment: a URL, or (indented) one of aria2c's per-URL options (``InputList``).
    public struct Entry: Equatable, Sendable {
        public var line: Int
        /// The line without the spaces around it.
        public var text: String
        /// The line starts with a space or a TAB.
        public var indented = false
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

    /// EF BB BF: U+FEFF in UTF-8, which some editors write before the text.
    static let utf8ByteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Lines read so far.
    public var lines: Int { line }

    private mutating func take(_ bytes: some Collection<UInt8>) throws(Refusal) -> Entry? {
        line += 1
        var text = Array(bytes)
        if line == 1 {
            if text.starts(with: Self.utf8ByteOrderMark) { text.removeFirst(Self.utf8ByteOrderMark.count) }
            if text.starts(with: [0xFF, 0xFE]) || text.starts(with: [0xFE, 0xFF]) { throw .utf16 }
        }
        if text.last == UInt8(ascii: "\r") { text.removeLast() }
        guard !text.contains(0) else { throw .nulByte(line: line) }
        guard text.count <= Self.maxLineBytes else { throw .lineTooLong(line: line) }
        guard let decoded = String(validating: text, as: UTF8.self) else { throw .notUTF8(line: line) }
        let trimmed = decoded.trimmingASCIIWhitespace()
        guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { return nil }
        urls += 1
        guard urls <= urlLimit else { throw .tooManyURLs }
        return Entry(line: line, text: trimmed, indented: text.first == UInt8(ascii: " ") || text.first == UInt8(ascii: "\t"))
    }
}
