/// Lower-case hex digits of `bytes`. Inlinable, so that it is specialised where it is called: a digest read through
/// the generic `Sequence` witnesses cost more than the hash itself (1% of a tiny-file batch).
@inlinable
package func hexString<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
        out.append(hexDigit(byte >> 4))
        out.append(hexDigit(byte & 0x0F))
    }
    return String(decoding: out, as: UTF8.self)
}

/// The lower-case hex digit of `value` (0–15).
@inlinable
package func hexDigit(_ value: UInt8) -> UInt8 {
    value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
}
