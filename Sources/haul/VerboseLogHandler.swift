import Foundation
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
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
