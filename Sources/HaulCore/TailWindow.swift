/// The last `capacity` bytes of a stream, kept in a ring: what a stream that cannot read back what it wrote (standard
/// output, a FIFO) compares a retry's overlap with. Each byte is copied once; memory is `capacity`. Pure.
package struct TailWindow: Equatable, Sendable {
    public let capacity: Int
    private var ring: [UInt8]
    /// Where the next byte goes in `ring`.
    private var head = 0
    /// Bytes kept, up to `capacity`.
    public private(set) var count = 0

    public init(capacity: Int) {
        self.capacity = max(0, capacity)
        ring = [UInt8](repeating: 0, count: self.capacity)
    }

    /// Keeps the last bytes of `bytes` (all of them, while they fit).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard capacity > 0, let source = bytes.baseAddress, !bytes.isEmpty else { return }
        // Only the last `capacity` bytes can stay.
        let skip = max(0, bytes.count - capacity), length = bytes.count - skip
        var position = head, copied = 0
        let capacity = self.capacity
        ring.withUnsafeMutableBytes { ringBytes in
            guard let base = ringBytes.baseAddress else { return }
            while copied < length {
                let run = min(capacity - position, length - copied)
                (base + position).copyMemory(from: source + skip + copied, byteCount: run)
                copied += run
                position = (position + run) % capacity
            }
        }
        head = position
        count = min(capacity, count + length)
    }

    /// Keeps the last bytes of `bytes`.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The last `length` bytes kept (fewer if fewer are kept), oldest first.
    public func last(_ length: Int) -> [UInt8] {
        let length = max(0, min(length, count))
        var result: [UInt8] = []
        result.reserveCapacity(length)
        let start = (head - length + capacity) % max(1, capacity)
        for index in 0..<length { result.append(ring[(start + index) % capacity]) }
        return result
    }
}
