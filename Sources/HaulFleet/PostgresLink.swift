import Foundation
import HaulKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// The connections of one daemon to its fleet's database: a few kept open and shared, opened on demand, dropped when
/// they break. Built on event-loop futures so that both async callers (the session) and the engine's blocking-I/O
/// threads (resume records, synchronous by design) use the same connections; a blocking caller waits on a future,
/// never on a Swift task, so it cannot starve the cooperative pool it may be running on.
///
/// Every connection sets `synchronous_commit = off` at startup: a commit then survives any daemon's crash (the server
/// has it) and only a crash of the server itself may undo its last fraction of a second, never damaging anything; as
/// SQLite's `synchronous = NORMAL` is for one machine. Claims and lease renewals turn it back on in their own
/// transaction: they are what keeps two nodes from running one task.
final class PostgresLink: Sendable {
    /// Where, as it may be printed (no password).
    let location: String
    let logger: Logger
    private let configuration: PostgresConnection.Configuration
    private let maxConnections: Int
    private let state = NIOLockedValueBox(State())
    /// How long one operation may take before its connection is closed and it fails (a partition, a server that
    /// hangs, a statement sent on a connection that had just closed): ``OperationDeadline``.
    let operationTimeout: TimeAmount
    /// The default ``operationTimeout``.
    static let defaultOperationTimeout = TimeAmount.seconds(20)

    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        var waiters: [EventLoopPromise<PostgresConnection>] = []
        var nextID = 0
        var closed = false
    }

    /// Connections to `address` as `node` (named in `application_name`), at most `maxConnections` at once, each
    /// operation given `operationTimeout`.
    init(
        address: PostgresAddress, password: String?, node: String, maxConnections: Int = 6,
        operationTimeout: TimeAmount = PostgresLink.defaultOperationTimeout, logger: Logger
    ) throws(HaulError) {
        var configuration: PostgresConnection.Configuration
        var tls = PostgresConnection.Configuration.TLS.disable
        if address.requiresTLS {
            do {
                tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            } catch {
                throw HaulError(.usage, "TLS to the store at \(address.redacted) could not be set up: \(error)")
            }
        }
        if address.host.hasPrefix("/") {
            configuration = .init(
                unixSocketPath: address.host + "/.s.PGSQL.\(address.port)", username: address.user, password: password,
                database: address.database)
        } else {
            configuration = .init(
                host: address.host, port: address.port, username: address.user, password: password, database: address.database,
                tls: tls)
        }
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.additionalStartupParameters = [
            ("synchronous_commit", "off"), ("application_name", "haul node \(node)".prefix(60).description),
        ]
        self.configuration = configuration
        self.location = address.redacted
        self.maxConnections = max(2, maxConnections)
        self.operationTimeout = operationTimeout
        self.logger = logger
    }

    // MARK: Connections

    private var eventLoop: any EventLoop { MultiThreadedEventLoopGroup.singleton.any() }

    /// A connection for one operation: an idle one, a new one, or the next one released.
    private func acquire() -> EventLoopFuture<PostgresConnection> {
        enum Next { case use(PostgresConnection), open(Int), wait(EventLoopFuture<PostgresConnection>), closed }
        let loop = eventLoop
        let next: Next = state.withLockedValue { state in
            if state.closed { return .closed }
            while let connection = state.idle.popLast() {
                if !connection.isClosed { return .use(connection) }
                state.open -= 1
            }
            if state.open < maxConnections {
                state.open += 1
                state.nextID += 1
                return .open(state.nextID)
            }
            let promise = loop.makePromise(of: PostgresConnection.self)
            state.waiters.append(promise)
            return .wait(promise.futureResult)
        }
        switch next {
        case .use(let connection): return loop.makeSucceededFuture(connection)
        case .wait(let future): return future
        case .closed: return loop.makeFailedFuture(StoreUnavailable("the connection to the store is closed"))
        case .open(let id):
            return PostgresConnection.connect(on: loop, configuration: configuration, id: id, logger: logger).flatMapError { error in
                self.state.withLockedValue { $0.open -= 1 }
                // Its slot is free again: a caller that queued meanwhile gets a connection attempt of its own (else
                // it would wait for a release that never comes, when every connection being opened failed).
                self.connectForNextWaiter()
                return loop.makeFailedFuture(StoreUnavailable(Self.describe(error)))
            }
        }
    }

    /// Opens a connection for the first queued caller when a slot is free (each waiter gets one attempt; a failure
    /// passes the slot on to the next one).
    private func connectForNextWaiter() {
        let waiter: (EventLoopPromise<PostgresConnection>, Int)? = state.withLockedValue { state in
            guard !state.waiters.isEmpty, !state.closed, state.open < maxConnections else { return nil }
            state.open += 1
            state.nextID += 1
            return (state.waiters.removeFirst(), state.nextID)
        }
        guard let (promise, id) = waiter else { return }
        PostgresConnection.connect(on: promise.futureResult.eventLoop, configuration: configuration, id: id, logger: logger)
            .whenComplete { result in
                switch result {
                case .success(let connection): promise.succeed(connection)
                case .failure(let error):
                    self.state.withLockedValue { $0.open -= 1 }
                    promise.fail(StoreUnavailable(Self.describe(error)))
                    self.connectForNextWaiter()
                }
            }
    }

    /// Gives a connection back (to a waiter, or to the idle ones); a broken one is closed and forgotten.
    private func release(_ connection: PostgresConnection, broken: Bool) {
        if broken || connection.isClosed {
            PostgresLink.closeQuietly(connection)
            state.withLockedValue { $0.open -= 1 }
            connectForNextWaiter()
            return
        }
        let waiter: EventLoopPromise<PostgresConnection>? = state.withLockedValue { state in
            if state.closed { return nil }
            guard !state.waiters.isEmpty else {
                state.idle.append(connection)
                return nil
            }
            return state.waiters.removeFirst()
        }
        if let waiter { waiter.succeed(connection) } else if state.withLockedValue({ $0.closed }) { PostgresLink.closeQuietly(connection) }
    }

    /// Closes every connection; later operations fail.
    func close() async {
        let (idle, waiters) = state.withLockedValue { state -> ([PostgresConnection], [EventLoopPromise<PostgresConnection>]) in
            state.closed = true
            defer { state.idle = []; state.waiters = [] }
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.fail(StoreUnavailable("the connection to the store is closed")) }
        for connection in idle { try? await connection.close() }
    }

    /// A connection that is not one of the shared ones, for LISTEN (closed by its user).
    func dedicatedConnection() async throws -> PostgresConnection {
        let id = state.withLockedValue { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        do {
            return try await PostgresConnection.connect(on: eventLoop, configuration: configuration, id: id, logger: logger).get()
        } catch {
            throw StoreUnavailable(Self.describe(error))
        }
    }

    // MARK: Operations

    /// Runs `body` on one connection as one operation, bounded by ``operationTimeout`` (``OperationDeadline``). A
    /// connection that failed is dropped; a failure reaching the server is a ``StoreUnavailable``, one the server
    /// reported is a ``StoreRefusal``.
    private func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) -> EventLoopFuture<T>) -> EventLoopFuture<T> {
        let timeout = operationTimeout
        return acquire().flatMap { connection in
            OperationDeadline(connection, timeout: timeout).run { body(connection) }.flatMapErrorThrowing { error in
                throw Self.classify(error)
            }.always { result in
                var broken = false
                if case .failure(let error) = result { broken = error is StoreUnavailable }
                self.release(connection, broken: broken)
            }
        }
    }

    /// One statement.
    func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws -> PostgresQueryResult {
        try await queryFuture(sql, binds).get()
    }

    /// One statement, for a caller that may block (a blocking-I/O thread).
    func querySync(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws -> PostgresQueryResult {
        try queryFuture(sql, binds).wait()
    }

    private func queryFuture(_ sql: String, _ binds: PostgresBindings) -> EventLoopFuture<PostgresQueryResult> {
        let logger = self.logger
        return withConnection { connection in
            connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
        }
    }

    /// Runs `body` in one transaction on one connection: committed when it returns, rolled back when it throws.
    /// `body` runs on its caller's executor; each statement it sends through the ``Transaction`` is awaited.
    nonisolated(nonsending) func transaction<T>(durable: Bool = false, _ body: (Transaction) async throws -> T) async throws -> T {
        let connection = try await acquire().get()
        let transaction = Transaction(
            connection: connection, logger: logger, preparedFailed: NIOLockedValueBox(false),
            deadline: OperationDeadline(connection, timeout: operationTimeout))
        do {
            try await transaction.execute("BEGIN")
            if durable { try await transaction.execute("SET LOCAL synchronous_commit TO on") }
            let value = try await body(transaction)
            try await transaction.execute("COMMIT")
            release(connection, broken: false)
            return value
        } catch {
            let classified = Self.classify(error)
            // A connection whose prepared statement failed is not used again: PostgresNIO keeps a statement whose
            // preparation failed as failed on that connection for good.
            var broken = classified is StoreUnavailable || transaction.preparedFailed.withLockedValue { $0 }
            if !broken { broken = (try? await transaction.execute("ROLLBACK")) == nil }
            release(connection, broken: broken)
            throw classified
        }
    }

    /// The statements of one transaction.
    struct Transaction: Sendable {
        let connection: PostgresConnection
        let logger: Logger
        /// Whether a prepared statement of this transaction failed.
        let preparedFailed: NIOLockedValueBox<Bool>
        /// The transaction's time: each statement is awaited until then.
        let deadline: OperationDeadline

        /// Runs one statement; its rows and how many it changed.
        @discardableResult
        func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws -> PostgresQueryResult {
            let connection = self.connection, logger = self.logger
            do {
                return try await deadline.run { () -> EventLoopFuture<PostgresQueryResult> in
                    connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
                }.get()
            } catch {
                throw PostgresLink.classify(error)
            }
        }

        /// Runs one statement without parameters.
        func execute(_ sql: String) async throws {
            try await query(sql)
        }

        /// The rows of a prepared statement (parsed and planned once per connection).
        ///
        /// Run in a task of its own, which the caller's cancellation does not reach: PostgresNIO hands a prepared
        /// statement's rows over as an async sequence, which a cancelled task stops reading with a
        /// `CancellationError`. A download stopped by a pause or Ctrl-C writes how it ended from its cancelled task,
        /// and that write must be made (the other statements, on futures, never see a cancellation).
        func rows<Text: PreparedText>(_ text: Text.Type, _ binds: PostgresBindings) async throws -> [PostgresRow] {
            let connection = self.connection, logger = self.logger
            do {
                return try await deadline.run {
                    let promise = connection.eventLoop.makePromise(of: [PostgresRow].self)
                    promise.completeWithTask { try await connection.rows(text, binds, logger: logger) }
                    return promise.futureResult
                }.get()
            } catch {
                preparedFailed.withLockedValue { $0 = true }
                throw PostgresLink.classify(error)
            }
        }
    }

    /// Closes `connection` without waiting, keeping it alive until it is closed (PostgresNIO checks that a connection
    /// is closed when it is released).
    static func closeQuietly(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    // MARK: Errors

    /// `error` as the store reports it: the server's refusal (an SQL state and message), or the store unreachable.
    static func classify(_ error: any Error) -> any Error {
        if error is StoreUnavailable || error is StoreRefusal || error is SessionStoreError || error is HaulError { return error }
        if let error = error as? PSQLError, error.code == .server, let info = error.serverInfo {
            let state = info[.sqlState] ?? ""
            // The server going away answers what is in flight with an error of its own: a shutdown or restart
            // (57P01 "terminating connection due to administrator command", 57P02, 57P03) or a broken connection
            // (class 08). The operation may be tried again once it is back: it was not refused.
            if Self.meansUnavailable(sqlState: state) { return StoreUnavailable(info[.message] ?? "the server closed the connection") }
            return StoreRefusal(sqlState: state, message: info[.message] ?? "")
        }
        return StoreUnavailable(describe(error))
    }

    /// Whether an error the server sent with SQL state `sqlState` means it is going away or cannot be used now (a
    /// connection exception, an operator intervention that ends the session), not that it refused the operation.
    static func meansUnavailable(sqlState: String) -> Bool {
        sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03", "57P05"].contains(sqlState)
    }

    /// A short reason, without a password (none is ever part of an error of the client or the server).
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as PSQLError:
            if let info = error.serverInfo, let message = info[.message] { return message }
            if let underlying = error.underlying { return describe(underlying) }
            return error.code == .serverClosedConnection || error.code == .uncleanShutdown ? "the server closed the connection" : "\(error.code)"
        case let error as NIOConnectionError:
            // The errors of each address tried: the first says why (refused, unreachable, timed out).
            return error.connectionErrors.first.map { describe($0.error) } ?? "cannot connect to \(error.host):\(error.port)"
        case let error as IOError:
            return String(cString: strerror(error.errnoCode)).lowercased()
        case ChannelError.connectTimeout:
            return "no answer to the connection within 5 s"
        default:
            return "\(error)".split(whereSeparator: \.isNewline).joined(separator: " ")
        }
    }
}

/// The store could not be reached, or the connection broke: the operation may or may not have been made (a commit
/// whose answer was lost), and may be tried again.
struct StoreUnavailable: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The server refused an operation (an SQL state and its message).
struct StoreRefusal: Error, CustomStringConvertible {
    var sqlState: String
    var message: String
    var description: String { "\(message) (\(sqlState))" }
}
