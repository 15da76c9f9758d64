#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import HaulKit
import Testing

extension DaemonNeighbourTests {
    /// Issue 10, size, through the CLI and a background session: the CLI adds and lists 100,000 tasks, and a journal
    /// over 1 MiB reaches a client in pages. How the daemon pages `tasks.list` and answers a large `tasks.add` is
    /// HaulDaemonTests' (PagingTests).
    @Suite(.serialized) struct DaemonPagingTests {
        /// A session whose tasks never start (no download slot), so they stay as added.
        static func openStillSession(_ client: RawSocketClient, _ name: String) throws {
            let opened = try client.call("session.open", ["session": name, "configuration": ["maxConcurrentDownloads": 0]], id: "open-\(name)")
            #expect(opened.result?["session"] as? String == name, "session.open: \(opened)")
        }

        @Test func theCLIAddsAndListsAHundredThousandTasks() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox)
                let client = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                try Self.openStillSession(client, "default")
                let count = 100_000
                // Long-ish URLs: 100,000 tasks take tens of MiB as JSON, far over any one line.
                let urls = (0..<count).map { "http://127.0.0.1:9/a/rather/long/path/to/make/every/task/weigh/more/file-\($0).bin" }
                let list = sandbox.path("urls.txt")
                try writeBytes(Array(urls.joined(separator: "\n").utf8) + [10], to: list)

                let added = try await sandbox.run(["add", "-i", list, "--dir", sandbox.path("out"), "--no-autostart"], timeout: .seconds(600))
                #expect(added.exitCode == 0, "add -i: \(added.stderr.suffix(2_000))")
                let ids = added.stdoutLines
                #expect(ids.count == count && Set(ids).count == count, "add printed \(ids.count) ids, \(Set(ids).count) distinct")

