import Foundation
import HaulKit
import Logging

/// How `--verbose` prints HaulKit's log on standard error: one line a message, marked `* ` as curl marks its own notes
/// under `-v` (`* ` for what the tool did, the request and answer lines being its messages). No timestamp, level or
/// module label: swift-log's stream handler printed `2026-…+0000 debug haul: [HaulKit]` before every line.
struct VerboseLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line = "* "
        if event.level >= .warning { line += "\(event.level): " }
        line += "\(event.message)"
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        if !merged.isEmpty {
            line += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        // What a server sent (a Location, a header) is shown, never obeyed by the terminal.
        FileHandle.standardError.write(Data((TerminalText.sanitizedLines(line) + "\n").utf8))
    }
}

/// How the daemon writes its log on standard error (its `daemon.log` when it runs in the background): one line a
/// message, `TIME LEVEL haul.daemon: message key=value…`, as swift-log's stream handler writes it, with whatever a
/// server or a client sent (a Location, a URL, a file name) shown with its control characters as `?`: a person
/// reading the log on a terminal sees them, their terminal does not obey them.
struct DaemonLogHandler: LogHandler {
    let label: String
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line = "\(Date().formatted(.iso8601)) \(event.level) \(label): \(event.message)"
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        if !merged.isEmpty {
            line += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        FileHandle.standardError.write(Data((TerminalText.sanitizedLines(line) + "\n").utf8))
    }
}
