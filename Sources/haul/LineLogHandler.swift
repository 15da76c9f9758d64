import Foundation
import HaulKit
import Logging

/// How `haul` writes a log on standard error, one line a message, with whatever a server or a client sent (a
/// Location, a URL, a file name) shown with its control characters as `?`: a person reading it on a terminal sees
/// them, the terminal does not obey them.
///
/// - `verbose` (`--verbose`): marked `* ` as curl marks its own notes under `-v`, with no timestamp, level or module
///   label (swift-log's stream handler printed `2026-…+0000 debug haul: [HaulKit]` before every line).
/// - `daemon` (the daemon's `daemon.log` when it runs in the background): `TIME LEVEL LABEL: message`, as swift-log's
///   stream handler writes it.
struct LineLogHandler: LogHandler {
    enum Style {
        case verbose
        case daemon(label: String)
    }

    let style: Style
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level

    init(_ style: Style, level: Logger.Level) {
        self.style = style
        logLevel = level
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line: String
        switch style {
        case .verbose: line = "* " + (event.level >= .warning ? "\(event.level): " : "")
        case .daemon(let label): line = "\(Date().formatted(.iso8601)) \(event.level) \(label): "
        }
        line += "\(event.message)"
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        if !merged.isEmpty {
            line += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        FileHandle.standardError.write(Data((TerminalText.sanitizedLines(line) + "\n").utf8))
    }
}
