import Foundation
import GRDB
import NIOConcurrencyHelpers

// Mapping between StoredTask and a row of the `task` table, with explicit column lists and cached
// statements (no reflection), so that listing thousands of tasks stays cheap.
extension StoredTask {
    /// Column order shared by `selectSQL`, `init(row:)` and `insertArguments`.
    static let columns = [
        "id", "sequence", "url", "destinationKind", "destinationPath", "headers", "checksum", "segments",
        "priority", "state", "bytes", "total", "filePath", "errorKind", "errorMessage", "createdAt", "updatedAt",
        "options", "errorReason",
    ]

    static let selectSQL = "SELECT \(columns.joined(separator: ", ")) FROM task"

    /// Inserts all but `sequence`, which SQLite assigns (the largest one plus one); does nothing when the
    /// id or the URL and destination are taken.
    static let insertSQL = {
        let inserted = columns.filter { $0 != "sequence" }
        return "INSERT INTO task (\(inserted.joined(separator: ", "))) VALUES (\(inserted.map { _ in "?" }.joined(separator: ", ")))"
            + " ON CONFLICT DO NOTHING"
    }()

    /// Every column but `id`, `sequence` and `createdAt`, which never change.
    static let updateSQL = """
        UPDATE task SET url = ?, destinationKind = ?, destinationPath = ?, headers = ?, checksum = ?, segments = ?,
        priority = ?, state = ?, bytes = ?, total = ?, filePath = ?, errorKind = ?, errorMessage = ?, updatedAt = ?,
        options = ?, errorReason = ? WHERE id = ?
        """

    init(row: Row) throws {
        let stateText = try row.decode(String.self, atIndex: 9)
        guard let state = TaskState(rawValue: stateText) else {
            throw StoreDecodingError("unknown task state \"\(stateText)\"")
        }
        self.init(
            id: try row.decode(atIndex: 0),
            sequence: try row.decode(atIndex: 1),
            url: try row.decode(atIndex: 2),
            destinationKind: try row.decode(atIndex: 3),
            destinationPath: try row.decode(atIndex: 4),
            headers: try HeaderJSON.decode(try row.decode(String.self, atIndex: 5)),
            checksum: try row.decode(atIndex: 6),
            segments: try row.decode(atIndex: 7),
            priority: try row.decode(atIndex: 8),
            state: state,
            bytes: try row.decode(atIndex: 10),
            total: try row.decode(atIndex: 11),
            filePath: try row.decode(atIndex: 12),
            errorKind: try row.decode(atIndex: 13),
            errorMessage: try row.decode(atIndex: 14),
            errorReason: try row.decode(atIndex: 18),
            createdAt: try row.decode(atIndex: 15),
            updatedAt: try row.decode(atIndex: 16),
            options: try TaskOptionsJSON.decode(try row.decode(String?.self, atIndex: 17)))
    }

    func insertArguments() -> StatementArguments {
        [
            id, url, destinationKind, destinationPath, HeaderJSON.encode(headers), checksum, segments,
            priority, state.rawValue, bytes, total, filePath, errorKind, errorMessage, createdAt, updatedAt,
            TaskOptionsJSON.encode(options), errorReason,
        ]
    }

    func updateArguments() -> StatementArguments {
        [
            url, destinationKind, destinationPath, HeaderJSON.encode(headers), checksum, segments,
            priority, state.rawValue, bytes, total, filePath, errorKind, errorMessage, updatedAt,
            TaskOptionsJSON.encode(options), errorReason, id,
        ]
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

/// A task's options in their column: JSON, or NULL for the defaults (most tasks).
enum TaskOptionsJSON {
    /// The options last encoded or decoded, with their JSON: the tasks of a batch share theirs, so a session that
    /// reads and updates thousands of tasks turns them into JSON and back once, not at every row.
    private static let last = NIOLockedValueBox<(text: String, options: TaskOptions)?>(nil)

    static func encode(_ options: TaskOptions) -> String? {
        guard options != TaskOptions() else { return nil }
        if let cached = last.withLockedValue({ $0 }), cached.options == options { return cached.text }
        guard let data = try? JSONEncoder().encode(options) else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        last.withLockedValue { $0 = (text, options) }
        return text
    }

    static func decode(_ text: String?) throws -> TaskOptions {
        guard let text else { return TaskOptions() }
        if let cached = last.withLockedValue({ $0 }), cached.text == text { return cached.options }
        do {
            let options = try JSONDecoder().decode(TaskOptions.self, from: Data(text.utf8))
            last.withLockedValue { $0 = (text, options) }
            return options
        } catch {
            throw StoreDecodingError("a task's options are not valid JSON")
        }
    }
}
