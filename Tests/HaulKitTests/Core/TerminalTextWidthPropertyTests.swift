import PropertyBased
import Testing
@testable import HaulCore

/// `TerminalText.width` of any text equals the sum of its characters' widths, the rule it is defined by: ASCII is
/// counted by its bytes, and that shortcut must agree with the characters everywhere (controls, CR LF, DEL) and give
/// way to them as soon as anything else appears.
@Suite struct TerminalTextWidthPropertyTests {
    /// Every ASCII byte, controls and DEL among them.
    static let ascii = Gen.int(in: 0...0x7F).map { Character(Unicode.Scalar(UInt8($0))) }
    /// Characters of other widths: wide, emoji, combining marks, format characters, an emoji with VS16.
    static let other = Gen.element(of: ["界", "é", "e\u{301}", "\u{301}", "\u{200B}", "🙂", "☺\u{FE0F}", "\u{2028}", "ｱ", "\r\n"])
        .map { Character($0 ?? "x") }
    static let text = Gen.oneOf(ascii, ascii, ascii, other).string(of: 0...40)

    static func model(_ text: String) -> Int {
        text.reduce(0) { $0 + TerminalText.width(of: $1) }
    }

    @Test func anyTextIsAsWideAsItsCharacters() async {
        await propertyCheck(input: Self.text) { text in
            #expect(TerminalText.width(text) == Self.model(text), "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
            #expect(TerminalText.width(Substring(text)) == Self.model(text))
        }
    }

    @Test func asciiIsOneColumnPerPrintableByte() {
        #expect(TerminalText.width("https://127.0.0.1:9/queued/7.bin") == 32)
        #expect(TerminalText.width("a\tb\u{7F}c\r\nd\u{1B}[31m") == 8)
        #expect(TerminalText.width("") == 0)
    }
}
