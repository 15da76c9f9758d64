/// The first bytes of an answer that repeat bytes already held (a resume's overlap, a stream's last bytes written):
/// compared with them as they arrive, chunk by chunk, and never written again. Pure.
package struct OverlapPrefix: Sendable {
    private let expected: [UInt8]
    private var compared = 0

    /// The bytes the answer must begin with (none: nothing to compare).
    public init(expected: [UInt8]) {
        self.expected = expected
    }

    /// Whether every expected byte has arrived, and matched.
    public var isComplete: Bool { compared == expected.count }

    /// Takes the bytes at the start of `chunk` that are still owed to the overlap and compares them: how many it took
    /// (the rest of `chunk` is new), or `nil` when they differ from the bytes held.
    public mutating func take(_ chunk: UnsafeRawBufferPointer) -> Int? {
        let count = min(expected.count - compared, chunk.count)
        guard count > 0 else { return 0 }
        guard expected[compared..<(compared + count)].elementsEqual(chunk.prefix(count)) else { return nil }
        compared += count
        return count
    }
}
