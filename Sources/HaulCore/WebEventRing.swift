/// The recent events of one session for the dashboard's event stream: a bounded ring with increasing cursors, so
/// that a browser that reconnects gets what it missed. Pure.
///
/// A cursor is `<run>.<number>`: `run` names this daemon run, so a cursor from an earlier run (or one the ring no
/// longer holds) answers ``Replay/reset``: the page reloads its list instead of missing events.
package struct WebEventRing<Element: Sendable>: Sendable {
    public let run: String
    public let capacity: Int
    private var storage: [Element] = []
    /// Index in `storage` of the oldest element once the ring is full.
    private var head = 0
    /// The number of the newest element (0 before the first).
    public private(set) var last: Int64 = 0

    public init(run: String, capacity: Int) {
        self.run = run
        self.capacity = max(1, capacity)
    }

    /// The number of the oldest element held.
    public var first: Int64 { last - Int64(storage.count) + 1 }

    public var count: Int { storage.count }

    /// The cursor of element number `number`.
    public func cursor(_ number: Int64) -> String { "\(run).\(number)" }

    /// The cursor of the newest element (of nothing yet: `<run>.0`).
    public var lastCursor: String { cursor(last) }

    /// Appends an element; returns its number. The oldest is dropped when the ring is full.
    @discardableResult
    public mutating func append(_ element: Element) -> Int64 {
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[head] = element
            head = (head + 1) % capacity
        }
        last += 1
        return last
    }

    /// What a stream that has seen up to `cursor` gets next.
    public enum Replay: Sendable {
        /// The elements after the cursor, oldest first, with their numbers (possibly none).
        case events([(number: Int64, element: Element)])
        /// The cursor is unknown, from another run, or older than the ring: start over.
        case reset
    }

    /// The number a cursor stands for in this run; nil when it is malformed or from another run.
    public func number(of cursor: String) -> Int64? {
        guard let dot = cursor.lastIndex(of: "."), cursor[..<dot] == run,
              let number = Int64(cursor[cursor.index(after: dot)...]), number >= 0 else { return nil }
        return number
    }

    /// The elements after `cursor` (see ``Replay``).
    public func replay(after cursor: String) -> Replay {
        guard let number = number(of: cursor) else { return .reset }
        return replay(after: number)
    }

    /// The elements after element number `number`.
    public func replay(after number: Int64) -> Replay {
        guard number <= last, number >= first - 1 else { return .reset }
        var result: [(number: Int64, element: Element)] = []
        var current = number + 1
        while current <= last {
            let offset = Int(current - first)
            result.append((current, storage[(head + offset) % storage.count]))
            current += 1
        }
        return .events(result)
    }
}
