import Foundation

/// An IPv4 or IPv6 address as its bytes (4 or 16), parsed without the system's resolver.
public struct IPAddress: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The address in network order: 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// Whether this is an IPv4 address.
    public var isIPv4: Bool { bytes.count == 4 }

    /// Parses a literal address: dotted IPv4 (`127.0.0.1`, four decimal parts of 0–255, no leading zeros beyond
    /// one digit), or IPv6 (`::1`, `2001:db8::8:800:200c:417a`, with an IPv4 tail `::ffff:1.2.3.4`), with or
    /// without brackets. A zone (`%eth0`) is ignored. `nil` for anything else, host names included.
    public init?(_ text: some StringProtocol) {
        var literal = Substring(text)
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = literal.dropFirst().dropLast() }
        if let zone = literal.firstIndex(of: "%") { literal = literal[..<zone] }
        if let v4 = Self.parseIPv4(literal) {
            bytes = v4
        } else if let v6 = Self.parseIPv6(literal) {
            bytes = v6
        } else {
            return nil
        }
    }

    /// An address of these 4 or 16 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) carries; `nil` for any other.
    public var mappedIPv4: IPAddress? {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff else { return nil }
        return IPAddress(bytes: Array(bytes[12...]))
    }

    /// Dotted decimal for IPv4; for IPv6 eight groups of lower-case hex, the longest run of zero groups as `::`.
    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        let groups = (0..<8).map { Int(bytes[2 * $0]) << 8 | Int(bytes[2 * $0 + 1]) }
        var best = (start: -1, length: 0), run = (start: -1, length: 0)
        for (index, group) in groups.enumerated() {
            if group == 0 {
                run = run.start < 0 ? (index, 1) : (run.start, run.length + 1)
                if run.length > best.length { best = run }
            } else {
                run = (-1, 0)
            }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.length > 1 else { return hex.joined(separator: ":") }
        let head = hex[..<best.start].joined(separator: ":"), tail = hex[(best.start + best.length)...].joined(separator: ":")
        return head + "::" + tail
    }

    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ $0.isASCII && $0.isNumber }),
                  part.count == 1 || part.first != "0", let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.contains(":"), text.count <= 45 else { return nil }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String, allowIPv4Tail: Bool) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            var bytes: [UInt8] = []
            for (index, piece) in pieces.enumerated() {
                if allowIPv4Tail, index == pieces.count - 1, piece.contains(".") {
                    guard let v4 = parseIPv4(piece) else { return nil }
                    bytes += v4
                } else {
                    guard (1...4).contains(piece.count), let value = UInt16(piece, radix: 16),
                          piece.allSatisfy(\.isHexDigit) else { return nil }
                    bytes += [UInt8(value >> 8), UInt8(value & 0xff)]
                }
            }
            return bytes
        }
        if halves.count == 1 {
            guard let all = groups(halves[0], allowIPv4Tail: true), all.count == 16 else { return nil }
            return all
        }
        guard let head = groups(halves[0], allowIPv4Tail: false), let tail = groups(halves[1], allowIPv4Tail: true),
              head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}

/// A range of addresses in CIDR notation (`127.0.0.0/8`, `fd00::/8`), as curl's `no_proxy` takes them.
public struct IPRange: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The first address of the range (its bits past the prefix are zero).
    public let network: IPAddress
    /// How many leading bits an address must share with ``network``: 0–32 for IPv4, 0–128 for IPv6.
    public let prefixLength: Int

    /// Parses `ADDRESS/BITS`; `nil` unless the address is a literal and the prefix length fits its family.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let address = IPAddress(parts[0]), (1...3).contains(parts[1].count),
              parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let bits = Int(parts[1]),
              bits <= address.bytes.count * 8 else { return nil }
        self.init(network: address, prefixLength: bits)
    }

    /// The range of addresses that share `prefixLength` leading bits with `address`.
    public init(network address: IPAddress, prefixLength: Int) {
        let bits = max(0, min(prefixLength, address.bytes.count * 8))
        var masked = address.bytes
        for index in masked.indices {
            let kept = max(0, min(8, bits - index * 8))
            masked[index] &= kept == 0 ? 0 : UInt8(truncatingIfNeeded: 0xff << (8 - kept))
        }
        network = IPAddress(bytes: masked) ?? address
        self.prefixLength = bits
    }

    /// Whether `address` lies in the range (an IPv4-mapped IPv6 address counts as its IPv4 address).
    public func contains(_ address: IPAddress) -> Bool {
        let candidate = network.isIPv4 ? (address.mappedIPv4 ?? address) : address
        guard candidate.bytes.count == network.bytes.count else { return false }
        return IPRange(network: candidate, prefixLength: prefixLength).network == network
    }

    /// `network/prefixLength`.
    public var description: String { "\(network)/\(prefixLength)" }
}

/// The address family connections are limited to (`-4`, `-6`): names resolve to addresses of this family only.
public enum IPFamily: String, Codable, Hashable, Sendable {
    /// IPv4 only (`-4`, `--ipv4`).
    case v4
    /// IPv6 only (`-6`, `--ipv6`).
    case v6
}
