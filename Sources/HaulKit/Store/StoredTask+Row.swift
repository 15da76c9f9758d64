import Foundation
import GRDB
import NIOConcurrencyHelpers

// Mapping between StoredTask and a row of the `task` table, with explicit column lists and cached
// statements (no reflection), so that listing thousands of tasks stays cheap.
extension StoredTask {
    /// Column order shared by `selectSQL`, `init(row:)` and `insertArguments`. `url`, `destinationKind` and
    /// `destinationPath` repeat what the spec says: they are the unique key of a task (same URL and destination).
    static let columns = [
        "id", "sequence", "url", "destinationKind", "destinationPath", "spec",
        "priority", "state", "bytes", "total", "filePath", "errorKind", "errorMessage", "errorReason", "createdAt", "updatedAt",
    ]

    static let selectSQL = "SELECT \(columns.joined(separator: ", ")) FROM task"

    /// Inserts all but `sequence`, which SQLite assigns (the largest one plus one); does nothing when the
    /// id or the URL and destination are taken.
    static let insertSQL = {
        let inserted = columns.filter { $0 != "sequence" }
        return "INSERT INTO task (\(inserted.joined(separator: ", "))) VALUES (\(inserted.map { _ in "?" }.joined(separator: ", ")))"
            + " ON CONFLICT DO NOTHING"
    }()

    /// What changes as a task runs: not its id, sequence, spec (nor the key repeating it) or `createdAt`.
    static let updateSQL = """
        UPDATE task SET priority = ?, state = ?, bytes = ?, total = ?, filePath = ?, errorKind = ?, errorMessage = ?,
        errorReason = ?, updatedAt = ? WHERE id = ?
        """

    init(row: Row) throws {
        let stateText = try row.decode(String.self, atIndex: 7)
        guard let state = TaskState(rawValue: stateText) else {
            throw StoreDecodingError("unknown task state \"\(stateText)\"")
        }
        guard let specText = try row.decode(String?.self, atIndex: 5), let spec = SpecColumn.decode(specText) else {
            throw StoreDecodingError("a task's spec is not a valid download spec")
        }
        self.init(
            id: try row.decode(atIndex: 0),
            sequence: try row.decode(atIndex: 1),
            spec: spec,
            priority: try row.decode(atIndex: 6),
            state: state,
            bytes: try row.decode(atIndex: 8),
            total: try row.decode(atIndex: 9),
            filePath: try row.decode(atIndex: 10),
            errorKind: try row.decode(atIndex: 11),
            errorMessage: try row.decode(atIndex: 12),
            errorReason: try row.decode(atIndex: 13),
            createdAt: try row.decode(atIndex: 14),
            updatedAt: try row.decode(atIndex: 15))
    }

    /// The unique key of a destination: its kind and path (`"file"` or `"directory"`).
    package static func key(of destination: DownloadSpec.Destination?) -> (kind: String, path: String) {
        switch destination {
        case .file(let path)?: return ("file", path)
        case .directory(let folder)?: return ("directory", folder)
        case .standardOutput?, nil: return ("stdout", "-")
        }
    }

    func insertArguments() -> StatementArguments {
        let destination = Self.key(of: spec.destination)
        return [
            id, url, destination.kind, destination.path, SpecColumn.encode(spec),
            priority, state.rawValue, bytes, total, filePath, errorKind, errorMessage, errorReason, createdAt, updatedAt,
        ]
    }

    func updateArguments() -> StatementArguments {
        [priority, state.rawValue, bytes, total, filePath, errorKind, errorMessage, errorReason, updatedAt, id]
    }

    /// Fetches the tasks a statement selects (its columns must be `columns`, in order).
    static func fetchAll(_ statement: Statement, arguments: StatementArguments = StatementArguments()) throws -> [StoredTask] {
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        var tasks: [StoredTask] = []
        while let row = try rows.next() { tasks.append(try StoredTask(row: row)) }
        return tasks
    }

    static func fetchOne(_ statement: Statement, arguments: StatementArguments) throws -> StoredTask? {
        try Row.fetchOne(statement, arguments: arguments).map(StoredTask.init(row:))
    }
}

/// A row the store cannot turn into a task: the file was altered or damaged.
struct StoreDecodingError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A task's spec in its column: the spec's one JSON shape (its `Codable`; docs/protocol.md), read and written by
/// Foundation's JSON coders.
///
/// A task's row is read about three times in its life (its start, its end, a listing), and `perf` of 5,000 tiny
/// answers put the decoding at 5.7% of haul's CPU (about 25 µs a read among a busy process's other work, against 6.5 µs
/// in `haul-spec-coding-bench`'s tight loop). The specs last read or written are therefore kept, by their text (the
/// same text is the same spec), 8,192 at most whatever the list's length: 3.2% with them.
package enum SpecColumn {
    package static func encode(_ spec: DownloadSpec) -> String {
        // Nothing in a spec's encoding throws.
        let text = (try? encoder.encode(spec)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        // A task added is read again when it starts: kept from here (the text reads back as this very spec,
        // `SpecCompatibilityTests`).
        if spec.destination != nil { keep(spec, as: text) }
        return text
    }

    /// The spec the text describes; `nil` when it is not a valid spec with a destination.
    package static func decode(_ text: String) -> DownloadSpec? {
        if let kept = recent.withLockedValue({ $0[text] }) { return kept }
        guard let spec = decodeAfresh(text) else { return nil }
        keep(spec, as: text)
        return spec
    }

    /// ``decode(_:)`` without the specs kept.
    package static func decodeAfresh(_ text: String) -> DownloadSpec? {
        // The bytes copied straight from the string's UTF-8: `Data(text.utf8)` goes through a dynamic cast of the
        // sequence at each call.
        var bytes = text
        let data = bytes.withUTF8 { Data($0) }
        guard let spec = try? decoder.decode(DownloadSpec.self, from: data), spec.destination != nil else { return nil }
        return spec
    }

    private static func keep(_ spec: DownloadSpec, as text: String) {
        recent.withLockedValue { recent in
            if recent.count >= keptSpecs { recent.removeAll(keepingCapacity: true) }
            recent[text] = spec
        }
    }

    /// One encoder and one decoder for every row (they keep no state between calls).
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
    private static let decoder = JSONDecoder()
    /// The specs last read, by their text; emptied when it holds ``keptSpecs``.
    private static let recent = NIOLockedValueBox<[String: DownloadSpec]>([:])
    /// At most this many specs are kept: more than a queue's page (4,096), so that a task read with its page is
    /// usually still there when it starts.
    static let keptSpecs = 8_192
}
