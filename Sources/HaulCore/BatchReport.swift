/// What a batch of downloads (`haul get` with several URLs, `haul watch`) prints besides its live view: a line
/// per file while they fit on the terminal, then a count; and at the end a summary that names the failures. Every
/// line for a terminal fits its width. Pure.
package enum BatchReport {
    /// A download that failed, as the summary names it.
    public struct Failure: Equatable, Sendable {
        /// The URL, without secrets.
        public var url: String
        /// The file it was to be saved as, when known.
        public var path: String?
        /// Why it failed (one line; it may name the URL).
        public var message: String

        /// A failure with these values.
        public init(url: String, path: String? = nil, message: String) {
            self.url = url
            self.path = path
            self.message = message
        }
    }

    /// The failures the summary names one by one; the rest are counted.
    public static let namedFailures = 10
    /// A name or URL keeps at least this many columns beside its reason.
    static let readableSubject = 16

    /// How many per-file lines a terminal of `rows` rows may show above a live view of at most `live` downloads
    /// before they would push one another off the screen: the rows the view does not need (it takes a line per
    /// download, one for those starting or hidden, and its total), less one for the line that says the rest are
    /// counted and one for the cursor.
    public static func listedLines(rows: Int, live: Int) -> Int {
        let view = min(max(live, 0) + 2, max(rows - 1, 1))
        return max(0, rows - view - 2)
    }

    /// Said once, when a terminal's per-file lines stop.
    public static let countedNotice = "\(TerminalText.ellipsis) more files are counted, not listed (--verbose lists each)"

    /// `saved PATH (SIZE)`, the path shortened in its folders to fit `width` (nil: whole).
    public static func savedLine(path: String, size: String, width: Int?) -> String {
        pathLine("saved ", path, " (\(size))", width: width)
    }

    /// `PATH is already there; not retrieving it (-nc)`: wget's `-nc` left the file as it was. Fitted as ``savedLine(path:size:width:)``.
    public static func keptLine(path: String, width: Int?) -> String {
        pathLine("", path, " is already there; not retrieving it (-nc)", width: width)
    }

    private static func pathLine(_ prefix: String, _ path: String, _ suffix: String, width: Int?) -> String {
        let path = TerminalText.sanitized(path)
        guard let width else { return prefix + path + suffix }
        let room = width - TerminalText.width(prefix) - TerminalText.width(suffix)
        guard room >= 8 else { return TerminalText.fit(prefix + TerminalText.fitPath(path, width: max(room, 1)) + suffix, width: width, cut: .end) }
        return prefix + TerminalText.fitPath(path, width: room) + suffix
    }

    /// One failure on a line starting with `lead`: whole (`URL: reason`, the URL said once) without a width; else
    /// the file's name (or the URL while there is none) and the reason, each shortened to share `width`.
    public static func failureLine(_ failure: Failure, lead: String = "", width: Int?) -> String {
        let message = TerminalText.sanitized(failure.message)
        let url = TerminalText.sanitized(failure.url)
        guard let width else { return lead + (message.contains(url) ? message : url + ": " + message) }
        let subject = failure.path.map(TerminalText.sanitized).map(fileName) ?? url
        let reason = withoutURL(message, url)
        let room = width - TerminalText.width(lead) - 2
        let reasonWidth = TerminalText.width(reason)
        let subjectWidth = TerminalText.width(subject)
        var subjectRoom = room - reasonWidth >= min(subjectWidth, readableSubject)
            ? room - reasonWidth
            : min(subjectWidth, max(readableSubject, room / 2))
        // A reason that must be shortened keeps what to do (``fitReason(_:width:)``) when the subject can give up the
        // room, down to a readable name.
        if room - subjectRoom < reasonWidth, let needed = widthKeepingHint(reason), room - needed >= readableSubject {
            subjectRoom = min(subjectRoom, room - needed)
        }
        // A URL keeps its last part whole where it can, as a path keeps its file name.
        let fittedSubject = TerminalText.fitPath(subject, width: subjectRoom)
        let reasonRoom = width - TerminalText.width(lead) - TerminalText.width(fittedSubject) - 2
        let line = lead + fittedSubject + ": " + fitReason(reason, width: reasonRoom)
        return TerminalText.fit(line, width: width, cut: .end)
    }

    /// `reason` in `width` columns: a reason that ends with what to do ("…; check the URL") keeps that end whole
    /// where it leaves room for a readable start, and what happened is shortened instead.
    static func fitReason(_ reason: String, width: Int) -> String {
        guard width > 0, TerminalText.width(reason) > width else { return reason }
        if let needed = widthKeepingHint(reason), width >= needed, let split = reason.range(of: "; ", options: .backwards) {
            let hint = "; " + reason[split.upperBound...]
            return TerminalText.fit(String(reason[..<split.lowerBound]), width: width - TerminalText.width(hint), cut: .end) + hint
        }
        return TerminalText.fit(reason, width: width, cut: .end)
    }

    /// The fewest columns in which ``fitReason(_:width:)`` keeps `reason`'s advice (after its last "; ") whole, with
    /// a readable start; `nil` when it gives none.
    static func widthKeepingHint(_ reason: String) -> Int? {
        guard let split = reason.range(of: "; ", options: .backwards) else { return nil }
        return TerminalText.width("; " + reason[split.upperBound...]) + readableSubject
    }

    /// The end of a batch: the counts, then the first ``namedFailures`` failures one per line (indented) and how
    /// many more there were. `width` is the terminal's (nil: not a terminal, every line whole).
    /// `failed`: how many failed in all, when `failures` holds only the first of them (a batch too long to hold).
    public static func summary(finished: Int, failures: [Failure], failed: Int? = nil, width: Int?) -> [String] {
        let failed = max(failed ?? failures.count, failures.count)
        let counts = "\(finished) finished, \(failed) failed"
        var lines = [width.map { TerminalText.fit(counts, width: $0, cut: .end) } ?? counts]
        for failure in failures.prefix(namedFailures) {
            lines.append(failureLine(failure, lead: "  ", width: width))
        }
        if failed > namedFailures {
            let more = "  \(TerminalText.ellipsis) and \(failed - namedFailures) more"
            lines.append(width.map { TerminalText.fit(more, width: $0, cut: .end) } ?? more)
        }
        return lines
    }

    /// The line of a batch stopped by Ctrl-C or SIGTERM: how many downloads were left paused and how many had failed
    /// (the same command resumes the one and retries the other).
    public static func interruptedLine(paused: Int, failed: Int) -> String {
        let downloads = paused == 1 ? "1 download" : "\(paused) downloads"
        guard failed > 0 else { return "paused \(downloads); run the same command again to resume" }
        return "paused \(downloads), \(failed) failed; run the same command again to resume and retry them"
    }

    /// What a rerun of a batch finds at the path of a file an earlier run saved.
    public enum SavedFile: Equatable, Sendable {
        /// A regular file of the length saved: counted as finished.
        case intact
        /// Nothing there any more (deleted, moved): fetched again.
        case gone
        /// Something else there: a file of another length (truncated, rewritten), or not a regular file (`length`
        /// `nil`). Left as it is; the URL is fetched again beside it, under a free name (as wget, which never writes
        /// over a file it did not just create, names it `.1`).
        case changed(length: Int64?)
    }

    /// Judges what is at a saved file's path: `found` is its kind and length (`nil`: nothing there), `saved` the
    /// length the earlier run saved.
    public static func savedFile(found: (isRegular: Bool, length: Int64)?, saved: Int64) -> SavedFile {
        guard let found else { return .gone }
        guard found.isRegular else { return .changed(length: nil) }
        return found.length == saved ? .intact : .changed(length: found.length)
    }

    /// Said when a rerun finds a saved file changed: what is there (`length`, `nil` for not a regular file), and what
    /// happens.
    public static func changedLine(path: String, length: Int64?, saved: Int64) -> String {
        let now = length.map { "\(ByteFormat.string($0))" } ?? "not a regular file"
        return "\(path) is not the file saved (\(now), saved \(ByteFormat.string(saved))); it is left as it is, and the URL is fetched again under a free name"
    }

    /// `text` without `url` where it names it, when something names the URL already (a line of its own, a
    /// column): "http://h/f answered 404" → "answered 404", "retry 1/5 in 3 s: http://h/f answered 503" → "retry
    /// 1/5 in 3 s: answered 503". Unchanged when nothing would be left.
    public static func withoutURL(_ text: String, _ url: String) -> String {
        guard !url.isEmpty, let range = text.range(of: url) else { return text }
        var rest = text[range.upperBound...]
        while rest.first == " " || rest.first == ":" { rest.removeFirst() }
        let result = String(text[..<range.lowerBound]) + rest
        return result.allSatisfy({ $0 == " " || $0 == ":" }) ? text : result
    }

    /// The last part of a path.
    static func fileName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), path.index(after: slash) < path.endIndex else { return path }
        return String(path[path.index(after: slash)...])
    }
}
