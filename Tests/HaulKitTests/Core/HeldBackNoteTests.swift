import PropertyBased
import Testing
@testable import HaulCore

/// A held-back note names its limit, and the limit read back from any such note is that limit; any other note (a
/// retry's, a cut or edited one) names none.
@Suite struct HeldBackNoteTests {
    static let host = Gen.element(of: Array("abcxyz0129-.:[]")).map { $0 ?? "a" }.string(of: 0...30)

    @Test func anyNoteGivesBackItsLimit() async {
        await propertyCheck(input: Gen.int(in: 1...1_000), Self.host) { limit, host in
            let note = HeldBackNote.text(limit: limit, host: host)
            #expect(HeldBackNote.limit(in: note) == limit, "\(note)")
            // Cut anywhere, it is not a held-back note any more.
            for cut in [1, note.count / 2, note.count - 1] {
                #expect(HeldBackNote.limit(in: String(note.prefix(cut))) == nil)
                #expect(HeldBackNote.limit(in: String(note.dropFirst(cut))) == nil)
            }
        }
    }

    @Test func otherNotesNameNoLimit() {
        #expect(HeldBackNote.text(limit: 8, host: "example.com:443") == "held back: 8 downloads from example.com:443 at once (the per-host limit)")
        for note in [nil, "", "retry 2/5 in 3s: connection refused", "held back: x downloads from h at once (the per-host limit)",
                     "held back: 8 downloads at once (the per-host limit)", "held back: 99999999999999999999999 downloads from h at once (the per-host limit)"] {
            #expect(HeldBackNote.limit(in: note) == nil, "\(note ?? "nil")")
        }
    }
}
