extension TaskTable {
    /// What a table shown in blocks (a session too large to align over every row at once, see ``TaskListing``)
    /// carries from one block to the next, so that the blocks read as one table. Pure.
    ///
    /// - Widths only widen: every column is at least as wide as it was in the blocks before, so a later block lines
    ///   up with the earlier ones whenever its values fit those widths (a wider value widens its column from there on).
    /// - The header is shown with the first block, and again only above a block whose columns differ from those of
    ///   the block before (fitted to a terminal, a block keeps the columns of the one before whenever they fit the
    ///   width; when they do not, it chooses its own as a first block does: BYTES and TOTAL fold into DONE, then
    ///   SPEED goes, then DONE). SPEED, once a task was moving, and NODE, once a task had a node, stay.
    /// - Fitted, every line still fits the width: the carried widths are counted before the path takes what is left.
    public struct Blocks: Equatable, Sendable {
        /// The width each column has had so far, by header.
        var widths: [String: Int] = [:]
        /// The headers of the block before (nil before the first block).
        var headers: [String]?
        /// Whether a task so far was moving (then a SPEED column has something to say).
        var moving = false
        /// Whether a task so far had a node (a fleet's NODE column).
        var fleet = false

        /// Nothing carried yet: the first block is laid out as a table of its own.
        public init() {}

        /// The lines of a block whose header line is `lines[0]`: without it when the block before had the same
        /// headers. Records the block's headers and widths.
        mutating func shown(_ lines: [String], headers: [String], widths: [String: Int]) -> [String] {
            self.widths.merge(widths, uniquingKeysWith: max)
            defer { self.headers = headers }
            return self.headers == headers ? Array(lines.dropFirst()) : lines
        }
    }

    /// One block of the table ``full(_:)`` shows (every value whole), carrying `blocks` from the block before.
    public static func fullBlock(_ rows: [Row], carrying blocks: inout Blocks) -> [String] {
        blocks.fleet = blocks.fleet || rows.contains { $0.node != nil }
        let fleet = blocks.fleet
        let header = ["ID", "STATE", "BYTES", "TOTAL", "SPEED"] + (fleet ? ["NODE"] : []) + ["PATH", "NOTE"]
        let cells = rows.map { row in
            [clean(row.id), row.state, ByteFormat.string(row.bytes), totalText(row), speedText(row)] + (fleet ? [clean(row.node ?? "-")] : [])
                + [clean(row.path), clean(row.note ?? "")]
        }
        let table = [header] + cells
        let widths = columnWidths(table, minimums: header.map { blocks.widths[$0] ?? 0 })
        let lines = aligned(table, rightAligned: [], widths: widths)
        return blocks.shown(lines, headers: header, widths: Dictionary(zip(header, widths), uniquingKeysWith: max))
    }

    /// One block of the table ``fitted(_:width:)`` shows (no line wider than `width`; none for a width below 1), its
    /// ids already shortened (`ids[i]` for `rows[i]`), carrying `blocks` from the block before.
    public static func fittedBlock(_ rows: [Row], ids: [String], width: Int, carrying blocks: inout Blocks) -> [String] {
        guard width > 0 else { return [] }
        blocks.moving = blocks.moving || rows.contains { speedText($0) != "-" }
        blocks.fleet = blocks.fleet || rows.contains { $0.node != nil }
        let notes = rows.map { row in
            row.note.map { clean(BatchReport.withoutURL($0, row.url)) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        let paths = rows.map { clean($0.path) }
        let pathMinimum = blocks.widths["PATH"] ?? 0
        let pathWidth = max(paths.map(TerminalText.width).max() ?? 0, pathMinimum)
        let wantedPath = min(max(pathWidth, 4), readablePath)
        // The NOTE column is at least as wide as its header.
        let noteWidth = notes.compactMap { $0.map(TerminalText.width) }.max().map { max($0, 4) }
        let carried = blocks.widths
        func withMinimum(_ column: Column) -> Column {
            var column = column
            column.minimum = carried[column.header] ?? 0
            return column
        }
        let leading = [Column(header: "ID", cells: ids), Column(header: "STATE", cells: rows.map(\.state))].map(withMinimum)
        let choices = columnChoices(rows, moving: blocks.moving, fleet: blocks.fleet).map { $0.map(withMinimum) }

        /// The lines of `fixed` with the note inline or not, when the path keeps readable room.
        func attempt(_ fixed: [Column], inline: Bool) -> (lines: [String], headers: [String], widths: [String: Int])? {
            let room = width - fixed.reduce(0) { $0 + $1.width + gap.count }
            let pathRoom: Int
            if inline {
                let note = noteWidth ?? 4
                guard room - gap.count - note >= wantedPath else { return nil }
                pathRoom = min(room - gap.count - note, max(pathWidth, 4))
            } else {
                guard room >= wantedPath else { return nil }
                pathRoom = min(room, max(pathWidth, 4))
            }
            let laid = layout(fixed, paths: paths, pathRoom: pathRoom, notes: notes, inline: inline, width: width, pathMinimum: pathMinimum)
            return (laid.lines, fixed.map(\.header) + ["PATH"] + (inline ? ["NOTE"] : []), laid.widths)
        }

        var tries = choices.flatMap { columns in (noteWidth == nil ? [false] : [true, false]).map { (leading + columns, $0) } }
        // The columns of the block before first, when this block has them too (its notes inline even when it has none).
        if let previous = blocks.headers {
            let same = choices.flatMap { columns in [true, false].map { (leading + columns, $0) } }.first { fixed, inline in
                fixed.map(\.header) + ["PATH"] + (inline ? ["NOTE"] : []) == previous
            }
            if let same { tries.insert(same, at: 0) }
        }
        for (fixed, inline) in tries {
            if let laid = attempt(fixed, inline: inline) { return blocks.shown(laid.lines, headers: laid.headers, widths: laid.widths) }
        }
        // Narrower still: the id and state, and what is left of the path; every line cut at the end.
        let room = width - leading.reduce(0) { $0 + $1.width + gap.count }
        let laid = layout(leading, paths: paths, pathRoom: max(room, 1), notes: notes, inline: false, width: width, pathMinimum: pathMinimum)
        return blocks.shown(laid.lines.map { TerminalText.fit($0, width: width, cut: .end) }, headers: ["ID", "STATE", "PATH"], widths: laid.widths)
    }
}
