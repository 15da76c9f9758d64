/// Deterministic test payloads.
public enum TestData {
    /// `count` pseudo-random bytes (splitmix64), identical for identical `(count, seed)`.
    /// A prefix of a longer sequence equals the shorter sequence with the same seed.
    public static func bytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
        precondition(count >= 0, "count must be non-negative")
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var state = seed
            var offset = 0
            while offset + 8 <= count {
                raw.storeBytes(of: next(&state).littleEndian, toByteOffset: offset, as: UInt64.self)
                offset += 8
            }
            if offset < count {
                var last = next(&state).littleEndian
                withUnsafeBytes(of: &last) { tail in
                    for i in 0..<(count - offset) { raw[offset + i] = tail[i] }
                }
            }
            initialized = count
        }
    }

    @inline(__always)
    private static func next(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
