import Foundation

/// Task ids: random (version 4) UUIDs in lower case, drawn from the system's generator (`getrandom` on Linux)
/// rather than `UUID()`, which opens `/dev/urandom` for each one on Linux: a batch of thousands of tasks gets
/// its ids without a file descriptor each.
package enum RandomID {
    package static func make() -> String {
        // Two 64-bit draws: each draw is a getrandom(2) call, so not one per byte.
        var generator = SystemRandomNumberGenerator()
        let draws: (UInt64, UInt64) = (generator.next(), generator.next())
        var bytes = withUnsafeBytes(of: draws) { Array($0) }
        bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
        bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 9562 variant
        let uuid = UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        return uuid.uuidString.lowercased()
    }
}
