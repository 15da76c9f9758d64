/// The note of a waiting task that its host's limit holds back while its session has room for more, as `haul ls`
/// and `--json` show it, and the limit read back from it (a live view following a daemon's tasks says it beside its
/// counts, as a batch's does).
public enum HeldBackNote {
    private static let prefix = "held back: "
    private static let middle = " downloads from "
    private static let suffix = " at once (the per-host limit)"

    /// "held back: 8 downloads from example.com:443 at once (the per-host limit)".
    public static func text(limit: Int, host: String) -> String {
        prefix + String(limit) + middle + host + suffix
    }

    /// The note of every waiting task of a session whose limit is 0 downloads at once (`haul session set
    /// --max-concurrent 0` holds them all): none starts until the limit is raised.
    public static let sessionRunsNone = "held back: the session runs 0 downloads at once (its limit)"

    /// The limit a note written by ``text(limit:host:)`` names; `nil` for any other note.
    public static func limit(in note: String?) -> Int? {
        guard let note, note.hasPrefix(prefix), note.hasSuffix(suffix) else { return nil }
        let digits = note.dropFirst(prefix.count).prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, note.dropFirst(prefix.count + digits.count).hasPrefix(middle) else { return nil }
        return Int(digits)
    }
}
