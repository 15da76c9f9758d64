import HaulTestSupport
import PropertyBased
import Testing
@testable import HaulCore

/// `haul ls` of a session of any size (issue 25): shown in blocks with memory bounded, for any tasks, any block size
/// and any pages — every fitted line fits the width, every task is shown once and in order, ids are their shortest
/// unique prefixes over the whole session, columns only widen from block to block, and a session of one block is
/// exactly the table aligned over every row.
@Suite struct TaskListingPropertyTests {
    /// A task of a generated session: how its id is made (see ``id(_:base:)``) and what the table shows of it.
    struct Spec: Sendable, CustomStringConvertible {
        var kind: Int
        var shared: Int
        var hex: String
        var tail: String
        var state: String
        var bytes: Int64
        var total: Int64?
        var speed: Int?
        var path: String
        var note: String?
        var description: String { "\(kind)/\(shared)/\(hex)/\(tail)" }
    }

    static let hex = Gen.element(of: Array("0123456789abcdef")).map { $0 ?? "0" }.string(of: 32...32)
    static let text = Gen.element(of: Array("abc/-_.019 ") + ["日", "é", "👨‍👩‍👧", "\u{1B}", "\n", "…"] as [Character]).map { $0 ?? "a" }
    static let spec = zip(
        zip(Gen.int(in: 0...5), Gen.int(in: 0...36), hex, Gen.element(of: Array("xyz-_Q9")).map { $0 ?? "x" }.string(of: 0...6)),
        zip(Gen.element(of: ["waiting", "running", "paused", "finished", "failed"]).map { $0 ?? "waiting" },
            Gen.int(in: 0...(1 << 40)), Gen.int(in: 0...(1 << 40)).optional, Gen.int(in: 0...(1 << 30)).optional),
        zip(text.string(of: 0...60), text.string(of: 1...80).optional)
    ).map { idPart, numbers, texts in
        Spec(kind: idPart.0, shared: idPart.1, hex: idPart.2, tail: idPart.3, state: numbers.0, bytes: Int64(numbers.1),
             total: numbers.2.map(Int64.init), speed: numbers.3, path: texts.0, note: texts.1)
    }

