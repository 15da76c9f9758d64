import Testing
@testable import HaulCore

/// `haul ls`'s table: whole for scripts, fitted to a terminal (no line wider than it, for any tasks), ids as their
/// shortest unique prefixes.
@Suite struct TaskTableTests {
    static let mib: Int64 = 1 << 20

    static let rows = [
        TaskTable.Row(
            id: "3f2a91bc-5d1e-4c39-9a61-0b7c2e4f8a10", state: "running", bytes: 12 * mib, total: 48 * mib,
            bytesPerSecond: 512 * 1024, path: "/home/someone/Downloads/ubuntu-24.04.1-desktop-amd64.iso"),
        TaskTable.Row(
            id: "3f2a91bd-0000-4c39-9a61-0b7c2e4f8a10", state: "failed", bytes: 0,
            path: "http://127.0.0.1:8080/files/missing.bin",
            note: "http://127.0.0.1:8080/files/missing.bin answered 404 Not Found; check the URL and any headers it needs",
            url: "http://127.0.0.1:8080/files/missing.bin"),
        TaskTable.Row(
            id: "77c0aa11-1e2f-4a3b-8c4d-5e6f7a8b9c0d", state: "finished", bytes: 3 * mib, total: 3 * mib,
            path: "/home/someone/Downloads/notes.txt"),
    ]

