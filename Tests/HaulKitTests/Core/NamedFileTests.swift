import Testing
@testable import HaulCore

@Suite("Files named by options, and URL lists read as they arrive")
struct NamedFileTests {
    static let kinds: [NamedFile] = [.caBundle, .caFolderEntry, .clientCertificate, .clientKey, .netrc, .urlList, .webCertificate, .webKey, .apiKey]

    @Test func onlyARegularFileWithinItsKindsSizeIsRead() {
        for kind in Self.kinds {
            #expect(kind.problem("/f", type: .regular, size: 0) == nil)
            #expect(kind.problem("/dev/null", type: .nullDevice, size: 0) == nil, "/dev/null reads as an empty file")
            #expect(kind.problem("/f", type: .regular, size: Int64(kind.maxBytes)) == nil)
            let large = kind.problem("/f", type: .regular, size: Int64(kind.maxBytes) + 1)
            #expect(large?.contains("larger than") == true, "\(kind): \(large ?? "read")")
            for type in [NamedFile.FileType.fifo, .characterDevice, .blockDevice, .socket, .directory, .symbolicLink, .other] {
                let problem = kind.problem("/f", type: type, size: 0)
                #expect(problem != nil, "\(kind) \(type) must be refused")
                #expect(problem?.contains("/f") == true && problem?.contains("\n") == false, "\(problem ?? "")")
            }
        }
        #expect(NamedFile.caBundle.problem("/p", type: .fifo, size: 0) == "the CA file /p is a FIFO, not a regular file")
        #expect(NamedFile.urlList.problem("/dev/zero", type: .characterDevice, size: 0)?.hasSuffix("(give - to read standard input)") == true)
    }

    /// Where a pipe is read (`-i <(command)`, a named pipe: read once, as standard input is), a pipe is taken and
    /// nothing else that is not a regular file.
    @Test func wherePipesAreReadOnlyAPipeIsTakenBesidesARegularFile() {
        for kind in Self.kinds {
            #expect(kind.problem("/f", type: .fifo, size: 0, readsPipe: true) == nil)
            #expect(kind.problem("/f", type: .regular, size: 0, readsPipe: true) == nil)
            for type in [NamedFile.FileType.characterDevice, .blockDevice, .socket, .directory, .symbolicLink, .other] {
                #expect(kind.problem("/f", type: type, size: 0, readsPipe: true) != nil, "\(kind) \(type) must be refused")
            }
        }
    }

    @Test func aFiftyMegabyteNetrcIsRefusedBySize() {
        #expect(NamedFile.netrc.problem("/n", type: .regular, size: 50_000_000) == "the netrc file /n is larger than 1 MiB, the most Haul reads of it")
    }

    @Test func onlyHaulsOwnFilesRefuseLinks() {
        for kind in Self.kinds { #expect(kind.followsLinks == (kind != .apiKey), "\(kind)") }
    }

    @Test func hashedCertificateNamesAreOpenSSLs() {
        for name in ["9d6523ce.0", "00000000.1", "abcdef01.12"] { #expect(NamedFile.isHashedCertificateName(name), "\(name)") }
        for name in ["ca-certificates.crt", "9d6523ce.r0", "9D6523CE.0", "9d6523c.0", "9d6523ce0", "9d6523ce.", "9d6523ce.0.pem", "9d6523ce.1234"] {
            #expect(!NamedFile.isHashedCertificateName(name), "\(name)")
        }
    }

    func scan(_ text: String, chunks: [Int]) throws(URLListScanner.Refusal) -> [URLListScanner.Entry] {
        var scanner = URLListScanner()
        let bytes = Array(text.utf8)
        var entries: [URLListScanner.Entry] = []
        var start = 0, index = 0
        while start < bytes.count {
            let size = max(1, chunks.isEmpty ? bytes.count : chunks[index % chunks.count])
            entries += try scanner.consume(bytes[start..<min(bytes.count, start + size)])
            start += size
            index += 1
        }
        return entries + (try scanner.finish())
    }

    @Test func aListGivesItsURLsWithTheirLinesWhateverTheChunks() throws {
        let text = "https://a/1\n\n# comment\n  https://b/2  \r\nhttp://c/3"
        let expected = [URLListScanner.Entry(line: 1, text: "https://a/1"), .init(line: 4, text: "https://b/2", indented: true), .init(line: 5, text: "http://c/3")]
        #expect(try scan(text, chunks: []) == expected)
        var random = SplitMix(seed: 23)
        for _ in 0..<500 {
            let chunks = (0..<4).map { _ in Int(random.next() % 17) + 1 }
            #expect(try scan(text, chunks: chunks) == expected, "\(chunks)")
        }
    }

    @Test func aLineOver64KiBIsRefusedAsSoonAsItsBytesArrive() {
        // /dev/zero: no newline ever. The scanner refuses once 64 KiB + 2 bytes are held, whatever the chunks.
        var scanner = URLListScanner()
        var fed = 0
        var refusal: URLListScanner.Refusal?
        for _ in 0..<100 {
            do {
                _ = try scanner.consume([UInt8](repeating: 0, count: 4_096))
                fed += 4_096
            } catch {
                refusal = error
                break
            }
        }
        #expect(refusal == .lineTooLong(line: 1))
        #expect(fed <= URLListScanner.maxLineBytes + 4_096)
        // Exactly 64 KiB is a line; one more byte is not.
        let line = String(repeating: "a", count: URLListScanner.maxLineBytes)
        #expect((try? scan(line + "\n", chunks: [1_000]))?.count == 1)
        #expect(throws: URLListScanner.Refusal.lineTooLong(line: 2)) { try scan("x\n" + line + "b\n", chunks: [777]) }
        #expect(throws: URLListScanner.Refusal.lineTooLong(line: 1)) { try scan(line + "bc", chunks: [1 << 20]) }
    }

    @Test func textThatIsNotUTF8IsRefusedWithItsLine() {
        var scanner = URLListScanner()
        #expect(throws: URLListScanner.Refusal.notUTF8(line: 2)) { _ = try scanner.consume(Array("ok\n".utf8) + [0xff, 0xfe, 10]) }
    }

    @Test func aListOverItsLimitsIsRefused() {
        var scanner = URLListScanner(maxURLs: 1_000)
        #expect(throws: URLListScanner.Refusal.tooManyURLs) { _ = try scanner.consume(Array(String(repeating: "u\n", count: 1_001).utf8)) }
        var comments = URLListScanner(maxURLs: 1_000)
        #expect(throws: Never.self) { _ = try comments.consume(Array(String(repeating: "#\n\n", count: 5_000).utf8)) }
        var large = URLListScanner(maxListBytes: 10_000)
        #expect(throws: URLListScanner.Refusal.listTooLarge) {
            for _ in 0..<11 { _ = try large.consume([UInt8](repeating: 10, count: 1_000)) }
        }
        #expect(URLListScanner.maxURLs == 1_000_000 && URLListScanner.maxListBytes == 128 << 20 && URLListScanner.maxLineBytes == 65_536)
        #expect(URLListScanner.Refusal.lineTooLong(line: 3).message("the URL list l") == "the URL list l, line 3: longer than 64 KiB, which no URL is")
    }
}
