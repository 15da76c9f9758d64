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
        let fleet = rows.contains { $0.node != nil }
        let header = ["ID", "STATE", "BYTES", "TOTAL", "SPEED"] + (fleet ? ["NODE"] : []) + ["PATH", "NOTE"]
        let cells = rows.map { row in
            [clean(row.id), row.state, ByteFormat.string(row.bytes), totalText(row), speedText(row)] + (fleet ? [clean(row.node ?? "-")] : [])
                + [clean(row.path), clean(row.note ?? "")]
        }
        return aligned([header] + cells)
    }

    /// The table in at most `width` columns per line (an empty list for a width below 1).
    public static func fitted(_ rows: [Row], width: Int) -> [String] {
        guard width > 0 else { return [] }
        let ids = uniquePrefixes(rows.map { clean($0.id) })
        let notes = rows.map { row in
            row.note.map { clean(BatchReport.withoutURL($0, row.url)) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        let paths = rows.map { clean($0.path) }
        let pathWidth = paths.map(TerminalText.width).max() ?? 0
        let wantedPath = min(max(pathWidth, 4), readablePath)
        let noteWidth = notes.compactMap { $0.map(TerminalText.width) }.max()
        for columns in columnChoices(rows) {
            let fixed = [Column(header: "ID", cells: ids), Column(header: "STATE", cells: rows.map(\.state))] + columns
            let fixedWidth = fixed.reduce(0) { $0 + $1.width + gap.count }
            let room = width - fixedWidth
            if let noteWidth, room - gap.count - noteWidth >= wantedPath {
                let pathRoom = min(room - gap.count - noteWidth, max(pathWidth, 4))
                return layout(fixed, paths: paths, pathRoom: pathRoom, notes: notes, inline: true, width: width)
            }
            if room >= wantedPath {
                return layout(fixed, paths: paths, pathRoom: min(room, max(pathWidth, 4)), notes: notes, inline: false, width: width)
            }
        }
        // Narrower still: the id and state, and what is left of the path; every line cut at the end.
        let fixed = [Column(header: "ID", cells: ids), Column(header: "STATE", cells: rows.map(\.state))]
        let room = width - fixed.reduce(0) { $0 + $1.width + gap.count }
        return layout(fixed, paths: paths, pathRoom: max(room, 1), notes: notes, inline: false, width: width)
            .map { TerminalText.fit($0, width: width, cut: .end) }
    }

    /// For each id, its shortest prefix that no other id starts with, of at least `minimum` characters (the whole
    /// id when shorter, or when it is itself the start of another: typing it whole names it).
    public static func uniquePrefixes(_ ids: [String], minimum: Int = 8) -> [String] {
        let characters = ids.map(Array.init)
        let order = characters.indices.sorted { characters[$0].lexicographicallyPrecedes(characters[$1]) }
        var needed = [Int](repeating: max(minimum, 1), count: ids.count)
        // In sorted order, the longest common prefix an id shares with any other is shared with a neighbour.
        for (position, index) in order.enumerated() where position > 0 {
            let previous = order[position - 1]
            let common = commonPrefixLength(characters[previous], characters[index])
            needed[index] = max(needed[index], common + 1)
            needed[previous] = max(needed[previous], common + 1)
        }
        return ids.indices.map { String(characters[$0].prefix(needed[$0])) }
    }

    // MARK: Layout

    /// A column other than the path and note, its cells already the text they show.
    struct Column {
        var header: String
        var cells: [String]
        var rightAligned = false
        var width: Int { ([header] + cells).map(TerminalText.width).max() ?? 0 }
    }

    /// The columns between STATE and PATH, richest first (a fleet's NODE goes last, with the byte counts).
    static func columnChoices(_ rows: [Row]) -> [[Column]] {
        let choices = byteColumnChoices(rows)
        guard rows.contains(where: { $0.node != nil }) else { return choices }
        let node = Column(header: "NODE", cells: rows.map { clean($0.node ?? "-") })
        return choices.dropLast().map { $0 + [node] } + [[node], []]
    }

    static func byteColumnChoices(_ rows: [Row]) -> [[Column]] {
        let bytes = Column(header: "BYTES", cells: rows.map { ByteFormat.string($0.bytes) }, rightAligned: true)
        let total = Column(header: "TOTAL", cells: rows.map(totalText), rightAligned: true)
        let done = Column(header: "DONE", cells: rows.map(doneText), rightAligned: true)
        // A speed column of dashes only says nothing: it is left out when no task is moving.
        let speeds = rows.map(speedText)
        let speed = speeds.contains { $0 != "-" } ? [Column(header: "SPEED", cells: speeds, rightAligned: true)] : []
        return [[bytes, total] + speed, [done] + speed, [done], []]
    }

    static func layout(_ fixed: [Column], paths: [String], pathRoom: Int, notes: [String?], inline: Bool, width: Int) -> [String] {
        let shownPaths = paths.map { TerminalText.fitPath($0, width: pathRoom) }
        let pathColumn = Column(header: "PATH", cells: shownPaths)
        var columns = fixed + [pathColumn]
        if inline { columns.append(Column(header: "NOTE", cells: notes.map { $0 ?? "" })) }
        var lines = aligned([columns.map(\.header)] + shownPaths.indices.map { row in columns.map { $0.cells[row] } },
                            rightAligned: columns.map(\.rightAligned))
        guard !inline else { return lines }
        // Notes on lines of their own, under the STATE column (or nearly flush left when that leaves too little).
        let underState = fixed[0].width + gap.count
        let indent = width - underState >= readableNote ? underState : min(2, width - 1)
        var result = [lines.removeFirst()]
        for (row, line) in lines.enumerated() {
            result.append(line)
            if let note = notes[row] {
                result.append(String(repeating: " ", count: indent) + TerminalText.fit(note, width: width - indent, cut: .end))
            }
        }
        return result
    }

    /// Rows of cells padded to each column's width (in display columns), the last cell of a line unpadded and no
    /// trailing spaces.
    package static func aligned(_ table: [[String]], rightAligned: [Bool] = []) -> [String] {
        let count = table.first?.count ?? 0
        let widths = (0..<count).map { column in table.map { TerminalText.width($0[column]) }.max() ?? 0 }
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

    static func commonPrefixLength(_ a: [Character], _ b: [Character]) -> Int {
        var length = 0
        while length < a.count, length < b.count, a[length] == b[length] { length += 1 }
        return length
    }
}
