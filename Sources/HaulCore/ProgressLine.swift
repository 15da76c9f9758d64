import Foundation

/// How live progress is laid out for a terminal of a given size: one line per download, and the view of
/// several downloads with their total. Every line fits its width (counted in display columns); what does
/// not fit is left out in a fixed order — the ETA first, then the speed, then the byte counts, keeping the
/// percentage — and a name is shortened in the middle with `…`.
package enum ProgressLine {
    /// What one line shows.
    public struct State: Equatable, Sendable {
        /// The download's name (a file name); nil for the line of a single download.
        public var name: String?
        /// Bytes held so far; nil before the download has started ("starting").
        public var bytes: Int64?
        /// The file's size, once known.
        public var total: Int64?
        /// The recent speed.
        public var bytesPerSecond: Double?
        /// Seconds left at that speed.
        public var secondsRemaining: Double?
        /// Why the download is not moving ("retry 2/5 in 4 s: connection refused", "waiting for a connection to
        /// host"): shown in the place of the figures, which would only say it is stuck.
        public var note: String?
        /// What the line shows at its end only when there is room to spare (the URL beside a file name).
        public var detail: String?

        /// A line's state with these values.
        public init(
            name: String? = nil, bytes: Int64?, total: Int64? = nil, bytesPerSecond: Double? = nil, secondsRemaining: Double? = nil,
            note: String? = nil, detail: String? = nil
        ) {
            self.name = name
            self.bytes = bytes
            self.total = total
            self.bytesPerSecond = bytesPerSecond
            self.secondsRemaining = secondsRemaining
            self.note = note
            self.detail = detail
        }

        /// Whether the line has something to say beyond "starting": bytes, or a note.
        public var isMoving: Bool { bytes != nil || note != nil }
    }

    /// Between fields.
    static let gap = "  "
    /// A name keeps at least this many columns (or its whole width, when shorter) before a field is left out.
    static let readableName = 12
    /// The detail is shown only with this many columns to spare (or its whole width): a few characters of a URL
    /// say nothing.
    static let readableDetail = 24

    /// One line of at most `width` columns (the empty string for a width below 1): the name, the figures or the
    /// note, and the detail when there is room for it.
    public static func render(_ state: State, width: Int) -> String {
        let line = main(state, width: width)
        guard let detail = state.detail.map(TerminalText.sanitized), !detail.isEmpty else { return line }
        let spare = width - TerminalText.width(line) - gap.count
        guard spare >= min(TerminalText.width(detail), readableDetail) else { return line }
        // A URL keeps its last part, as a path its file name.
        return line + gap + TerminalText.fitPath(detail, width: spare)
    }

    /// The line without its detail.
    static func main(_ state: State, width: Int) -> String {
        guard width > 0 else { return "" }
        let name = state.name.map(TerminalText.sanitized)
        if let note = state.note.map(TerminalText.sanitized) { return noted(name, note, width: width) }
        let choices = fieldChoices(state).map { $0.joined(separator: gap) }
        for stats in choices {
            let statsWidth = TerminalText.width(stats)
            guard let name else {
                if statsWidth <= width { return stats }
                continue
            }
            let room = width - statsWidth - gap.count
            if room >= min(TerminalText.width(name), readableName) {
                return TerminalText.fit(name, width: room, cut: .middle) + gap + stats
            }
        }
        // Narrower still: the fewest fields, with what is left of the name (two columns at least), else the
        // fields alone, shortened at the end.
        let stats = choices.last ?? ""
        let room = width - TerminalText.width(stats) - gap.count
        if let name, room >= 2 {
            return TerminalText.fit(name, width: room, cut: .middle) + gap + stats
        }
        return TerminalText.fit(stats, width: width, cut: .end)
    }

    /// A name and a note: the note whole when the name keeps a readable part, else the note shortened at its end.
    static func noted(_ name: String?, _ note: String, width: Int) -> String {
        guard let name else { return TerminalText.fit(note, width: width, cut: .end) }
        let nameWidth = TerminalText.width(name)
        let noteWidth = TerminalText.width(note)
        let least = min(nameWidth, readableName)
        if width - noteWidth - gap.count >= least {
            return TerminalText.fit(name, width: width - noteWidth - gap.count, cut: .middle) + gap + note
        }
        let noteRoom = width - least - gap.count
        if noteRoom >= readableName {
            return TerminalText.fit(name, width: least, cut: .middle) + gap + TerminalText.fit(note, width: noteRoom, cut: .end)
        }
        let nameRoom = min(nameWidth, max(width / 2 - gap.count, 2))
        return TerminalText.fit(TerminalText.fit(name, width: nameRoom, cut: .middle) + gap + note, width: width, cut: .end)
    }

    /// The total line of several downloads, in at most `width` columns. Waiting tasks are counted when there are
    /// any, with why they wait when the session's number of downloads at once (`atOnce`) is known and that many
    /// run ("3 at once"; "0 at once" holds every task), or when the per-host limit holds them back while fewer run
    /// (`heldBackPerHost`: "held back: 8 per host").
    public static func summary(
        finished: Int, failed: Int, running: Int, waiting: Int = 0, atOnce: Int? = nil, heldBackPerHost: Int? = nil,
        bytesPerSecond: Double, width: Int
    ) -> String {
        let counts = "\(finished) finished, \(failed) failed, \(running) running" + (waiting > 0 ? ", \(waiting) waiting" : "")
        var reason = ""
        // Every slot taken (0 of them: the session holds every task); with one free, another cap keeps them.
        if waiting > 0, let atOnce, running >= atOnce {
            reason = " (\(atOnce) at once)"
        } else if let heldBackPerHost, running >= heldBackPerHost {
            // At least that many run when a host is at its limit: fewer means the session's word is a moment old.
            reason = " (held back: \(heldBackPerHost) per host)"
        }
        let speed = speedText(bytesPerSecond) ?? "0 B/s"
        // The speed goes first, then the reason; the counts stay.
        let choices = ["total: " + counts + reason + gap + speed, counts + reason + gap + speed, counts + reason, counts]
        for line in choices where TerminalText.width(line) <= width {
            return line
        }
        return TerminalText.fit(counts, width: width, cut: .end)
    }

    /// The lines of several downloads and their total (`summary`, already laid out) for a terminal of `width`
    /// columns and `height` rows: at most `height - 1` lines, so the view never scrolls out of reach of the
    /// cursor. Downloads that are moving (or say why they are not) get a line each, in order; those still
    /// starting are counted on one line ("4 starting"), as are the moving ones that do not fit ("… and 3 more").
    public static func view(_ states: [State], summary: String, width: Int, height: Int) -> [String] {
        guard width > 0 else { return [] }
        let summaryLine = TerminalText.fit(summary, width: width, cut: .end)
        let room = max(height - 1, 1)
        let moving = states.filter(\.isMoving)
        let starting = states.count - moving.count
        func tail(hidden: Int) -> [String] {
            var parts: [String] = []
            if hidden > 0 { parts.append("\(TerminalText.ellipsis) and \(hidden) more") }
            if starting > 0 { parts.append("\(starting) starting") }
            return parts.isEmpty ? [] : [TerminalText.fit(parts.joined(separator: ", "), width: width, cut: .end)]
        }
        if moving.count + tail(hidden: 0).count + 1 <= room {
            return moving.map { render($0, width: width) } + tail(hidden: 0) + [summaryLine]
        }
        guard room >= 3 else { return [summaryLine] }
        let shown = room - 2
        return moving.prefix(shown).map { render($0, width: width) } + tail(hidden: moving.count - shown) + [summaryLine]
    }

    /// The fields a line may show, richest first; each choice leaves out one more (the ETA, the speed, the
    /// total, the bytes held when a percentage stays).
    static func fieldChoices(_ state: State) -> [[String]] {
        guard let bytes = state.bytes else { return [["starting"]] }
        let held = ByteFormat.string(bytes)
        let total = state.total.flatMap { $0 > 0 ? $0 : nil }
        let size = total.map { held + " / " + ByteFormat.string($0) } ?? held
        let percent = total.map { total in
            "\(Int(min(max(Double(bytes) / Double(total) * 100, 0), 100)))%"
        }
        let speed = state.bytesPerSecond.flatMap(speedText)
        let eta = state.secondsRemaining.flatMap(etaText)
        var choices = [
            [size, percent, speed, eta].compactMap { $0 },
            [size, percent, speed].compactMap { $0 },
            [size, percent].compactMap { $0 },
            [held, percent].compactMap { $0 },
            [percent ?? held],
        ]
        // Without a speed or an ETA some choices are the same.
        var index = 1
        while index < choices.count {
            if choices[index] == choices[index - 1] { choices.remove(at: index) } else { index += 1 }
        }
        return choices
    }

    static func speedText(_ bytesPerSecond: Double) -> String? {
        guard bytesPerSecond.isFinite, bytesPerSecond >= 0, bytesPerSecond < 1e18 else { return nil }
        return ByteFormat.string(Int64(bytesPerSecond)) + "/s"
    }

    /// `ETA h:mm:ss`, for less than 100 days.
    static func etaText(_ seconds: Double) -> String? {
        guard seconds.isFinite, seconds >= 0, seconds < 8_640_000 else { return nil }
        let whole = Int(seconds.rounded())
        return String(format: "ETA %d:%02d:%02d", whole / 3600, whole / 60 % 60, whole % 60)
    }
}
