/// Where a batch's entries save, checked as the batch is first read (before anything is added or fetched), so that
/// what it decides does not depend on where in a long list a line is.
///
/// - Two entries that save to the same file (`out=`, or with `dir=`; or the file a URL names under `-c`, `-N`, `-nc`
///   or `--overwrite`) would have their downloads meet at it, the second refused for a reason no list explains.
///   aria2c renames whichever starts second (`same.1.bin`); a list that names its files means them, so Haul refuses
///   the batch before any download, naming both entries (``conflict(earlier:entry:path:)``).
/// - A file an entry names is ``isClaimed(_:)``: a `--dir` download that would choose that name takes `name (1)`
///   instead, wherever the two lines are (aria2c's outcome when both start together; a named file means that name).
/// - An entry repeating an earlier one's URL and destination is the same download: the session keeps one task for
///   both (wget2 fetches such a URL once too; wget and aria2c fetch a second copy beside the first, `f.1`). Counted
///   here so that the batch can say so (``duplicateNote``) instead of reporting fewer files than lines, unexplained.
///
/// Kept small for lists of a million lines: 64-bit hashes of paths and entries, not the strings (two different ones
/// share a hash with odds of about one in 10^7 for a million of them).
public struct ListDestinations: Sendable {
    /// Where an entry of a batch comes from, for messages.
    public enum Source: Equatable, Sendable {
        /// A URL given on the command line: its position among them, from 1.
        case argument(Int)
        /// A line of the `-i` list, from 1.
        case line(Int)
    }

    /// What ``claim(url:destination:file:source:)`` found of an entry.
    public enum Claim: Equatable, Sendable {
        /// The first entry of its URL and destination, and the first to save to its file.
        case new
        /// The same URL and destination as an earlier entry: the same download.
        case duplicate
        /// Another entry saves to the same file already.
        case conflict(earlier: Source)
        /// Under `-nc`, an earlier entry saves to the same file: wget's "keep the first", decided by the list's order
        /// rather than by which download ends first. This one is not retrieved.
        case later(than: Source)
    }

    /// Files named, by hash: the entry that named each (lines positive, arguments negative).
    private var files: [Int: Int] = [:]
    /// The files of ``files`` an entry named itself (`out=`), under `-nc` (where a file the URL names is kept too).
    private var namedFiles: Set<Int> = []
    /// How many entries were ``Claim/later(than:)``.
    public private(set) var laterEntries = 0
    /// The first entry that was ``Claim/later(than:)``, with the entry it came after.
    public private(set) var firstLater: (entry: Source, earlier: Source)?
    /// Entries (URL and destination) seen, by hash.
    private var entries: Set<Int> = []
    /// How many entries repeated an earlier one's URL and destination.
    public private(set) var duplicates = 0
    /// The first such entry.
    public private(set) var firstDuplicate: Source?

    /// Nothing claimed yet.
    public init() {}

    /// Notes the entry from `source` that downloads `url` to `destination` (a key saying where: the folder of a
    /// `--dir` download, or the file), saving to `file` when its file is known before the download (`nil` for a
    /// `--dir` download, whose name comes from the answer).
    ///
    /// `keepingFirst` (`-nc`): two entries of one file are wget's "keep the first", the later one not retrieved
    /// (``Claim/later(than:)``), unless both named it themselves (`named`: an `out=`), which stays a conflict.
    public mutating func claim(
        url: String, destination: String, file: String?, source: Source, named: Bool = true, keepingFirst: Bool = false
    ) -> Claim {
        guard entries.insert(Self.hash(url, destination)).inserted else {
            duplicates += 1
            if firstDuplicate == nil { firstDuplicate = source }
            return .duplicate
        }
        guard let file else { return .new }
        let key = Self.hash(file)
        if let earlier = files[key].map(Self.source) {
            guard keepingFirst, !(named && namedFiles.contains(key)) else { return .conflict(earlier: earlier) }
            laterEntries += 1
            if firstLater == nil { firstLater = (source, earlier) }
            return .later(than: earlier)
        }
        files[key] = Self.code(source)
        if keepingFirst, named { namedFiles.insert(key) }
        return .new
    }

    /// Whether the entry from `source`, saving to `file`, is the first of the list to save there (or `file` is not
    /// one an entry claimed): the one `-nc` retrieves.
    public func isFirst(_ source: Source, toSave file: String) -> Bool {
        files[Self.hash(file)].map { $0 == Self.code(source) } ?? true
    }

    /// The note saying which entries `-nc` does not retrieve because an earlier one saves the same file; `nil` when none.
    public var laterNote: String? {
        guard let (entry, earlier) = firstLater else { return nil }
        let which = Self.describe(entry), before = Self.describe(earlier)
        if laterEntries == 1 {
            return "\(which) saves to the same file as \(before); it is not retrieved (-nc keeps the first)"
        }
        return "\(laterEntries) entries save to a file an earlier entry saves to (the first: \(which), after \(before)); they are not retrieved (-nc keeps the first)"
    }

    private static func code(_ source: Source) -> Int {
        switch source {
        case .line(let line): return line
        case .argument(let position): return -position
        }
    }

    private static func source(_ code: Int) -> Source { code > 0 ? .line(code) : .argument(-code) }

    private static func describe(_ source: Source) -> String {
        switch source {
        case .line(let line): return "line \(line) of the URL list"
        case .argument(let position): return "URL \(position) of the command line"
        }
    }

    /// Lets go of the entries seen (kept only to count repeats while the batch is first read): what a session keeps
    /// for ``isClaimed(_:)`` through the run is the files named, not a hash of every line.
    public mutating func forgetEntries() {
        entries = []
    }

    /// Whether an entry claimed `path` as its file: a `--dir` download does not take that name.
    public func isClaimed(_ path: String) -> Bool {
        files[Self.hash(path)] != nil
    }

    /// The one line that refuses the batch: both entries, the file, and what to do.
    public static func conflict(earlier: Source, entry: Source, path: String) -> String {
        switch (earlier, entry) {
        case (.line(let first), .line(let second)):
            return "lines \(first) and \(second) of the URL list both save to \(path); give each URL a file of its own (out=NAME)"
        case (.argument(let first), .argument(let second)):
            return "URLs \(first) and \(second) of the command line both save to \(path); give each a file of its own (out=NAME lines in an -i list, or -o NAME one URL at a time)"
        case (.argument(let first), .line(let second)), (.line(let second), .argument(let first)):
            return "URL \(first) of the command line and line \(second) of the URL list both save to \(path); give the list's URL a file of its own (out=NAME)"
        }
    }

    /// The note saying how many entries were the same download as an earlier one, naming the first; `nil` when none.
    public var duplicateNote: String? {
        guard let first = firstDuplicate else { return nil }
        let which = Self.describe(first)
        if duplicates == 1 { return "\(which) repeats an earlier URL for the same place; it is downloaded once" }
        return "\(duplicates) entries repeat an earlier URL for the same place (the first: \(which)); each URL is downloaded once"
    }

    private static func hash(_ parts: String...) -> Int {
        var hasher = Hasher()
        for part in parts { hasher.combine(part) }
        return hasher.finalize()
    }
}