    @Test func fullKeepsEveryValueWholeOneTaskPerLine() {
        let lines = TaskTable.full(Self.rows)
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("ID                                    STATE     BYTES     TOTAL     SPEED        PATH"))
        #expect(lines[1].contains(Self.rows[0].id) && lines[1].contains(Self.rows[0].path) && lines[1].contains("512.0 KiB/s"))
        #expect(lines[2].hasSuffix(Self.rows[1].note ?? "?"), "the note whole, last")
        // A newline or escape in a path cannot break the one line per task.
        let hostile = TaskTable.Row(id: "x", state: "waiting", bytes: 0, path: "/tmp/a\nb\u{1B}[2J.bin", note: "n\r\n")
        let table = TaskTable.full([hostile])
        #expect(table.count == 2 && table[1].contains("/tmp/a?b?[2J.bin") && table[1].hasSuffix("n??"))
        #expect(TaskTable.full([]) == ["ID  STATE  BYTES  TOTAL  SPEED  PATH  NOTE"])
    }

    @Test func eightyColumnsShowEveryColumnWithTheNoteOnItsOwnLine() {
        let lines = TaskTable.fitted(Self.rows, width: 80)
        #expect(lines == [
            "ID        STATE        BYTES     TOTAL        SPEED  PATH",
            "3f2a91bc  running   12.0 MiB  48.0 MiB  512.0 KiB/s  ubuntu-24.04.…top-amd64.iso",
            "3f2a91bd  failed         0 B         -            -  http://1…/files/missing.bin",
            "          answered 404 Not Found; check the URL and any headers it needs",
            "77c0aa11  finished   3.0 MiB   3.0 MiB            -  /home/som…wnloads/notes.txt",
        ], "\(lines)")
        for line in lines { #expect(TerminalText.width(line) <= 80, "\(line)") }
        #expect(lines[0].hasPrefix("ID ") && lines[0].contains("SPEED") && lines[0].hasSuffix("PATH"))
        #expect(lines[1].hasPrefix("3f2a91bc  ") && lines[2].hasPrefix("3f2a91bd  ") && lines[4].hasPrefix("77c0aa11  "))
        #expect(lines[1].hasSuffix("amd64.iso") && lines[1].contains("…"), "the path shortened in its folders: \(lines[1])")
        #expect(lines[3].hasPrefix("          ") && lines[3].contains("answered 404"), "the note on a line of its own: \(lines[3])")
    }

    @Test func aWideTerminalKeepsTheNoteInItsColumn() {
        let lines = TaskTable.fitted(Self.rows, width: 220)
        #expect(lines.count == 4)
        #expect(lines[0].hasSuffix("NOTE"))
        #expect(lines[2].hasSuffix("answered 404 Not Found; check the URL and any headers it needs"))
        #expect(lines[1].contains(Self.rows[0].path), "room for the whole path")
    }

    @Test func narrowTerminalsFoldTheByteCountsThenLeaveOutTheSpeed() {
        let sixty = TaskTable.fitted(Self.rows, width: 60)
        #expect(sixty[0].contains("DONE") && !sixty[0].contains("BYTES") && sixty[0].contains("SPEED"), "\(sixty)")
        #expect(sixty[1].contains("25%") && sixty[4].contains("100%"), "\(sixty)")
        #expect(sixty[3] == "          answered 404 Not Found; check the URL and any hea…", "the note without the URL the row shows: \(sixty)")
        let forty = TaskTable.fitted(Self.rows, width: 40)
        #expect(!forty[0].contains("SPEED"), "\(forty)")
        for line in sixty + forty { #expect(TerminalText.width(line) <= 60) }
        #expect(forty.allSatisfy { TerminalText.width($0) <= 40 }, "\(forty)")
        // Nobody moving: no column of dashes.
        let still = Self.rows.map { row in
            var row = row
            row.bytesPerSecond = nil
            return row
        }
        #expect(!TaskTable.fitted(still, width: 80)[0].contains("SPEED"))
    }

    @Test func idsAreTheirShortestUniquePrefixesOfEightAtLeast() {
        #expect(TaskTable.uniquePrefixes(["3f2a91bc-aaaa", "3f2a91bd-bbbb", "77c0aa11-cccc"]) == ["3f2a91bc", "3f2a91bd", "77c0aa11"])
        #expect(TaskTable.uniquePrefixes(["3f2a91bc-aaaa", "3f2a91bc-abbb", "3f2a91bc-b"]) == ["3f2a91bc-aa", "3f2a91bc-ab", "3f2a91bc-b"])
        #expect(TaskTable.uniquePrefixes(["abc", "abcdefghijk", "abcdefghijz"]) == ["abc", "abcdefghijk", "abcdefghijz"])
        #expect(TaskTable.uniquePrefixes(["my-download", "my-download-2"]) == ["my-download", "my-download-"])
        #expect(TaskTable.uniquePrefixes([]) == [])
    }

    /// Any ids: each prefix starts its id, is at least 8 characters (or the whole id), and names exactly one task
    /// the way `haul pause PREFIX` resolves it (an exact id first, else the only id it starts).
    @Test func everyPrefixResolvesToItsOwnTask() {
        let alphabet: [Character] = Array("0123456789abcdef-")
        forAll(count: 500, seed: 26) { random in
            let count = Int.random(in: 1...40, using: &random)
            let shared = random.string(from: alphabet, maxLength: 12)
            let ids = Array(Set((0..<count).map { _ in shared + random.string(from: alphabet, maxLength: 10) }))
            let prefixes = TaskTable.uniquePrefixes(ids)
            for (id, prefix) in zip(ids, prefixes) {
                #expect(id.hasPrefix(prefix) && (prefix.count >= 8 || prefix == id), "\(id): \(prefix)")
                let resolved = ids.contains(prefix) ? [prefix] : ids.filter { $0.hasPrefix(prefix) }
                #expect(resolved == [id], "\(prefix) of \(id) among \(ids)")
            }
        }
    }

    /// Any tasks (long, wide, hostile paths and notes, any numbers) at any width: no line is wider than the
    /// terminal, none holds a control character, and every task keeps a line starting with its id's prefix.
    @Test func noLineIsWiderThanTheTerminalForAnyTasks() {
        let alphabet: [Character] = Array("abc/-_.0123456789 ") + ["日", "本", "é", "👨‍👩‍👧", "\u{1B}", "\n", "\u{202E}", "…"]
        let states = ["waiting", "running", "paused", "finished", "failed", "cancelled"]
        forAll(count: 300, seed: 2_626) { random in
            let rows = (0..<Int.random(in: 0...6, using: &random)).map { index in
                TaskTable.Row(
                    id: String(format: "%08x", index) + random.string(from: alphabet, maxLength: 30),
                    state: states.randomElement(using: &random) ?? "waiting", bytes: random.magnitude(),
                    total: Bool.random(using: &random) ? random.magnitude() : nil,
                    bytesPerSecond: Bool.random(using: &random) ? Double(random.magnitude()) : nil,
                    path: random.string(from: alphabet, maxLength: 120),
                    note: Bool.random(using: &random) ? random.string(from: alphabet, maxLength: 150) : nil)
            }
            let width = Int.random(in: 1...240, using: &random)
            let lines = TaskTable.fitted(rows, width: width)
            for line in lines {
                #expect(TerminalText.width(line) <= width, "at \(width): \(line)")
                #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0.value == 0x202E }, "\(line)")
            }
            #expect(lines.count >= rows.count + 1)
        }
    }

    @Test func pathsKeepTheirFileNameWhileTheyCan() {
        let path = "/home/someone/Downloads/datasets/2024/ubuntu-24.04.1-desktop-amd64.iso"
        #expect(TerminalText.fitPath(path, width: 200) == path)
        #expect(TerminalText.fitPath(path, width: 40) == "/hom…24/ubuntu-24.04.1-desktop-amd64.iso")
        #expect(TerminalText.fitPath(path, width: 20) == "ubuntu-24.…amd64.iso")
        #expect(TerminalText.fitPath("no-folder-at-all.bin", width: 10) == "no-fo….bin")
        for width in 0...80 {
            #expect(TerminalText.width(TerminalText.fitPath(path, width: width)) <= width)
        }
    }
}