                let listed = try await sandbox.run(["ls", "--json", "--no-autostart"], timeout: .seconds(600))
                #expect(listed.exitCode == 0, "ls: \(listed.stderr.suffix(2_000))")
                let tasks = try listed.jsonEvents()
                #expect(tasks.count == count, "ls listed \(tasks.count) tasks")
                #expect(tasks.compactMap { $0["id"] as? String } == ids, "ls lists every task once, in the order added")
                #expect(tasks.last?["url"] as? String == urls.last, "\(String(describing: tasks.last))")

                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
            }
        }

        /// `haul add -i` reads its list twice, a part at a time (so that a million URLs do not sit in memory): a bad line
        /// anywhere, even after the first parts, adds nothing; a good list from standard input adds every task, in order.
        @Test func theCLIAddsAListOnlyWhenEveryLineIsGoodReadingItInParts() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox)
                let client = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                try Self.openStillSession(client, "default")
                let count = 1_200
                var lines = (0..<count).map { "http://127.0.0.1:9/part/file-\($0).bin" }
                lines[1_099] = "ftp://127.0.0.1/not-http"
                let refused = try await sandbox.start(["add", "-i", "-", "--dir", sandbox.path("out"), "--no-autostart"],
                                                      input: Data((lines.joined(separator: "\n") + "\n").utf8)).wait(timeout: .seconds(300))
                #expect(refused.exitCode == 2 && refused.stderr.contains("line 1100"), "\(refused.stderr)")
                #expect(refused.stdoutLines.isEmpty, "nothing added, no id printed")
                let none = try await sandbox.run(["ls", "--json", "--no-autostart"], timeout: .seconds(120))
                #expect(try none.jsonEvents().isEmpty, "\(none.stdout.prefix(500))")

                lines[1_099] = "http://127.0.0.1:9/part/file-1099.bin"
                let added = try await sandbox.start(["add", "-i", "-", "--dir", sandbox.path("out"), "--no-autostart"],
                                                    input: Data((lines.joined(separator: "\n") + "\n").utf8)).wait(timeout: .seconds(300))
                #expect(added.exitCode == 0, "\(added.stderr.suffix(2_000))")
                #expect(added.stdoutLines.count == count && Set(added.stdoutLines).count == count)
                let listed = try await sandbox.run(["ls", "--json", "--no-autostart"], timeout: .seconds(120))
                let tasks = try listed.jsonEvents()
                #expect(tasks.compactMap { $0["url"] as? String } == lines, "every task once, in the list's order")
                #expect(tasks.compactMap { $0["id"] as? String } == added.stdoutLines)
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
            }
        }

        @Test func aJournalOverOneMiBComesInPages() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox)
                let client = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                let opened = try client.call("session.open", ["session": "j", "configuration": ["maxConcurrentDownloads": 32]], id: "open")
                #expect(opened.errorCode == nil, "\(opened)")
                // 800 tasks with long URLs that fail at once (nothing listens, no retry): 800 journal entries of over
                // 1.5 KB each, well over 1 MiB in all. Added in two messages, each under 1 MiB.
                let refusing = try RefusingPort()
                defer { refusing.close() }
                let port = refusing.port
                let count = 800
                let padding = String(repeating: "long-path/", count: 150)
                let tasks: [[String: Any]] = (0..<count).map {
                    ["url": "http://127.0.0.1:\(port)/\(padding)entry-\($0).bin", "directory": sandbox.work, "options": ["retries": 0]]
                }
                for half in [tasks.prefix(count / 2), tasks.suffix(count / 2)] {
                    let added = try client.call("tasks.add", ["session": "j", "tasks": Array(half), "reply": "ids"], id: "add", timeout: .seconds(60))
                    #expect((added.result?["ids"] as? [String])?.count == count / 2, "\(added)")
                }
                try await eventually("every task has failed (and so is journaled)", timeout: .seconds(300), step: .milliseconds(500)) {
                    var states: [String] = [], cursor: String?
                    for round in 0..<100 {
                        var params: [String: Any] = ["session": "j", "limit": 10_000]
                        params["cursor"] = cursor
                        let listed = try client.call("tasks.list", params, id: "states\(round)", timeout: .seconds(30))
                        states += (listed.result?["tasks"] as? [[String: Any]])?.compactMap { $0["state"] as? String } ?? []
                        cursor = listed.result?["next"] as? String
                        if cursor == nil { break }
                    }
                    return states.count == count && states.allSatisfy { $0 == "failed" }
                }
                // The subscription gives the first page and where the rest starts; journal.list pages through it.
                let subscriber = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                let subscribed = try subscriber.call("events.subscribe", ["session": "j"], id: "sub", timeout: .seconds(30))
                #expect(subscribed.line.utf8.count <= 1 << 20, "the subscription's answer takes \(subscribed.line.utf8.count) bytes")
                var sequences = ((subscribed.result?["journal"] as? [[String: Any]]) ?? []).compactMap { DaemonHarness.int($0["seq"]) }
                var next = DaemonHarness.int(subscribed.result?["next"])
                #expect(next != nil && sequences.count < count, "a first page and a cursor: \(sequences.count) entries")
                for round in 0..<100 {
                    guard let after = next else { break }
                    let page = try subscriber.call("journal.list", ["session": "j", "after": after, "limit": 1_000], id: "page\(round)")
                    #expect(page.line.utf8.count <= 1 << 20)
                    sequences += ((page.result?["events"] as? [[String: Any]]) ?? []).compactMap { DaemonHarness.int($0["seq"]) }
                    next = DaemonHarness.int(page.result?["next"])
                }
                #expect(sequences.count == count && Set(sequences).count == count && sequences == sequences.sorted(), "\(sequences.count) entries")
                // A background session of HaulKit gets every missed event, through the pages.
                var configuration = SessionConfiguration.background(DaemonEndpoint(socketPath: DaemonHarness.socket(sandbox), autostart: false))
                configuration.home = HaulHome(path: sandbox.home)
                configuration.maxConcurrentDownloads = 32
                let session = try await DownloadSession(identifier: "j", configuration: configuration)
                let missed = await session.pendingEvents()
                #expect(missed.count == count, "pendingEvents: \(missed.count)")
                await session.close()
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
            }
        }

        @Test func theCLIListsAnAdditionTooLargeForOneLine() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox)
                let client = try RawSocketClient(path: DaemonHarness.socket(sandbox))
                try Self.openStillSession(client, "big")
                // 6,000 tasks in one message (under 1 MiB); their tasks as JSON would be over 1 MiB.
                let tasks: [[String: Any]] = (0..<6_000).map { ["url": "http://127.0.0.1:9/\($0).bin", "directory": sandbox.work] }
                let added = try client.call("tasks.add", ["session": "big", "tasks": tasks], id: "add", timeout: .seconds(60))
                let ids = try #require(added.result?["ids"] as? [String], "\(added)")
                // The CLI lists them all, a page at a time.
                let listed = try await sandbox.run(["ls", "--json", "--session", "big", "--no-autostart"], timeout: .seconds(120))
                #expect(try listed.jsonEvents().compactMap { $0["id"] as? String } == ids)
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
            }
        }
    }
}

#endif
