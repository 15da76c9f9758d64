/// `haul ls` as a table, in memory bounded whatever the session's size: the listing's pages go in as they arrive
/// and lines come out to print. Pure (the command does the listing and the printing).
///
/// - A session of at most `blockSize` tasks (``TaskListing/blockSize``, 10,000) is one table aligned over every row,
///   exactly ``TaskTable/fitted(_:width:)`` or ``TaskTable/full(_:)``: its rows are kept while they fit one block, so
///   it is listed once.
/// - A larger one is shown in blocks of `blockSize` rows, each aligned on its own, carrying ``TaskTable/Blocks`` from
///   one to the next (columns only widen; the header once, again only when the columns change).
/// - With every value whole (`width` nil), the blocks are shown as the pages come: one listing.
/// - Fitted to a terminal, ids are their shortest unique prefixes over the whole session (users type them into
///   `haul pause` and `haul rm`, which refuse an ambiguous one). So the first listing keeps only the ids, in a
///   ``TaskIdIndex`` (16 bytes for a daemon's UUID), and the session is listed a second time (``needsSecondListing``)
///   to show its rows, each id's prefix found from its neighbours in sorted order. A task added between the two
///   listings is given the prefix it has among the ids of the first and itself (two such tasks sharing their first
///   eight characters or more could then show the same prefix, which `haul pause` would refuse as ambiguous); a task
///   removed between them is not shown.
package struct TaskListing: Sendable {
    /// Rows a table aligns over at once: the most a session can hold and still be one table aligned over every row,
    /// and the rows held at a time (a few MiB) when it is larger.
    public static let blockSize = 10_000

    /// The terminal's width, or nil for every value whole.
    public let width: Int?
    /// Rows per block (``blockSize`` unless a test says otherwise).
    public let rowsPerBlock: Int
    /// Whether the session must be listed a second time, its pages given to ``take(_:)`` and its end to ``end()``.
    public private(set) var needsSecondListing = false

    private var held: [TaskTable.Row] = []
    /// Set once the session proved larger than one block.
    private var blocked = false
    /// Fitted and blocked: the ids of the first listing.
    private var index = TaskIdIndex()
    private var blocks = TaskTable.Blocks()
    private var shownAny = false

    /// A listing fitted to `width` columns, or with every value whole when `width` is nil.
    public init(width: Int?, rowsPerBlock: Int = Self.blockSize) {
        self.width = width
        self.rowsPerBlock = max(1, rowsPerBlock)
    }

    /// A page of the listing (in the order the session lists its tasks): the lines to print now.
    public mutating func take(_ page: [TaskTable.Row]) -> [String] {
        if width != nil, blocked, !needsSecondListing {
            // Fitted, the first listing of a large session: its ids only.
            for row in page { index.insert(TaskTable.clean(row.id)) }
            return []
        }
        held += page
        if !blocked {
            guard held.count > rowsPerBlock else { return [] }
            blocked = true
            if width != nil {
                // Larger than one block, fitted: from here on the first listing keeps ids, not rows.
                for row in held { index.insert(TaskTable.clean(row.id)) }
                held = []
                return []
            }
        }
        var lines: [String] = []
        var start = 0
        while held.count - start >= rowsPerBlock {
            lines += block(Array(held[start..<start + rowsPerBlock]))
            start += rowsPerBlock
        }
        held.removeFirst(start)
        return lines
    }

    /// The end of a listing: the lines to print now (then see ``needsSecondListing``).
    public mutating func end() -> [String] {
        if !blocked {
            // One block: the table aligned over every row, as it always was.
            defer { held = [] }
            return width.map { TaskTable.fitted(held, width: $0) } ?? TaskTable.full(held)
        }
        if width != nil, !needsSecondListing {
            index.sort()
            needsSecondListing = true
            return []
        }
        needsSecondListing = false
        // The last block, or the header alone when the session was emptied in between.
        guard !held.isEmpty || !shownAny else { return [] }
        defer { held = [] }
        return block(held)
    }

    private mutating func block(_ rows: [TaskTable.Row]) -> [String] {
        shownAny = true
        guard let width else { return TaskTable.fullBlock(rows, carrying: &blocks) }
        return TaskTable.fittedBlock(rows, ids: rows.map { index.prefix(of: TaskTable.clean($0.id)) }, width: width, carrying: &blocks)
    }
}
