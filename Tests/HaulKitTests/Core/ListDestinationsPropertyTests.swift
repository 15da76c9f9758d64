import PropertyBased
import Testing
@testable import HaulCore

/// A batch's first reading (``ListDestinations``): whatever entries come in whatever order, each is found new, the
/// same download as an earlier one, or saving to a file an earlier one names, exactly as a model over the strings
/// themselves says; every file named is claimed, and nothing else.
@Suite struct ListDestinationsPropertyTests {
    static let urls = ["https://h/a.bin", "https://h/b.bin", "https://g/a.bin", "https://h/a.bin?x"]
    static let folders = ["/d", "/d/e"]
    static let files = ["/d/a.bin", "/d/f1.bin", "/d/e/a.bin"]

    @Test func claimsAgreeWithAModelOfTheStrings() async {
        await propertyCheck(input: Gen.int(in: 0...19).array(of: 0...80)) { codes in
            var destinations = ListDestinations()
            var seen: Set<String> = []
            var named: [String: ListDestinations.Source] = [:]
            var duplicates = 0
            var firstDuplicate: ListDestinations.Source?
            for (index, code) in codes.enumerated() {
                let url = Self.urls[code % 4]
                let kind = code / 4    // 0, 1: a folder; 2, 3, 4: a file
                let file = kind >= 2 ? Self.files[kind - 2] : nil
                let destination = file.map { "f:" + $0 } ?? "d:" + Self.folders[kind]
                let source: ListDestinations.Source = index < 3 ? .argument(index + 1) : .line(2 * index + 1)
                let expected: ListDestinations.Claim
                if !seen.insert(url + "\n" + destination).inserted {
                    duplicates += 1
                    if firstDuplicate == nil { firstDuplicate = source }
                    expected = .duplicate
                } else if let file, let earlier = named[file] {
                    expected = .conflict(earlier: earlier)
                } else {
                    if let file { named[file] = source }
                    expected = .new
                }
                #expect(destinations.claim(url: url, destination: destination, file: file, source: source) == expected, "entry \(index)")
            }
            #expect(destinations.duplicates == duplicates && destinations.firstDuplicate == firstDuplicate)
            #expect((destinations.duplicateNote == nil) == (duplicates == 0))
            for path in Self.files + Self.folders + ["/d/a (1).bin", "/d/A.bin"] {
                #expect(destinations.isClaimed(path) == (named[path] != nil), "\(path)")
            }
        }
    }

    /// Under `-nc`, the first entry of a file is the one retrieved, whatever the later ones are; two entries that
    /// both named the file themselves (`out=`) are still a conflict. A model over the strings says which.
    @Test func underNoClobberTheFirstEntryOfAFileIsKept() async {
        await propertyCheck(input: Gen.int(in: 0...11).array(of: 0...60), Gen.bool.array(of: 60...60)) { codes, namedFlags in
            var destinations = ListDestinations()
            var first: [String: (source: ListDestinations.Source, named: Bool)] = [:]
            var seen: Set<String> = []
            var later = 0
            for (index, code) in codes.enumerated() {
                let url = Self.urls[code % 4], file = Self.files[code / 4], named = namedFlags[index]
                let source: ListDestinations.Source = index < 2 ? .argument(index + 1) : .line(index + 1)
                let expected: ListDestinations.Claim
                if !seen.insert(url + "\n" + file).inserted {
                    expected = .duplicate
                } else if let earlier = first[file] {
                    if named && earlier.named {
                        expected = .conflict(earlier: earlier.source)
                    } else {
                        expected = .later(than: earlier.source)
                        later += 1
                    }
                } else {
                    first[file] = (source, named)
                    expected = .new
                }
                let claim = destinations.claim(url: url, destination: "f:" + file, file: file, source: source, named: named, keepingFirst: true)
                #expect(claim == expected, "entry \(index)")
                if case .conflict = claim { return }
            }
            #expect(destinations.laterEntries == later && (destinations.laterNote == nil) == (later == 0))
            for file in Self.files {
                for (index, _) in codes.enumerated() {
                    let source: ListDestinations.Source = index < 2 ? .argument(index + 1) : .line(index + 1)
                    #expect(destinations.isFirst(source, toSave: file) == (first[file].map { $0.source == source } ?? true))
                }
            }
        }
    }

    @Test(arguments: [
        (ListDestinations.Source.line(1), ListDestinations.Source.line(4),
         "lines 1 and 4 of the URL list both save to /d/x.bin; give each URL a file of its own (out=NAME)"),
        (.argument(1), .argument(2),
         "URLs 1 and 2 of the command line both save to /d/x.bin; give each a file of its own (out=NAME lines in an -i list, or -o NAME one URL at a time)"),
        (.argument(2), .line(7),
         "URL 2 of the command line and line 7 of the URL list both save to /d/x.bin; give the list's URL a file of its own (out=NAME)"),
    ])
    func aConflictIsOneLineNamingBothEntries(_ earlier: ListDestinations.Source, _ entry: ListDestinations.Source, _ line: String) {
        #expect(ListDestinations.conflict(earlier: earlier, entry: entry, path: "/d/x.bin") == line)
    }

    @Test func theNoteCountsRepeatsAndNamesTheFirst() {
        var destinations = ListDestinations()
        #expect(destinations.duplicateNote == nil)
        #expect(destinations.claim(url: "u", destination: "d:/d", file: nil, source: .line(1)) == .new)
        #expect(destinations.claim(url: "u", destination: "d:/d/e", file: nil, source: .line(2)) == .new, "another folder")
        #expect(destinations.claim(url: "u", destination: "d:/d", file: nil, source: .line(5)) == .duplicate)
        #expect(destinations.duplicateNote == "line 5 of the URL list repeats an earlier URL for the same place; it is downloaded once")
        #expect(destinations.claim(url: "u", destination: "d:/d/e", file: nil, source: .line(9)) == .duplicate)
        #expect(destinations.duplicateNote
            == "2 entries repeat an earlier URL for the same place (the first: line 5 of the URL list); each URL is downloaded once")
    }
}
