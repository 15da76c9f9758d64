import Foundation
import PropertyBased
import Testing
@testable import HaulCore

/// How a list's bytes are read whatever the editor that saved them: a UTF-8 byte-order mark before the first line is
/// no part of it (Windows Notepad writes one; wget and aria2c refuse that line instead), a NUL byte refuses the list at its line,
/// and UTF-16 text is named as such, wherever the chunks a pipe delivers are cut.
@Suite struct URLListTextTests {
    static let host = Gen.element(of: Array("abcxyz0129")).map { $0 ?? "a" }.string(of: 1...8)
    static let url = zip(Gen.bool, host).map { https, host in (https ? "https://" : "http://") + host + ".test/f" }
    static let bom: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The entries of `bytes` read in chunks of `size`, as a pipe may deliver them.
    static func scan(_ bytes: [UInt8], chunk size: Int) throws(URLListScanner.Refusal) -> [URLListScanner.Entry] {
        var scanner = URLListScanner()
        var entries: [URLListScanner.Entry] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + size)
            entries += try scanner.consume(bytes[start..<end])
            start = end
        }
        return entries + (try scanner.finish())
    }

    @Test func aByteOrderMarkBeforeTheFirstLineIsSkippedWhereverTheChunksAreCut() async {
        await propertyCheck(input: Self.url.array(of: 1...6), Gen.int(in: 1...7), Gen.bool) { urls, chunk, crlf in
            let text = Array(urls.joined(separator: crlf ? "\r\n" : "\n").utf8)
            let plain = try? Self.scan(text, chunk: chunk)
            let marked = try? Self.scan(Self.bom + text, chunk: chunk)
            #expect(marked != nil && marked == plain, "chunks of \(chunk)")
            #expect(marked?.first?.text == urls.first, "\(String(describing: marked?.first))")
            #expect(marked?.map(\.text) == urls)
        }
    }

    @Test func onlyALeadingMarkIsSkipped() throws {
        // A mark that begins a later line is kept (and refused as no URL by the list's reader): no editor writes one.
        let entries = try Self.scan(Array("https://a.test/\n\u{FEFF}https://b.test/\n".utf8), chunk: 64)
        #expect(entries.map(\.text) == ["https://a.test/", "\u{FEFF}https://b.test/"])
        // Before an indented option line, the indentation still counts.
        let indented = try Self.scan(Self.bom + Array("  out=x\n".utf8), chunk: 2)
        #expect(indented == [URLListScanner.Entry(line: 1, text: "out=x", indented: true)])
        #expect(try InputList.parse("\u{FEFF}https://a.test/\n").map(\.url) == ["https://a.test/"])
    }

    @Test func aNULByteRefusesTheListAtItsLine() async {
        await propertyCheck(input: Self.url.array(of: 1...6), Gen.int(in: 0...100), Gen.int(in: 0...40), Gen.int(in: 1...9)) {
            urls, which, offset, chunk in
            let line = which % urls.count
            var lines = urls.map { Array($0.utf8) }
            lines[line].insert(0, at: offset % (lines[line].count + 1))
            let bytes = Array(lines.joined(separator: [UInt8(ascii: "\n")]))
            #expect(throws: URLListScanner.Refusal.nulByte(line: line + 1)) { try Self.scan(bytes, chunk: chunk) }
        }
        let message = URLListScanner.Refusal.nulByte(line: 3).message("the URL list l.txt")
        #expect(message == "the URL list l.txt, line 3: has a NUL byte, which no URL has; give a text file, one URL a line")
    }

    @Test(arguments: [[0xFF, 0xFE], [0xFE, 0xFF]] as [[UInt8]])
    func utf16TextIsNamed(_ mark: [UInt8]) {
        let little = mark[0] == 0xFF
        let bytes = mark + "https://a.test/\n".utf8.flatMap { little ? [$0, 0] : [0, $0] }
        #expect(throws: URLListScanner.Refusal.utf16) { try Self.scan(bytes, chunk: 3) }
        #expect(URLListScanner.Refusal.utf16.message("the URL list l.txt") == "the URL list l.txt is UTF-16 text; save it as UTF-8 (one URL a line)")
    }
}
