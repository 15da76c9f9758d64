import Foundation
import PropertyBased
import Testing
@testable import HaulCore

/// `-i` lists as wget and aria2c write them: any list of URLs with aria2c's indented per-URL options reads back as
/// written, whatever the indentation, comments, blank lines and line endings; anything else is refused by line.
@Suite struct InputListPropertyTests {
    struct Written: Sendable {
        var url: String
        var output: String?
        var directory: String?
        var checksum: String?
        var headers: [String]
    }

    static let word = Gen.element(of: Array("abcxyz0129-_.")).map { $0 ?? "a" }.string(of: 1...8)
    static let url = zip(Gen.bool, word, word.array(of: 0...3)).map { https, host, path in
        (https ? "https://" : "http://") + host + ".test/" + path.joined(separator: "/")
    }
    static let header = zip(Gen.element(of: ["X-Token", "Referer", "Accept"]), word).map { "\($0 ?? "X-A"): \($1)" }
    static let written = zip(url, word.optional, word.optional, Gen.bool, header.array(of: 0...3)).map {
        Written(url: $0, output: $1, directory: $2.map { "/tmp/" + $0 }, checksum: $3 ? "sha-256=" + String(repeating: "ab", count: 32) : nil, headers: $4)
    }
    static let indent = Gen.element(of: [" ", "  ", "\t", " \t", "    "]).map { $0 ?? " " }

    /// The list's text, with its options in a random order and noise between entries.
    static func text(_ entries: [Written], indents: [String], noise: [Bool], crlf: Bool) -> String {
        var lines: [String] = ["# a list for haul and aria2c"]
        for (index, entry) in entries.enumerated() {
            lines.append(entry.url)
            var options: [String] = []
            if let output = entry.output { options.append("out=\(output)") }
            if let directory = entry.directory { options.append("dir=\(directory)") }
            if let checksum = entry.checksum { options.append("checksum=\(checksum)") }
            options += entry.headers.map { "header=\($0)" }
            if index % 2 == 1 { options.reverse() }
            for (number, option) in options.enumerated() {
                lines.append(indents[(index + number) % indents.count] + option)
                if noise[(index + number) % noise.count] { lines.append(number % 2 == 0 ? "" : "# between options") }
            }
            if noise[index % noise.count] { lines.append("   ") }
        }
        return lines.joined(separator: crlf ? "\r\n" : "\n")
    }

    /// The same list read as it arrives, in chunks of any size cut anywhere (``URLListScanner`` feeding
    /// ``InputList/Builder``, as `haul get -i` reads it): the entries of reading it whole.
    @Test func aListReadInChunksGivesTheEntriesOfTheWholeText() async throws {
        await propertyCheck(input: Self.written.array(of: 0...8), Self.indent.array(of: 1...4), Gen.bool.array(of: 1...5), Gen.int(in: 1...97)) {
            entries, indents, noise, chunk in
            let text = Self.text(entries, indents: indents, noise: noise, crlf: chunk % 2 == 0)
            let bytes = Array(text.utf8)
            var scanner = URLListScanner()
            var builder = InputList.Builder()
            var streamed: [InputList.Entry] = []
            do {
                var start = 0
                while start < bytes.count {
                    let end = min(bytes.count, start + chunk)
                    for line in try scanner.consume(bytes[start..<end]) {
                        if let entry = try builder.add(line.text, indented: line.indented, line: line.line) { streamed.append(entry) }
                    }
                    start = end
                }
                for line in try scanner.finish() {
                    if let entry = try builder.add(line.text, indented: line.indented, line: line.line) { streamed.append(entry) }
                }
                if let last = builder.finish() { streamed.append(last) }
            } catch {
                Issue.record("refused in chunks of \(chunk): \(error)")
                return
            }
            #expect(streamed == (try? InputList.parse(text)), "chunks of \(chunk): \(text)")
        }
    }

    @Test func anyListReadsBackAsWritten() async throws {
        await propertyCheck(input: Self.written.array(of: 0...8), Self.indent.array(of: 1...4), Gen.bool.array(of: 1...5), Gen.bool) {
            entries, indents, noise, crlf in
            let text = Self.text(entries, indents: indents, noise: noise, crlf: crlf)
            guard let parsed = try? InputList.parse(text) else {
                Issue.record("refused \(text)")
                return
            }
            #expect(parsed.map(\.url) == entries.map(\.url), "\(text)")
            for (read, wrote) in zip(parsed, entries) {
                #expect(read.output == wrote.output && read.directory == wrote.directory && read.checksum == wrote.checksum)
                // Headers keep their order (options of one URL may come in any order, but headers are kept in theirs).
                #expect(Set(read.headers) == Set(wrote.headers) && read.headers.count == wrote.headers.count)
            }
            // Each entry is named by the line its URL is on.
            let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            for entry in parsed { #expect(lines[entry.line - 1].hasPrefix(entry.url)) }
        }
    }

    @Test func anOptionHaulDoesNotTakeIsRefusedByLine() async {
        await propertyCheck(input: Self.written.array(of: 1...4), Gen.element(of: ["split", "max-connection-per-server", "referer", "Out-Of-Band"]), Self.indent) {
            entries, option, indent in
            let text = Self.text(entries, indents: [" "], noise: [false], crlf: false) + "\n" + indent + "\(option ?? "x")=4\n"
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).count - 1
            #expect(throws: InputError.self) { try InputList.parse(text) }
            do {
                _ = try InputList.parse(text)
            } catch let error as InputError {
                #expect(error.message.contains("line \(line) "), "\(error.message)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test func plainListsReadAsBefore() throws {
        let text = "https://a.test/1\n\n# comment\n  https://b.test/2  \nhttp://c.test/3\r\n"
        #expect(try InputList.parse(text).map(\.url) == ["https://a.test/1", "https://b.test/2", "http://c.test/3"])
    }

    @Test(arguments: [
        "  out=x\nhttps://a.test/", "https://a.test/\n  out=x\n  out=y", "https://a.test/\n  out=", "https://a.test/\n  just words",
        "https://a.test/\thttps://mirror.test/",
    ])
    func malformedListsAreRefused(text: String) {
        #expect(throws: InputError.self) { try InputList.parse(text) }
    }
}
