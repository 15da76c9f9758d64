/// How `haul ls` lays out a session's tasks: in full (one task per line, every value whole: for scripts, for
/// output that is not a terminal and for `--wide`), or fitted to a terminal's width, where no line is wider than
/// the terminal. Pure.
///
/// Fitted, ids are their shortest unique prefixes (8 characters at least, as git shows commits); the columns
/// give way in a fixed order — the byte counts fold into a percentage, then the speed goes, then the
/// percentage — and paths are shortened in their folders first, with `…`. A NOTE (why a task failed, or why a
/// running one is not moving) is a column when it fits beside a readable path, else a line of its own under its
/// task.
package enum TaskTable {
    /// One task as the table shows it.
    public struct Row: Equatable, Sendable {
        /// The task's id (whole).
        public var id: String
        /// Its state's name (`running`, `failed`, …).
        public var state: String
        /// Bytes held.
        public var bytes: Int64
        /// The file's size, once known.
        public var total: Int64?
        /// The speed of a running task.
        public var bytesPerSecond: Double?
        /// Where the file goes (a path), or the URL (without secrets) while no path is known.
        public var path: String
        /// Why it failed, or why it is not moving.
        public var note: String?
        /// The URL (without secrets): a fitted table leaves it out of the note, where it says nothing new.
        public var url: String
        /// In a fleet, the node that runs the task (or ran it last): a NODE column when any row has one.
        public var node: String?

        /// A row with these values.
        public init(
            id: String, state: String, bytes: Int64, total: Int64? = nil, bytesPerSecond: Double? = nil, path: String, note: String? = nil,
            url: String = "", node: String? = nil
        ) {
            self.id = id
            self.state = state
            self.bytes = bytes
            self.total = total
            self.bytesPerSecond = bytesPerSecond
            self.path = path
            self.note = note
            self.url = url
            self.node = node
        }
    }

    /// Between columns.
    static let gap = "  "
    /// A path keeps at least this many columns (or its whole width, when shorter) before a column is left out.
    static let readablePath = 16
    /// A note on a line of its own is indented under the STATE column when at least this much room is left.
    static let readableNote = 24

    /// The table with every value whole (control characters shown as `?`, so a task stays on one line): a
    /// header and one line per task, columns padded to the widest value.
    public static func full(_ rows: [Row]) -> [String] {
        var blocks = Blocks()
        return fullBlock(rows, carrying: &blocks)
    }

    /// The table in at most `width` columns per line (an empty list for a width below 1).
    public static func fitted(_ rows: [Row], width: Int) -> [String] {
        var blocks = Blocks()
        return fittedBlock(rows, ids: uniquePrefixes(rows.map { clean($0.id) }), width: width, carrying: &blocks)
    }

    /// For each id, its shortest prefix that no other id starts with, of at least `minimum` characters (the whole
    /// id when shorter, or when it is itself the start of another: typing it whole names it). The rule is
    /// ``TaskIdIndex``'s, which a listing too large to hold uses over the whole session.
    public static func uniquePrefixes(_ ids: [String], minimum: Int = 8) -> [String] {
        let index = TaskIdIndex(ids)
        return ids.map { index.prefix(of: $0, minimum: minimum) }
    }

    // MARK: Layout

    /// A column other than the path and note, its cells already the text they show.
    struct Column {
        let header: String
        let cells: [String]
        let rightAligned: Bool
        /// The width of this column in the blocks before (see ``Blocks``).
        var minimum: Int
        /// Its widest cell or header (measured once: a block has thousands of rows).
        let natural: Int
        var width: Int { max(minimum, natural) }

        init(header: String, cells: [String], rightAligned: Bool = false, minimum: Int = 0) {
            self.header = header
            self.cells = cells
            self.rightAligned = rightAligned
            self.minimum = minimum
            natural = cells.reduce(TerminalText.width(header)) { max($0, TerminalText.width($1)) }
        }
    }

    /// The columns between STATE and PATH, richest first (a fleet's NODE goes last, with the byte counts). A SPEED
    /// column of dashes only says nothing: it is there when a task is `moving`; NODE when a task has a node (`fleet`).
    static func columnChoices(_ rows: [Row], moving: Bool, fleet: Bool) -> [[Column]] {
        let choices = byteColumnChoices(rows, moving: moving)
        guard fleet else { return choices }
        let node = Column(header: "NODE", cells: rows.map { clean($0.node ?? "-") })
        return choices.dropLast().map { $0 + [node] } + [[node], []]
    }

    static func byteColumnChoices(_ rows: [Row], moving: Bool) -> [[Column]] {
        let bytes = Column(header: "BYTES", cells: rows.map { ByteFormat.string($0.bytes) }, rightAligned: true)
        let total = Column(header: "TOTAL", cells: rows.map(totalText), rightAligned: true)
        let done = Column(header: "DONE", cells: rows.map(doneText), rightAligned: true)
        let speed = moving ? [Column(header: "SPEED", cells: rows.map(speedText), rightAligned: true)] : []
        return [[bytes, total] + speed, [done] + speed, [done], []]
    }

    /// The lines of a block (its header first), and the width each of its columns took, by header.
    static func layout(
        _ fixed: [Column], paths: [String], pathRoom: Int, notes: [String?], inline: Bool, width: Int, pathMinimum: Int = 0
    ) -> (lines: [String], widths: [String: Int]) {
        let shownPaths = paths.map { TerminalText.fitPath($0, width: pathRoom) }
        let pathColumn = Column(header: "PATH", cells: shownPaths, minimum: min(pathMinimum, pathRoom))
        var columns = fixed + [pathColumn]
        if inline { columns.append(Column(header: "NOTE", cells: notes.map { $0 ?? "" })) }
        // Each column measured its cells once already (its `width`).
        var lines = aligned([columns.map(\.header)] + shownPaths.indices.map { row in columns.map { $0.cells[row] } },
                            rightAligned: columns.map(\.rightAligned), widths: columns.map(\.width))
        let widths = Dictionary(columns.map { ($0.header, $0.width) }, uniquingKeysWith: max)
        guard !inline else { return (lines, widths) }
        // Notes on lines of their own, under the STATE column (or nearly flush left when that leaves too little).
        let underState = fixed[0].width + gap.count
        let indent = width - underState >= readableNote ? underState : min(2, width - 1)
        var result = [lines.removeFirst()]
        for (row, line) in lines.enumerated() {
            result.append(line)
            if let note = notes[row] {
                // What to do (`…; haul resume ID`) kept whole where it fits; what happened shortened instead.
                result.append(String(repeating: " ", count: indent) + BatchReport.fitReason(note, width: width - indent))
            }
        }
        return (result, widths)
    }

    /// Rows of cells padded to each column's width (in display columns, and at least its `minimums`), the last cell of
    /// a line unpadded and no trailing spaces.
    package static func aligned(_ table: [[String]], rightAligned: [Bool] = [], minimums: [Int] = []) -> [String] {
        aligned(table, rightAligned: rightAligned, widths: columnWidths(table, minimums: minimums))
    }

    /// Each column's widest cell (in display columns), and at least its `minimums`.
    static func columnWidths(_ table: [[String]], minimums: [Int] = []) -> [Int] {
        (0..<(table.first?.count ?? 0)).map { column in
            max(column < minimums.count ? minimums[column] : 0, table.map { TerminalText.width($0[column]) }.max() ?? 0)
        }
    }

    /// ``aligned(_:rightAligned:minimums:)`` with the columns' `widths` already measured.
    static func aligned(_ table: [[String]], rightAligned: [Bool], widths: [Int]) -> [String] {
        let count = widths.count
        return table.map { row in
            var text = ""
            for (column, cell) in row.enumerated() {
                if column > 0 { text += gap }
                let padding = String(repeating: " ", count: max(0, widths[column] - TerminalText.width(cell)))
                // Numbers and their headers are right-aligned.
                if column < rightAligned.count, rightAligned[column] {
                    text += padding + cell
                } else {
                    text += column == count - 1 ? cell : cell + padding
                }
            }
            while text.last == " " { text.removeLast() }
            return text
        }
    }

    // MARK: Cells

    static func clean(_ text: String) -> String { TerminalText.sanitized(text) }

    static func totalText(_ row: Row) -> String { row.total.map(ByteFormat.string) ?? "-" }

    static func speedText(_ row: Row) -> String {
        guard let speed = row.bytesPerSecond, speed.isFinite, speed >= 0, speed < 1e18 else { return "-" }
        return ByteFormat.string(Int64(speed)) + "/s"
    }

    /// How much is held: a percentage of a known size, else the bytes.
    static func doneText(_ row: Row) -> String {
        guard let total = row.total, total > 0 else { return row.state == "finished" ? "100%" : ByteFormat.string(row.bytes) }
        return "\(Int(min(max(Double(row.bytes) / Double(total) * 100, 0), 100)))%"
    }
}
