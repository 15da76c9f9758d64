import PropertyBased
import Testing
@testable import HaulCore

/// A partial file's name fits a file system whatever the destination's: `-o` takes names of up to 255 bytes, as
/// curl's `-o` and wget's `-O` do, and `NAME.haul-part` must then still be a name the file system takes.
@Suite struct PartialFileNameTests {
    /// Characters of 1 to 4 UTF-8 bytes, so that a cut may fall inside one.
    static let character = Gen.element(of: ["a", "Z", "7", " ", "-", ".", "é", "€", "日", "𝄞", "😀"] as [Character])
        .map { $0 ?? "a" }

    @Test func aNameThatFitsKeepsItsPlainPartialName() async {
        await propertyCheck(input: Self.character.array(of: 1...60), Gen.int(in: 0...4_294_967_295)) { characters, uid in
            let name = String(characters)
            #expect(PartialFileName.of("/d/" + name) == "/d/" + name + ".haul-part")
            #expect(PartialFileName.of(name) == name + ".haul-part")
            let user = UInt32(uid)
            #expect(PartialFileName.of("/d/" + name, user: user) == "/d/\(name).\(user).haul-part")
        }
    }

    @Test func anyNameGetsAPartialNameOfAtMost255Bytes() async {
        await propertyCheck(input: Self.character.array(of: 1...255), Gen.int(in: 0...4_294_967_295), Gen.bool) {
            characters, uid, ofUser in
            var name = String(characters)
            while name.utf8.count > 255 { name.removeLast() }
            guard !name.isEmpty else { return }
            let partial = ofUser ? PartialFileName.of("/d/sub/" + name, user: UInt32(uid)) : PartialFileName.of("/d/sub/" + name)
            #expect(partial.hasPrefix("/d/sub/"), "\(partial)")
            let last = String(partial.dropFirst("/d/sub/".count))
            #expect(!last.contains("/"))
            #expect(last.utf8.count <= 255, "\(last.utf8.count) bytes: \(last)")
            #expect(PartialFileName.isPartial(last))
            // The same destination always has the same partial file: a rerun finds its bytes.
            #expect(partial == (ofUser ? PartialFileName.of("/d/sub/" + name, user: UInt32(uid)) : PartialFileName.of("/d/sub/" + name)))
            // Shortened only when the plain form would not fit; then it starts with as much of the name as fits.
            let plain = name + (ofUser ? ".\(UInt32(uid))" : "") + ".haul-part"
            if plain.utf8.count <= 255 {
                #expect(last == plain)
            } else {
                #expect(last.contains("~"))
                #expect(name.hasPrefix(String(last.prefix { $0 != "~" }.prefix(1))))
                #expect(last.utf8.count >= 255 - 4, "uses the room it has: \(last.utf8.count) bytes")
            }
        }
    }

    /// Two long names that begin alike (as generated names often do) have two partial files.
    @Test func longNamesThatDifferOnlyAtTheirEndHaveTwoPartialFiles() {
        let stem = String(String(repeating: "report-2026-11-27-", count: 14).prefix(246))
        var seen: Set<String> = []
        for suffix in ["a", "b", "c", "aa", "é", "0.iso", "1.iso"] {
            seen.insert(PartialFileName.of("/d/" + stem + suffix))
        }
        #expect(seen.count == 7)
        #expect(seen.allSatisfy { $0.utf8.count - "/d/".utf8.count <= 255 })
    }
}
