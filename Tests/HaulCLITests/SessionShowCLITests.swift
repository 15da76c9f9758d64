import Foundation
import Testing

/// `haul session show`: a session's settings as `haul session set` left them, and where its store is.
@Suite struct SessionShowCLITests {
    @Test func showPrintsWhatSetChangedAndWhereTheStoreIs() async throws {
        try await Sandbox.with { box in
            _ = try await startDaemon(box)
            let set = try await box.run([
                "session", "set", "--max-concurrent", "5", "--limit-rate", "2M", "--on-complete", "echo \"$HAUL_TASK_PATH\"",
                "--no-autostart",
            ])
            #expect(set.exitCode == 0 && set.stderr.isEmpty, "the default session is no news: \(set.stderr)")
            let shown = try await box.run(["session", "show", "--no-autostart"])
            #expect(shown.exitCode == 0, "\(shown.stderr)")
            let lines = shown.stdoutLines
            func value(_ name: String) -> String? {
                lines.first { $0.hasPrefix(name + ":") }.map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
            }
            #expect(value("session") == "default", "\(shown.stdout)")
            #expect(value("downloads at once") == "5", "\(shown.stdout)")
            #expect(value("speed limit") == "2.0 MiB/s for all its downloads", "\(shown.stdout)")
            #expect(value("completion command") == "echo \"$HAUL_TASK_PATH\"", "\(shown.stdout)")
            let store = box.home + "/sessions/default/tasks.sqlite"
            #expect(value("store") == store, "\(shown.stdout)")
            #expect(fileExists(store), "the store it names exists")
            // The values line up after their names.
            let valueColumns = Set(lines.map { line -> Int in
                let afterColon = line.firstIndex(of: ":").map { line.index(after: $0) } ?? line.endIndex
                let start = line[afterColon...].firstIndex { $0 != " " } ?? line.endIndex
                return line.distance(from: line.startIndex, to: start)
            })
            #expect(valueColumns.count == 1, "\(shown.stdout)")

            let json = try await box.run(["session", "show", "--json", "--no-autostart"])
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            #expect((object?["maxConcurrentDownloads"] as? NSNumber)?.intValue == 5 && object?["store"] as? String == store, "\(json.stdout)")

            // Set with nothing to change says where to look.
            let nothing = try await box.run(["session", "set", "--no-autostart"])
            #expect(nothing.exitCode == 2 && nothing.stderr.contains("haul session show"), "\(nothing.stderr)")
            // A session that does not exist is an error that says how one comes to be, and creates nothing.
            let missing = try await box.run(["session", "show", "--session", "nope", "--no-autostart"])
            #expect(missing.exitCode == 2 && missing.stderr.contains("no session \"nope\""), "\(missing.stderr)")
            #expect(!FileManager.default.fileExists(atPath: box.home + "/sessions/nope"))

            // Setting a session that does not exist makes it (to add to it later), and says so once: a mistyped
            // --session does not pass unnoticed.
            let made = try await box.run(["session", "set", "--session", "nightly", "--max-concurrent", "2", "--no-autostart"])
            #expect(made.exitCode == 0 && made.stderr.contains("created the session \"nightly\""), "\(made.stderr)")
            let again = try await box.run(["session", "set", "--session", "nightly", "--max-concurrent", "3", "--no-autostart"])
            #expect(again.exitCode == 0 && again.stderr.isEmpty, "\(again.stderr)")
            // Adding to a session that does not exist makes it too, and says so the first time.
            let added = try await box.run(["add", "http://127.0.0.1:9/x", "-o", box.path("x"), "--session", "weekly", "--no-autostart"])
            #expect(added.exitCode == 0 && added.stderr.contains("created the session \"weekly\""), "\(added.stderr)")
            let addedAgain = try await box.run(["add", "http://127.0.0.1:9/y", "-o", box.path("y"), "--session", "weekly", "--no-autostart"])
            #expect(addedAgain.exitCode == 0 && addedAgain.stderr.isEmpty, "\(addedAgain.stderr)")
        }
    }
}
