/// Text as a terminal shows it: how many columns it takes (display width, not bytes or characters), made
/// safe to print (no control characters), and shortened with `…` to fit a number of columns.
package enum TerminalText {
    /// Where `fit` takes characters out.
    public enum Cut: Sendable { case middle, end }

    /// The ellipsis that marks shortened text (one column).
    public static let ellipsis: Character = "…"

    /// Columns `text` takes on a terminal.
    public static func width(_ text: some StringProtocol) -> Int {
        // ASCII, most of what a table shows (ids, URLs, states), by its bytes: a printable one takes a column, a
        // control character none, exactly as character by character, whose Unicode property lookups were half of
        // `haul ls`'s time.
        var columns = 0
        for byte in text.utf8 {
            guard byte < 0x80 else { return text.reduce(0) { $0 + width(of: $1) } }
            if byte >= 0x20, byte != 0x7F { columns += 1 }
        }
        return columns
    }

    /// Columns one character (grapheme cluster) takes: 2 for East Asian wide and fullwidth characters and
    /// emoji shown as emoji, 0 for lone combining marks, format characters and controls, else 1.
    public static func width(of character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        let properties = first.properties
        switch properties.generalCategory {
        case .control, .format, .nonspacingMark, .enclosingMark, .lineSeparator, .paragraphSeparator:
            return 0
        default:
            break
        }
        if properties.isEmojiPresentation || isWide(first.value) { return 2 }
        // A text-style symbol followed by VARIATION SELECTOR-16 is shown as an emoji.
        if scalars.contains(where: { $0.value == 0xFE0F }) && properties.isEmoji { return 2 }
        return 1
    }

    /// `text` with every control character (C0, DEL, C1: escape sequences among them) and every bidirectional
    /// override or isolate replaced by `?`, so a name from a URL or a server cannot move the cursor, change
    /// colours or reorder what is shown around it.
    public static func sanitized(_ text: String) -> String {
        replacing(text, where: isUnsafe)
    }

    /// ``sanitized(_:)`` line by line: the line breaks of text of several lines kept, every other control
    /// character replaced. For what is written to a terminal or a log a person reads on one.
    public static func sanitizedLines(_ text: String) -> String {
        replacing(text) { isUnsafe($0) && $0 != "\n" }
    }

    /// `text` with each scalar `unsafe` says so of replaced by `?` (unchanged, without a copy, when there is none).
    private static func replacing(_ text: String, where unsafe: (Unicode.Scalar) -> Bool) -> String {
        guard text.unicodeScalars.contains(where: unsafe) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            result.append(unsafe(scalar) ? "?" : scalar)
        }
        return String(result)
    }

    /// `text` in at most `width` columns: unchanged when it fits, else shortened at `cut` with `…` in the
    /// place of what was taken out. A width below 1 gives the empty string.
    public static func fit(_ text: String, width columns: Int, cut: Cut = .end) -> String {
        guard columns > 0 else { return "" }
        if width(text) <= columns { return text }
        let room = columns - 1
        switch cut {
        case .end:
            return prefix(text, columns: room) + String(ellipsis)
        case .middle:
            // The end keeps the smaller half: a name's extension and counter stay readable.
            let tail = room / 2
            return prefix(text, columns: room - tail) + String(ellipsis) + suffix(text, columns: tail)
        }
    }

    /// A path in at most `width` columns that keeps its file name whole where it can: the folders give way
    /// first, in their middle (`/home/me/Do…/data/file.iso`); a file name too long even alone is shortened in
    /// its middle (its folders then left out).
    public static func fitPath(_ path: String, width columns: Int) -> String {
        guard columns > 0 else { return "" }
        if width(path) <= columns { return path }
        guard let slash = path.lastIndex(of: "/"), path.index(after: slash) < path.endIndex else {
            return fit(path, width: columns, cut: .middle)
        }
        let folder = String(path[...slash])
        let name = String(path[path.index(after: slash)...])
        let room = columns - width(name)
        // A folder shown with fewer than four columns says nothing ("/…/"): the name alone is shown instead.
        if room >= 4 { return fit(folder, width: room, cut: .middle) + name }
        return fit(name, width: columns, cut: .middle)
    }

    /// The longest start of `text` that takes at most `columns` columns.
    public static func prefix(_ text: String, columns: Int) -> String {
        var used = 0
        var end = text.startIndex
        for index in text.indices {
            let next = used + width(of: text[index])
            if next > columns { break }
            used = next
            end = text.index(after: index)
        }
        return String(text[..<end])
    }

    /// The longest end of `text` that takes at most `columns` columns.
    public static func suffix(_ text: String, columns: Int) -> String {
        var used = 0
        var start = text.endIndex
        while start > text.startIndex {
            let before = text.index(before: start)
            let next = used + width(of: text[before])
            if next > columns { break }
            used = next
            start = before
        }
        return String(text[start...])
    }

    private static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00..<0x20, 0x7F..<0xA0: return true
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: return true
        default: return false
        }
    }

    /// East Asian Wide (W) and Fullwidth (F) ranges of Unicode's EastAsianWidth.txt, as terminals use them;
    /// emoji are decided by their Emoji_Presentation property instead.
    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF,
             0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF,
             0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1B000...0x1B2FF,
             0x1F200...0x1F2FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }
}
