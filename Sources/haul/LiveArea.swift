import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HaulKit

/// The live lines at the bottom of a terminal (stderr): drawn, redrawn in place and cleared.
///
/// Between frames the cursor waits at the start of the area's first line, not below it. Redrawing is then
/// `\r` + erase-to-end-of-screen + the lines, whatever happened meanwhile: a terminal that re-wraps its lines
/// when it is made narrower (tmux, VTE, kitty, iTerm2) or one that cuts them (xterm) leaves the area's first
/// line where the cursor is, and a `^C` echoed by the terminal over its first columns is erased with it.
/// Lines are laid out one column narrower than the terminal, so none reaches the last column and wraps.
/// Not thread-safe: its owner calls it under its own lock.
final class LiveArea {
    private let fd: Int32
    private var shownLines = 0
    private var closed = false

    init(fd: Int32 = STDERR_FILENO) { self.fd = fd }

    /// The columns and rows to lay lines out for: the terminal's size now (read at every frame, so a
    /// resized window is followed at the next one), one column short of the width.
    var layoutSize: (width: Int, height: Int) {
        let size = LiveArea.terminalSize(fd) ?? (columns: 80, rows: 24)
        return (max(size.columns - 1, 1), max(size.rows, 1))
    }

    /// Replaces what is shown with `lines` (nothing once `close()` was called).
    func draw(_ lines: [String]) {
        guard !closed else { return }
        var text = "\r\u{1B}[J" + lines.joined(separator: "\n") + "\r"
        if lines.count > 1 { text += "\u{1B}[\(lines.count - 1)A" }
        Reporter.write(text, to: fd)
        shownLines = lines.count
    }

    /// Erases what is shown; the cursor is left at the start of a clean line.
    func clear() {
        guard shownLines > 0 else { return }
        Reporter.write("\r\u{1B}[J", to: fd)
        shownLines = 0
    }

    /// Prints `line` where the area was (the area is drawn again by the next `draw`).
    func say(_ line: String) {
        clear()
        Reporter.write(line + "\n", to: fd)
    }

    /// Clears the area for good: later `draw` calls show nothing (a late event cannot leave a frame below the
    /// last message).
    func close() {
        clear()
        closed = true
    }

    /// Whether live lines belong on `fd`: a terminal, and not one that says it cannot move the cursor.
    static func isLiveTerminal(_ fd: Int32 = STDERR_FILENO, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        isatty(fd) == 1 && environment["TERM"] != "dumb"
    }

    /// The terminal's size (TIOCGWINSZ), or nil when `fd` is not a terminal or does not know it.
    static func terminalSize(_ fd: Int32) -> (columns: Int, rows: Int)? {
        var size = winsize()
        let result = withUnsafeMutablePointer(to: &size) { ioctl(fd, UInt(TIOCGWINSZ), $0) }
        guard result == 0, size.ws_col > 0 else { return nil }
        return (Int(size.ws_col), size.ws_row > 0 ? Int(size.ws_row) : 24)
    }
}
