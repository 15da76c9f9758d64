import HaulKit
import NIOConcurrencyHelpers
import NIOCore

/// The lines waiting to be written to one client, in order. A client that stops reading is not waited for:
/// droppable lines (progress) are dropped while much is queued, and past a hard limit the connection is closed.
package final class ConnectionOutbox: Sendable {
    static let dropProgressAbove = 1 << 20
    static let closeAbove = 4 << 20

    let id: Int
    let lines: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private let queuedBytes = NIOLockedValueBox(0)
    private let onOverflow: @Sendable () -> Void

    package init(id: Int, onOverflow: @escaping @Sendable () -> Void) {
        self.id = id
        self.onOverflow = onOverflow
        (lines, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
    }

    /// Queues a line (ending in a newline); returns false when it was dropped.
    @discardableResult
    func send(_ line: String, droppable: Bool = false) -> Bool {
        let size = line.utf8.count
        enum Verdict { case send, drop, overflow }
        let verdict = queuedBytes.withLockedValue { queued -> Verdict in
            if droppable, queued > Self.dropProgressAbove { return .drop }
            if queued + size > Self.closeAbove { return .overflow }
            queued += size
            return .send
        }
        switch verdict {
        case .send:
            continuation.yield(line)
            return true
        case .drop:
            return false
        case .overflow:
            finish()
            onOverflow()
            return false
        }
    }

    /// Call after a line has been written to the socket.
    func written(_ line: String) {
        let size = line.utf8.count
        queuedBytes.withLockedValue { $0 -= size }
    }

    func finish() { continuation.finish() }
}
