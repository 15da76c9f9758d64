import NIOCore
import PostgresNIO

/// The text of a statement a node sends for every file (a claim, a conclusion): PostgreSQL parses, analyses and plans
/// it once per connection instead of at every call. In a fleet of three nodes on one machine, parsing, analysing and
/// planning the same few statements again and again was about 40% of the database server's CPU (`perf`).
///
/// `types` are the parameters' types, in order, exactly as the bindings encode them (`String`: text, `[String]`:
/// text[], `Int` and `Int64`: int8): a prepared statement takes its parameters' types from here, not from the
/// bindings, and reads their bytes as these types.
protocol PreparedText {
    static var name: String { get }
    static var sql: String { get }
    static var types: [PostgresDataType] { get }
}

/// A ``PreparedText`` with its bindings, as PostgresNIO runs a prepared statement (once prepared on a connection,
/// each call is a bind and an execute).
struct Prepared<Text: PreparedText>: PostgresPreparedStatement {
    typealias Row = PostgresRow
    static var name: String { Text.name }
    static var sql: String { Text.sql }
    static var bindingDataTypes: [PostgresDataType] { Text.types }

    let binds: PostgresBindings

    func makeBindings() throws -> PostgresBindings {
        precondition(binds.count == Text.types.count, "\(Text.name) takes \(Text.types.count) parameters, not \(binds.count)")
        return binds
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

extension PostgresConnection {
    /// The rows of the prepared statement `text` with `binds`.
    func rows<Text: PreparedText>(_ text: Text.Type, _ binds: PostgresBindings, logger: Logger) async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        for try await row in try await execute(Prepared<Text>(binds: binds), logger: logger) { rows.append(row) }
        return rows
    }
}
