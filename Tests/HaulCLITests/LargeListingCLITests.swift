#if os(Linux)
import Foundation
import HaulKit
import HaulTestSupport
import Testing

/// Issue 25: `haul ls` as a table of a session larger than one block (TaskListing.blockSize), a real daemon's:
/// every task once and in order, every line within the terminal's width, and every id shown as its shortest unique
/// prefix over the whole session (so that `haul pause` takes it). The blocks themselves, for any tasks and block
/// sizes, are TaskListingPropertyTests'.
@Suite(.serialized) struct LargeListingCLITests {
    static let script = "/usr/bin/script"

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: script), "needs script(1) (util-linux) for a terminal"))
    func aSessionOfMoreThanOneBlockIsListedWholeAndFittedWithUniquePrefixes() async throws {
        try await Sandbox.with { box in
            _ = try await startDaemon(box)
            // No download slot: the tasks stay waiting, as added.
            let held = try await box.run(["session", "set", "--max-concurrent", "0", "--no-autostart"])
            #expect(held.exitCode == 0, "\(held.stderr)")
            let count = TaskListing.blockSize + 1_500
            let list = box.path("urls.txt")
            try writeBytes(Array((0..<count).map { "http://127.0.0.1:9/queued/\($0).bin\n" }.joined().utf8), to: list)
            let added = try await box.run(["add", "-i", list, "--dir", box.path("out"), "--no-autostart"], timeout: .seconds(600))
            #expect(added.exitCode == 0, "\(added.stderr.suffix(1_000))")
            var ids = added.stdoutLines
            #expect(ids.count == count)
            // Ids of the user's choosing that share long starts: with a daemon's id from the first block (a UUID
            // that differs from it after 14 characters) and with each other.
            let first = try #require(ids.first)
            let twin = String(first.prefix(14)) + (first.dropFirst(14).first == "f" ? "eeee-eeee-eeeeeeeeeeee" : "ffff-ffff-ffffffffffff")
            for id in [twin, "my-download-000001", "my-download-000002"] {
                let one = try await box.run(["add", "http://127.0.0.1:9/chosen/\(id).bin", "--id", id, "--dir", box.path("out"), "--no-autostart"])
                #expect(one.stdoutLines == [id], "\(one.stderr)")
                ids.append(id)
            }

            // Not a terminal: every value whole, each task once and in order, the header once.
            let piped = try await box.run(["ls", "--no-autostart"], timeout: .seconds(600))
            #expect(piped.exitCode == 0, "\(piped.stderr)")
            #expect(piped.stdoutLines.first?.hasPrefix("ID ") == true && piped.stdoutLines.filter { $0.hasPrefix("ID ") }.count == 1)
            let wholeLines = piped.stdoutLines.dropFirst()
            #expect(wholeLines.count == ids.count, "\(wholeLines.count) lines for \(ids.count) tasks")
            #expect(zip(wholeLines, ids).allSatisfy { $0.hasPrefix($1 + " ") }, "every task once, in the order added")

            // A terminal of 72 columns (a pty, its width from COLUMNS): the session is listed twice, the ids first.
            let haul = try HaulBinary.path().replacingOccurrences(of: "'", with: "'\\''")
            let terminal = try await box.start(["-qec", "'\(haul)' ls --no-autostart", "/dev/null"], binary: Self.script, environment: ["COLUMNS": "72"])
                .wait(timeout: .seconds(600))
            #expect(terminal.exitCode == 0, "\(terminal.stderr)")
            // A terminal ends lines with CR LF (one Character in Swift).
            let lines = terminal.stdout.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("ID ") == true, "\(lines.prefix(3))")
            let tooWide = lines.filter { TerminalText.width($0) > 72 }
            #expect(tooWide.isEmpty, "\(tooWide.count) lines wider than 72 columns: \(tooWide.prefix(3))")
            let taskLines = lines.filter { !$0.hasPrefix(" ") && !$0.hasPrefix("ID ") }
            let shown = taskLines.map { String($0.prefix { $0 != " " }) }
            #expect(shown == UniquePrefixModel.uniquePrefixes(ids), "each task once, in order, its id's shortest unique prefix over the session")
            try #require(shown.count == ids.count)
            #expect(shown[0].count >= 15 && shown[count].count >= 15, "the twins, alike for 14 characters: \(shown[0]) \(shown[count])")
            #expect(shown.suffix(2) == ["my-download-000001", "my-download-000002"])

            // What is shown is what the other commands take.
            for prefix in [shown[0], shown[count], shown[count / 2]] {
                let paused = try await box.run(["pause", prefix, "--no-autostart"])
                #expect(paused.exitCode == 0, "haul pause \(prefix): \(paused.stderr)")
            }
        }
    }
}
#endif
