import Logging
import NIOConcurrencyHelpers

/// A log handler that keeps every line, for a test to read (a secret must never be in them): the in-process daemon's
/// and dashboard's logger.
public final class CollectedLog: LogHandler, @unchecked Sendable {
    private let lines = NIOLockedValueBox<[String]>([])
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .debug

    public init() {}

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        lines.withLockedValue { $0.append("\(event.level) \(event.message)") }
    }

    /// Every line so far, one per line.
    public var text: String { lines.withLockedValue { $0.joined(separator: "\n") } }
}

/// Why ``waitUntil(_:turns:step:_:)`` gave up.
public struct WaitedInVain: Error, CustomStringConvertible {
    public let description: String
}

/// Waits, a bounded number of turns, until `condition` holds: a state, never a duration, is what a test asserts
/// (the turns only bound the wait on a busy machine).
public func waitUntil(_ what: String, turns: Int = 3_000, step: Duration = .milliseconds(20), _ condition: () async throws -> Bool) async throws {
    for _ in 0..<turns {
        if try await condition() { return }
        try await Task.sleep(for: step)
    }
    throw WaitedInVain(description: "\(what): not after \(turns) turns of \(step)")
}
