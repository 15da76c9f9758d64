import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct ContentDispositionTests {
    @Test func prefersDecodedFilenameStar() {
        let header = "attachment; filename=\"EURO rates.txt\"; filename*=utf-8''%e2%82%ac%20rates.txt"
        #expect(ContentDisposition(header)?.filename == "€ rates.txt")
        #expect(ContentDisposition(header)?.type == "attachment")
    }

    @Test func decodesISO88591() {
        #expect(ContentDisposition("attachment; filename*=iso-8859-1'en'%A3%20rates.txt")?.filename == "£ rates.txt")
    }

    @Test func fallsBackWhenFilenameStarIsBroken() {
        #expect(ContentDisposition("attachment; filename=\"plain.txt\"; filename*=UTF-8''%ZZ")?.filename == "plain.txt")
        #expect(ContentDisposition("attachment; filename=\"plain.txt\"; filename*=koi8-r''abc")?.filename == "plain.txt")
        #expect(ContentDisposition("attachment; filename=\"plain.txt\"; filename*=noquotes")?.filename == "plain.txt")
        #expect(ContentDisposition("attachment; filename*=UTF-8''%FF%FE")?.filename == nil)
    }

    @Test func handlesQuotedStringsWithSemicolonsAndEscapes() {
        #expect(ContentDisposition("attachment; filename=\"a;b \\\"c\\\".txt\"; size=3")?.filename == "a;b \"c\".txt")
        #expect(ContentDisposition("attachment;filename=token.bin")?.filename == "token.bin")
        #expect(ContentDisposition("ATTACHMENT; FILENAME=Upper.TXT")?.filename == "Upper.TXT")
    }

    @Test func firstParameterWinsAndEmptyOrParameterOnlyIsInvalid() {
        #expect(ContentDisposition("attachment; filename=a.txt; filename=b.txt")?.filename == "a.txt")
        #expect(ContentDisposition("") == nil)
        #expect(ContentDisposition("filename=a.txt") == nil)
        #expect(ContentDisposition("inline")?.filename == nil)
    }
}

@Suite struct FileNamingTests {
    @Test(arguments: [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "_.._etc_passwd"),
        ("..", nil), (".", nil), ("", nil), ("   ", nil),
        (".bashrc", "bashrc"),
        ("a\\b\\c.txt", "a_b_c.txt"),
        ("name.\u{202E}txt.exe", "name.txt.exe"),
        ("tab\there\nnew\u{7F}line", "tabherenewline"),
        ("trailing dots...", "trailing dots"),
        ("€ rates.txt", "€ rates.txt"),
    ] as [(String, String?)])
    func sanitizes(_ raw: String, _ expected: String?) {
        #expect(FileNaming.sanitize(raw) == expected)
    }

    @Test func boundsLengthKeepingExtension() throws {
        let long = String(repeating: "ä", count: 300) + ".tar.gz"
        let safe = try #require(FileNaming.sanitize(long))
        #expect(safe.utf8.count <= FileNaming.maxNameBytes)
        #expect(safe.hasSuffix(".tar.gz"))
        #expect(safe.hasPrefix("ää"))
    }

    @Test func suggestedNamePrefersHeaderThenURLThenFallback() throws {
        let url = try #require(URL(string: "http://h/dir/file%20name.iso?token=x"))
        #expect(FileNaming.suggestedName(contentDisposition: "attachment; filename=\"a.bin\"", url: url) == "a.bin")
        #expect(FileNaming.suggestedName(contentDisposition: "attachment; filename=\"..\"", url: url) == "file name.iso")
        #expect(FileNaming.suggestedName(contentDisposition: nil, url: url) == "file name.iso")
        #expect(FileNaming.suggestedName(contentDisposition: nil, url: try #require(URL(string: "http://h/"))) == "download")
        #expect(FileNaming.suggestedName(contentDisposition: nil, url: try #require(URL(string: "http://h/a/%2E%2E"))) == "download")
    }

    @Test func freeNameCountsUpBeforeTheExtension() {
        let taken: Set = ["a.txt", "a (1).txt", "b", "c.tar.gz"]
        #expect(FileNaming.freeName(for: "a.txt", isTaken: taken.contains) == "a (2).txt")
        #expect(FileNaming.freeName(for: "b", isTaken: taken.contains) == "b (1)")
        #expect(FileNaming.freeName(for: "c.tar.gz", isTaken: taken.contains) == "c (1).tar.gz")
        #expect(FileNaming.freeName(for: "new", isTaken: taken.contains) == "new")
        #expect(FileNaming.freeName(for: "x", limit: 3, isTaken: { _ in true }) == nil)
    }
}
