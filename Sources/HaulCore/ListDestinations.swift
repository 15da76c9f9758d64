/// The files a URL list names (`out=`, or `dir=` with `out=`), checked as the list is read: two lines that save to
/// the same file would have their downloads meet at it, the second refused for a reason no list explains (another
/// download of this process holds it). aria2c renames the second (`same.1.bin`); a list that names its files means
/// them, so Haul refuses the list before any download, naming both lines.
///
/// Kept small for lists of a million lines: a 64-bit hash of each path and its line, not the path (two different
/// paths share a hash with odds of about one in 10^7 for a million of them).
public struct ListDestinations: Sendable {
    private var lines: [Int: Int] = [:]

    /// No file named yet.
    public init() {}

    /// Notes that the entry on `line` saves to `path`; returns the earlier line that saves there, if any.
    public mutating func claim(_ path: String, line: Int) -> Int? {
        var hasher = Hasher()
        hasher.combine(path)
        let key = hasher.finalize()
        if let earlier = lines[key] { return earlier }
        lines[key] = line
        return nil
    }

    /// The one line that refuses the list: both lines, the file, and what to do.
    public static func conflict(earlier: Int, line: Int, path: String) -> String {
        "lines \(earlier) and \(line) of the URL list both save to \(path); give each URL a file of its own (out=NAME)"
    }
}
