/// A URL list as `-i FILE` takes it: wget's (one URL per line) and aria2c's, whose URL line may be followed by
/// indented option lines (`  out=NAME`, `  dir=FOLDER`, `  checksum=sha-256=HEX`, `  header=Name: value`) that
/// apply to that URL only. Blank lines and lines starting with `#` are skipped.
public enum InputList {
    /// One URL of the list with its own options.
    public struct Entry: Equatable, Sendable {
        /// The URL as written (checked later, like a URL given as an argument).
        public var url: String
        /// `out=`: the file name, relative to the folder (``directory``, else the command's `--dir`).
        public var output: String?
        /// `dir=`: the folder to save into.
        public var directory: String?
        /// `checksum=`: `ALG=HEX` (aria2c's `sha-256=…`) or `ALG:HEX`.
        public var checksum: String?
        /// `header=`: extra request headers, `Name: value`, in order.
        public var headers: [String] = []
        /// The line the URL is on (1-based), for messages.
        public var line: Int

        /// An entry for `url` on `line` without options.
        public init(url: String, line: Int) {
            self.url = url
            self.line = line
        }
    }

    /// The options an indented line may set.
    public static let options = ["out", "dir", "checksum", "header"]

    /// The entries of `text`. An option line that is not `name=value`, names an option other than ``options``,
    /// comes before any URL or repeats a one-time option is an error naming its line; so is a line of several
    /// TAB-separated URLs (aria2c's mirrors of one file). A byte-order mark before the first line is skipped, as
    /// ``URLListScanner`` skips it.
    public static func parse(_ text: String) throws(InputError) -> [Entry] {
        var text = Substring(text)
        if text.unicodeScalars.first == "\u{FEFF}" { text = Substring(text.unicodeScalars.dropFirst()) }
        var builder = Builder()
        var entries: [Entry] = []
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (index, rawLine) in lines.enumerated() {
            var line = Substring(rawLine)
            if line.hasSuffix("\r") { line = line.dropLast() }
            let trimmed = line.trimmingASCIIWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if let entry = try builder.add(trimmed, indented: line.first == " " || line.first == "\t", line: index + 1) {
                entries.append(entry)
            }
        }
        if let last = builder.finish() { entries.append(last) }
        return entries
    }

    /// Builds entries from a list's lines as they arrive (a list is never held whole): a URL line begins an entry,
    /// the indented option lines after it add to it.
    public struct Builder: Sendable {
        private var current: Entry?

        /// A builder before the first line.
        public init() {}

        /// Takes the next line that is not blank nor a comment (`text` without the spaces around it; `indented` when
        /// it began with a space or TAB; `line` its number). Returns the entry it completes: the previous URL's,
        /// once a new URL begins.
        public mutating func add(_ text: String, indented: Bool, line number: Int) throws(InputError) -> Entry? {
            if indented, let option = InputList.optionLine(text) {
                guard var entry = current else {
                    throw InputError("line \(number) of the URL list sets \(option.name)= before any URL")
                }
                try InputList.apply(option, to: &entry, line: number)
                current = entry
                return nil
            }
            if indented, !text.contains("://") {
                throw InputError("line \(number) of the URL list is indented but is not an option (name=value): give options as \(options.map { $0 + "=" }.joined(separator: ", "))")
            }
            let urls = text.split(separator: "\t").map { $0.trimmingASCIIWhitespace() }.filter { !$0.isEmpty }
            if urls.count > 1 {
                throw InputError("line \(number) of the URL list gives \(urls.count) URLs separated by TABs (aria2c's mirrors of one file); haul fetches a file from one URL: keep one")
            }
            let finished = current
            current = Entry(url: text, line: number)
            return finished
        }

        /// The last entry, once the list has ended.
        public mutating func finish() -> Entry? {
            defer { current = nil }
            return current
        }
    }

    /// `name=value` with a name of letters and dashes; `nil` for anything else.
    static func optionLine(_ text: String) -> (name: String, value: String)? {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else { return nil }
        let name = text[..<equals]
        guard name.allSatisfy({ ($0.isASCII && $0.isLetter) || $0 == "-" }) else { return nil }
        return (name.lowercased(), String(text[text.index(after: equals)...]))
    }

    private static func apply(_ option: (name: String, value: String), to entry: inout Entry, line: Int) throws(InputError) {
        let value = option.value.trimmingASCIIWhitespace()
        func once(_ current: String?) throws(InputError) -> String {
            guard current == nil else { throw InputError("line \(line) of the URL list sets \(option.name)= a second time for \(entry.url)") }
            guard !value.isEmpty else { throw InputError("line \(line) of the URL list gives \(option.name)= no value") }
            return value
        }
        switch option.name {
        case "out": entry.output = try once(entry.output)
        case "dir": entry.directory = try once(entry.directory)
        case "checksum": entry.checksum = try once(entry.checksum)
        case "header":
            guard !value.isEmpty else { throw InputError("line \(line) of the URL list gives header= no value") }
            entry.headers.append(value)
        default:
            throw InputError("line \(line) of the URL list sets \(option.name)=, which haul does not take in a list; per-URL options are \(options.map { $0 + "=" }.joined(separator: ", ")) (give others as flags)")
        }
    }
}
