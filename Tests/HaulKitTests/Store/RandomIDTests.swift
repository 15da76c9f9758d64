import Foundation
import Testing
@testable import HaulKit

@Suite("Task ids")
struct RandomIDTests {
    /// Version 4 UUIDs in lower case (RFC 9562: version nibble 4, variant bits 10), all different.
    @Test func idsAreLowerCaseVersion4UUIDsAndDistinct() throws {
        var seen = Set<String>()
        for _ in 0..<2_000 {
            let id = RandomID.make()
            #expect(id == id.lowercased(), "\(id)")
            let uuid = try #require(UUID(uuidString: id), "not a UUID: \(id)")
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 4, "version of \(id)")
            #expect(bytes[8] >> 6 == 0b10, "variant of \(id)")
            seen.insert(id)
        }
        #expect(seen.count == 2_000)
    }

    /// Every bit other than the version and variant ones varies (each is seen both set and clear).
    @Test func theRandomBitsAllVary() throws {
        var ones = [UInt8](repeating: 0, count: 16), zeros = [UInt8](repeating: 0, count: 16)
        for _ in 0..<512 {
            let uuid = try #require(UUID(uuidString: RandomID.make()))
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            for index in 0..<16 {
                ones[index] |= bytes[index]
                zeros[index] |= ~bytes[index]
            }
        }
        for index in 0..<16 {
            let fixed: UInt8 = index == 6 ? 0xF0 : index == 8 ? 0xC0 : 0
            #expect(ones[index] & zeros[index] == ~fixed, "byte \(index): bits that never changed \(String(~(ones[index] & zeros[index]), radix: 2))")
        }
    }
}