    static func uuid(_ hex: String) -> String {
        let digits = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(digits[$0]) }.joined(separator: "-")
    }

    /// Ids of every kind the daemon holds or a user chose: random UUIDs, UUIDs sharing up to 35 characters with
    /// `base`, the start of `base` (a prefix of another id), the start of `base` and more (not a UUID), an upper-case
    /// UUID and a short name.
    static func id(_ spec: Spec, base: String) -> String {
        let start = String(base.prefix(spec.shared))
        switch spec.kind {
        case 0: return uuid(spec.hex)
        case 1: return start + String(uuid(spec.hex).dropFirst(spec.shared))
        case 2: return start
        case 3: return start + spec.tail
        case 4: return uuid(spec.hex).uppercased()
        default: return "my-" + spec.tail
        }
    }

    /// The session's tasks: distinct ids, in the generated order.
    static func rows(_ specs: [Spec], base: String) -> [TaskTable.Row] {
        var seen: Set<String> = []
        return specs.compactMap { spec in
            let id = id(spec, base: base)
            guard !id.isEmpty, seen.insert(id).inserted else { return nil }
            return TaskTable.Row(
                id: id, state: spec.state, bytes: spec.bytes, total: spec.total, bytesPerSecond: spec.speed.map(Double.init),
                path: spec.path, note: spec.note)
        }
    }

    /// What `haul ls` prints: the rows given a page at a time, listed twice when the listing asks.
    static func listed(_ rows: [TaskTable.Row], width: Int?, block: Int, page: Int, again: [TaskTable.Row]? = nil) -> [String] {
        var listing = TaskListing(width: width, rowsPerBlock: block)
        var lines: [String] = []
        for listingRows in [rows, again ?? rows] {
            for start in stride(from: 0, to: listingRows.count, by: page) {
                lines += listing.take(Array(listingRows[start..<min(start + page, listingRows.count)]))
            }
            lines += listing.end()
            guard listing.needsSecondListing else { break }
        }
        return lines
    }

    @Test func theIndexGivesEveryIdItsUniquePrefixOverTheWholeSession() async {
        await propertyCheck(count: 300, input: Self.hex, Self.spec.array(of: 1...80), Self.spec) { base, specs, added in
            let ids = Self.rows(specs, base: Self.uuid(base)).map(\.id)
            let index = TaskIdIndex(ids.shuffled())
            #expect(index.count == ids.count)
            #expect(ids.map { index.prefix(of: $0) } == UniquePrefixModel.uniquePrefixes(ids), "\(ids)")
            #expect(TaskTable.uniquePrefixes(ids) == UniquePrefixModel.uniquePrefixes(ids), "\(ids)")
            // A task added after the ids were read: its prefix among them and itself.
            let new = Self.id(added, base: Self.uuid(base))
            if !new.isEmpty, !ids.contains(new) {
                #expect(index.prefix(of: new) == UniquePrefixModel.uniquePrefixes(ids + [new]).last, "\(new) among \(ids)")
            }
        }
    }

    @Test func aFittedListingInBlocksFitsShowsEveryTaskOnceAndNamesItUniquely() async {
        await propertyCheck(input: Self.hex, Self.spec.array(of: 0...80), Gen.int(in: 3...30), Gen.int(in: 1...30), Gen.int(in: 1...200)) {
            base, specs, block, page, width in
            let rows = Self.rows(specs, base: Self.uuid(base))
            let lines = Self.listed(rows, width: width, block: block, page: page)
            for line in lines {
                #expect(TerminalText.width(line) <= width, "at \(width): \(line)")
                #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(line)")
            }
            if rows.count <= block {
                #expect(lines == TaskTable.fitted(rows, width: width), "one block: the table aligned over every row")
                return
            }
            // Wide enough that no id is cut and notes are indented: a task's line starts with its prefix.
            guard width >= 60 else { return }
            #expect(lines.first?.hasPrefix("ID ") == true, "\(lines.prefix(2))")
            let prefixes = UniquePrefixModel.uniquePrefixes(rows.map(\.id))
            let shown = lines.filter { !$0.hasPrefix(" ") && !$0.hasPrefix("ID ") }
            #expect(shown.count == rows.count, "\(shown.count) task lines for \(rows.count) tasks")
            for (line, prefix) in zip(shown, prefixes) { #expect(line.hasPrefix(prefix + " "), "\(prefix): \(line)") }
            Self.expectColumnsOnlyWiden(shown)
        }
    }

    @Test func aWholeListingInBlocksShowsEveryTaskOnceInOneListing() async {
        await propertyCheck(input: Self.hex, Self.spec.array(of: 0...80), Gen.int(in: 3...30), Gen.int(in: 1...30)) { base, specs, block, page in
            let rows = Self.rows(specs, base: Self.uuid(base))
            var listing = TaskListing(width: nil, rowsPerBlock: block)
            var lines: [String] = []
            for start in stride(from: 0, to: rows.count, by: page) {
                lines += listing.take(Array(rows[start..<min(start + page, rows.count)]))
                // Never more than a block and a page held: what is past a block has been shown.
                let taken = min(start + page, rows.count)
                #expect(lines.count >= (taken > block ? taken / block * block : 0), "\(taken) taken, \(lines.count) lines")
            }
            lines += listing.end()
            #expect(!listing.needsSecondListing, "whole ids need no second listing")
            if rows.count <= block {
                #expect(lines == TaskTable.full(rows))
                return
            }
            #expect(lines.first?.hasPrefix("ID ") == true)
            let shown = lines.filter { !$0.hasPrefix("ID ") }
            #expect(shown.count == rows.count)
            for (line, row) in zip(shown, rows) { #expect(line.hasPrefix(TaskTable.clean(row.id) + " "), "\(row.id): \(line)") }
            Self.expectColumnsOnlyWiden(shown)
        }
    }

    /// The STATE column starts where it did in the lines before, or further right.
    static func expectColumnsOnlyWiden(_ lines: [String]) {
        var start = 0
        for line in lines {
            let characters = Array(line)
            guard let end = characters.firstIndex(of: " "), let state = characters[end...].firstIndex(where: { $0 != " " }) else { continue }
            let column = TerminalText.width(String(characters[..<state]))
            #expect(column >= start, "the STATE column moved left: \(line)")
            start = column
        }
    }

    /// Between the two listings of a large session tasks come and go: every task of the second is shown once, an
    /// added one named against the ids of the first and itself.
    @Test func tasksAddedOrRemovedBetweenTheListingsAreShownAsTheSecondHasThem() {
        let first = (0..<25).map { TaskTable.Row(id: String(format: "%08x-0000-4000-8000-%012x", $0 * 7, $0), state: "waiting", bytes: 0, path: "/f\($0)") }
        let added = TaskTable.Row(id: "00000007-0000-4000-8000-ffffffffffff", state: "waiting", bytes: 0, path: "/new")
        let second = Array(first.dropFirst(3)) + [added]
        let lines = Self.listed(first, width: 100, block: 10, page: 4, again: second)
        let shown = lines.filter { !$0.hasPrefix("ID ") }
        #expect(shown.count == second.count, "\(lines)")
        #expect(shown.last?.hasPrefix("00000007-0000-4000-8000-f ") == true, "the added task against the first's ids: \(lines)")
        #expect(shown.first?.hasPrefix("00000015 ") == true, "\(lines)")
        #expect(lines.filter { $0.hasPrefix("ID ") }.count == 1, "the header once: \(lines)")
    }
}
