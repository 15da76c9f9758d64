import NIOCore
import PostgresNIO

/// The time one operation (a statement, or a transaction and its statements) has on its connection: from when it got
/// the connection, ``PostgresLink/operationTimeout``. Each statement is awaited only until then; when the time is up
/// the connection is closed and the statement fails as the store out of reach, to be tried again.
///
/// Closing the connection alone does not end the wait. A statement sent on a connection that has already closed (it
/// closed between being taken from the pool and being used, as every connection does when PostgreSQL stops) is never
/// answered: PostgresNIO drops it without completing its future. A node whose progress write or resume record was
/// sent that way waited for it for ever, so its download never ended and its lease was renewed for ever, the task
/// stuck `running` on it (FleetProcessTests' store stopped for ten seconds, under load).
struct OperationDeadline: Sendable {
    let connection: PostgresConnection
    let deadline: NIODeadline
    let timeout: TimeAmount

    /// The time of an operation that got `connection` now.
    init(_ connection: PostgresConnection, timeout: TimeAmount) {
        self.connection = connection
        self.timeout = timeout
        deadline = .now() + timeout
    }

    /// What `send` sends on the connection, unless the connection has closed (nothing sent on it would be answered)
    /// or the deadline passes first: then the store is out of reach.
    func run<T: Sendable>(_ send: () -> EventLoopFuture<T>) -> EventLoopFuture<T> {
        let loop = connection.eventLoop
        guard !connection.isClosed else { return loop.makeFailedFuture(StoreUnavailable("the connection to the store closed")) }
        let promise = loop.makePromise(of: T.self)
        let connection = self.connection, seconds = timeout.nanoseconds / 1_000_000_000
        let timer = loop.scheduleTask(deadline: deadline) {
            PostgresLink.closeQuietly(connection)
            promise.fail(StoreUnavailable("no answer from the store within \(seconds) s"))
        }
        // Whichever comes first completes the promise; the other is ignored (a promise is completed once).
        send().whenComplete { result in
            timer.cancel()
            promise.completeWith(result)
        }
        return promise.futureResult
    }
}
