import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `haul get` with several URLs (one resumable DownloadSession): the -j cap, the --json event stream, kill -9 and
/// SIGINT in the middle of a batch, a failing URL fixed between runs, and URL lists read from stdin.
@Suite struct BatchCLITests {
    // MARK: 1. -j cap and the --json event stream

    @Test func jsonBatchRunsAtMostJobsAtOnceAndReportsEachTaskOnce() async throws {
        try await withTestServer { server in
            let size = 300_000
            let files = BatchFiles(server, prefix: "j", count: 6, size: size, seed: 1_000, rate: 1_000_000)
            try await Sandbox.with { box in
                let out = box.path("out")
                let result = try await box.run(
                    ["get"] + files.urls + ["-j", "2", "--dir", out, "--json"], timeout: .seconds(30))
                #expect(result.exitCode == 0 && !result.signalled, "exit \(result.exitCode): \(result.stderr)")
                files.expectExact(in: out)

                let events = try result.jsonEvents()
                let kinds = events.map { $0["type"] as? String ?? "?" }
                var urlOf: [String: String] = [:]
                for event in events where event["type"] as? String == "added" {
                    let task = event["task"] as? [String: Any]
                    if let id = task?["id"] as? String { urlOf[id] = task?["url"] as? String }
                }
                #expect(urlOf.count == 6, "expected 6 added tasks, got \(urlOf)")
                #expect(Set(urlOf.values) == Set(files.urls))

                // Replay the state events: how many tasks were running at once.
                var running: Set<String> = [], peak = 0, everRan: Set<String> = []
                for event in events where event["type"] as? String == "stateChanged" {
                    guard let id = event["id"] as? String, let from = event["from"] as? String,
                          let to = event["to"] as? String else {
                        Issue.record("malformed state event \(event)")
                        continue
                    }
                    if from == "running" { running.remove(id) }
                    if to == "running" { running.insert(id); everRan.insert(id) }
                    peak = max(peak, running.count)
                }
                #expect(peak <= 2, "more than -j 2 downloads ran at once (peak \(peak))")
                #expect(peak == 2, "6 throttled downloads with -j 2 should run 2 at a time (peak \(peak))")
                #expect(everRan == Set(urlOf.keys), "every task must have run: \(everRan.count) of \(urlOf.count)")

                var finishedCount: [String: Int] = [:]
                for event in events where event["type"] as? String == "finished" {
                    let task = event["task"] as? [String: Any]
                    let id = task?["id"] as? String ?? "?"
                    finishedCount[id, default: 0] += 1
                    let name = (task?["url"] as? String).map { String($0.split(separator: "/").last ?? "") } ?? "?"
                    #expect(task?["path"] as? String == out + "/" + name, "finished event: \(event)")
                    #expect((task?["bytes"] as? NSNumber)?.intValue == size, "finished event: \(event)")
                }
                #expect(Set(finishedCount.keys) == Set(urlOf.keys) && finishedCount.values.allSatisfy { $0 == 1 },
                        "exactly one finished event per task expected, got \(finishedCount)")
                #expect(!kinds.contains("failed"), "unexpected failed event: \(result.stdout)")
                #expect(kinds.filter { $0 == "allFinished" }.count == 1, "allFinished count; events: \(kinds)")
                #expect(kinds.last == "allFinished", "allFinished must be the last event; last 5: \(kinds.suffix(5))")
            }
        }
    }

    /// `-j 4` against one server that allows 2 at once: `--json` says that the per-host limit holds two back, and
    /// later that it holds none (issue 25: the total line, `haul ls` and `--json` all say why fewer run).
    @Test func jsonBatchSaysWhenThePerHostLimitHoldsDownloadsBack() async throws {
        try await withTestServer { server in
            // Each file ~3 s: the first two still run when the batch first asks its session (after a second).
            let files = BatchFiles(server, prefix: "held", count: 4, size: 300_000, seed: 1_100, rate: 100_000)
            try await Sandbox.with { box in
                let out = box.path("out")
                let result = try await box.run(
                    ["get"] + files.urls + ["-j", "4", "--max-connections-per-host", "2", "--dir", out, "--json"], timeout: .seconds(60))
                #expect(result.exitCode == 0 && !result.signalled, "exit \(result.exitCode): \(result.stderr)")
                files.expectExact(in: out)
                let heldBack = try result.jsonEvents().filter { $0["type"] as? String == "heldBack" }
                let limits = heldBack.map { ($0["limit"] as? NSNumber)?.intValue }
                #expect(heldBack.contains { ($0["limit"] as? NSNumber)?.intValue == 2 && ($0["waiting"] as? NSNumber)?.intValue == 2 },
                        "a heldBack line with limit 2 and 2 waiting: \(heldBack)")
                #expect(limits.last == .some(nil), "the last heldBack line says nothing is held back any more: \(heldBack)")
                // Written when it changes, not every second.
                #expect(zip(limits, limits.dropFirst()).allSatisfy { $0 != $1 }, "\(heldBack)")
            }
        }
    }

    // MARK: 2. kill -9 at several moments, then the same command

    @Test func sigkillAtSeveralMomentsNeverLosesOrDuplicatesTasks() async throws {
        try await withTestServer { server in
            // ~2.4 s per file at 200 KiB/s: the first checkpoint (every 256 KiB once ≥ 1 s has passed) lands mid-file.
            let size = 480 * 1024
            let files = BatchFiles(server, prefix: "k", count: 8, size: size, seed: 2_000, rate: 200 * 1024)
            try await Sandbox.with { box in
                let out = box.path("out"), list = box.path("urls.txt")
                try writeBytes(Array(files.urls.joined(separator: "\n").utf8) + [10], to: list)
                let args = ["get", "-i", list, "-j", "3", "--dir", out, "--quiet"]

                var kills = 0, log: [String] = []
                for round in 0..<4 {
                    let baseline = finals(out).count
                    let run = try box.start(args)
                    let moment: String
                    let condition: @Sendable () -> Bool
                    switch round {
                    case 0:
                        moment = "a .haul-part exists"
                        condition = { !partials(out).isEmpty }
                    case 1:
                        moment = "some bytes are durable (a resume record with offset > 0)"
                        condition = { box.records().contains { (($0["offset"] as? NSNumber)?.intValue ?? 0) > 0 } }
                    case 2:
                        let delay = Int.random(in: 100...1_500)
                        moment = "\(delay) ms after start"
                        let until = ContinuousClock.now + .milliseconds(delay)
                        condition = { ContinuousClock.now >= until }
                    default:
                        moment = "one more file is complete (had \(baseline))"
                        condition = { finals(out).count > baseline }
                    }
                    do {
                        try await signalWhen(run, SIGKILL, moment, timeout: .seconds(8), condition)
                    } catch {
                        // Timed out: kill it anyway. Ended on its own: judged below.
                        run.signal(SIGKILL)
                    }
                    let ended = try await run.wait(timeout: .seconds(10))
                    if ended.signalled && ended.exitCode == SIGKILL {
                        kills += 1
                        let records = box.records().map { record in
                            let name = (record["destinationPath"] as? String).map { String($0.split(separator: "/").last ?? "") } ?? "?"
                            return "\(name)@\((record["offset"] as? NSNumber)?.intValue ?? -1)"
                        }
                        log.append("round \(round): killed when \(moment); files \(dirContents(out)); records \(records.sorted())")
                    } else {
                        log.append("round \(round): ended by itself with \(ended.exitCode)")
                        #expect(ended.exitCode == 0 && !ended.signalled, "round \(round) failed: \(ended.stderr)")
                        break
                    }
                }
                #expect(kills >= 3, "the batch should have been killed mid-way at least 3 times: \(log)")

                files.serveAll(rate: nil)
                let final = try await box.run(args, timeout: .seconds(30))
                #expect(final.exitCode == 0 && !final.signalled, "final run: exit \(final.exitCode): \(final.stderr); \(log)")
                files.expectExact(in: out, context: log.joined(separator: "; "))
                #expect(finals(out) == files.names.sorted() && partials(out).isEmpty,
                        "the folder must hold exactly the 8 files: \(dirContents(out)); \(log)")

                let rows = try StoreRows.read(box)
                #expect(rows.count == 8, "the store must hold exactly 8 tasks: \(rows)")
                #expect(Set(rows.map(\.url)) == Set(files.urls), "one task per URL: \(rows.map(\.url))")
                #expect(Set(rows.map(\.id)).count == rows.count, "duplicate task ids: \(rows.map(\.id))")
                #expect(rows.allSatisfy { $0.filePath == out + "/" + String($0.url.split(separator: "/").last ?? "") },
                        "each task's file must be saved under its own name: \(rows.map { $0.filePath ?? "nil" })")
                #expect(rows.allSatisfy { $0.state == "finished" && $0.bytes == size },
                        "every task finished with all bytes: \(rows.map { "\($0.url) \($0.state) \($0.bytes)" })")

                // The server's view: no file restarted from a lower offset than it had already resumed from,
                // total traffic bounded, and resumption actually happened.
                var summary: [String] = []
                var totalSent = 0, resumedMidFile = false
                for name in files.names {
                    let requests = server.requests("/" + name)
                    let starts = requests.map(rangeStart)
                    totalSent += requests.map(\.bytesSent).reduce(0, +)
                    if starts.contains(where: { $0 > 0 }) { resumedMidFile = true }
                    summary.append("\(name): starts \(starts) sent \(requests.map(\.bytesSent))")
                    #expect(zip(starts, starts.dropFirst()).allSatisfy { $0 <= $1 },
                            "\(name) was fetched again from a lower offset than an earlier resume: \(starts); \(log)")
                    #expect(!requests.isEmpty, "\(name) was never requested")
                }
                #expect(totalSent <= 8 * size * 2, "sent \(totalSent) bytes for 8 × \(size): \(summary)")
                #expect(resumedMidFile, "no request resumed with Range start > 0: \(summary); \(log)")
            }
        }
    }

    // MARK: 3. A failing URL, fixed between runs

    @Test func failedURLFailsTheBatchAndOnlyItIsRetriedNextTime() async throws {
        try await withTestServer { server in
            let files = BatchFiles(server, prefix: "g", count: 3, size: 200_000, seed: 3_000, rate: nil)
            let missing = TestData.bytes(150_000, seed: 3_999)
            server.route("/missing.bin") { _ in .text(404, "not found") }
            try await Sandbox.with { box in
                let out = box.path("out")
                let urls = [files.urls[0], server.url("/missing.bin"), files.urls[1], files.urls[2]]
                let args = ["get"] + urls + ["-j", "2", "--dir", out]

                let first = try await box.run(args, timeout: .seconds(30))
                #expect(first.exitCode == 4 && !first.signalled, "a 404 in the batch must exit 4: \(first.exitCode) \(first.stderr)")
                #expect(first.stderrLines.contains("3 finished, 1 failed"), "summary line missing: \(first.stderr)")
                #expect(first.stderrLines.contains { $0.contains("missing.bin") && $0.contains("error") },
                        "the failed URL should be named: \(first.stderr)")
                files.expectExact(in: out)
                #expect(!fileExists(out + "/missing.bin"))
                let rows = try StoreRows.read(box)
                #expect(rows.count == 4)
                #expect(rows.first { $0.url.hasSuffix("/missing.bin") }?.state == "failed", "store: \(rows)")

                server.serve("/missing.bin", Resource(body: missing, etag: "\"missing\""))
                let goodBefore = files.names.map { server.requests("/" + $0).count }
                let missingBefore = server.requests("/missing.bin").count

                let second = try await box.run(args, timeout: .seconds(30))
                #expect(second.exitCode == 0 && !second.signalled, "rerun: exit \(second.exitCode): \(second.stderr)")
                #expect(second.stderrLines.contains("4 finished, 0 failed"), "rerun summary: \(second.stderr)")
                #expect(contentMismatch(out + "/missing.bin", expected: missing) == nil)
                files.expectExact(in: out)
                #expect(files.names.map { server.requests("/" + $0).count } == goodBefore,
                        "finished files must not be requested again")
                #expect(server.requests("/missing.bin").count > missingBefore, "the failed URL must be requested again")
                #expect(try StoreRows.read(box).allSatisfy { $0.state == "finished" })
            }
        }
    }

    // MARK: 4. SIGINT mid-batch

    @Test func sigintMidBatchExits130AndSameCommandCompletes() async throws {
        try await withTestServer { server in
            let size = 400 * 1024
            let files = BatchFiles(server, prefix: "s", count: 6, size: size, seed: 4_000, rate: 64 * 1024)
            try await Sandbox.with { box in
                let out = box.path("out")
                let args = ["get"] + files.urls + ["-j", "2", "--dir", out]
                let first = try box.start(args)
                // Mid-batch: at least one file complete and another one well under way but far from done. The
                // first two files run in step, so when one completes the other is about to: signalling then left
                // only downloads that had just started, with nothing to resume, and no Range on the rerun.
                try await signalWhen(first, SIGINT, "one file is complete and another has 64-272 KiB", timeout: .seconds(20)) {
                    !finals(out).isEmpty && partials(out).contains {
                        let held = fileSize(out + "/" + $0) ?? 0
                        return held >= 64 * 1024 && held <= size - 128 * 1024
                    }
                }
                let paused = try await first.wait(timeout: .seconds(10))
                #expect(paused.exitCode == 130 && !paused.signalled, "SIGINT must exit 130: \(paused.exitCode) \(paused.stderr)")
                #expect(paused.stderr.contains("run the same command again to resume"), "stderr: \(paused.stderr)")
                let doneBefore = finals(out)
                #expect(doneBefore.count < 6, "the batch was not interrupted mid-way")
                let rows = try StoreRows.read(box)
                #expect(rows.count == 6 && !rows.contains { $0.state == "failed" || $0.state == "cancelled" },
                        "an interrupted batch keeps every task resumable: \(rows.map { "\($0.url) \($0.state)" })")

                files.serveAll(rate: nil)
                let counts = files.names.map { server.requests("/" + $0).count }
                let second = try await box.run(args, timeout: .seconds(30))
                #expect(second.exitCode == 0 && !second.signalled, "rerun: exit \(second.exitCode): \(second.stderr)")
                files.expectExact(in: out)
                #expect(partials(out).isEmpty, "left over: \(dirContents(out))")
                var resumed = false
                for (index, name) in files.names.enumerated() {
                    let again = server.requests("/" + name).dropFirst(counts[index])
                    if doneBefore.contains(name) {
                        #expect(again.isEmpty, "\(name) was complete before SIGINT but was requested again")
                    }
                    if again.contains(where: { rangeStart($0) > 0 }) { resumed = true }
                }
                #expect(resumed, "the rerun should resume the paused download(s) with a Range")
            }
        }
    }

    @Test func anInterruptedBatchCountsWhatItPausedApartFromWhatHadFailed() async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        try await withTestServer { server in
            let files = BatchFiles(server, prefix: "p", count: 3, size: 400 * 1024, seed: 4_100, rate: 32 * 1024)
            try await Sandbox.with { box in
                let out = box.path("out")
                let refused = (0..<2).map { "http://127.0.0.1:\(refusing.port)/gone\($0).bin" }
                let first = try box.start(["get"] + files.urls + refused + ["-j", "8", "--dir", out])
                try await signalWhen(first, SIGINT, "both refused URLs failed while the others crawl", timeout: .seconds(30)) {
                    ((try? StoreRows.read(box)) ?? []).filter { $0.state == "failed" }.count == 2 && finals(out).isEmpty
                }
                let stopped = try await first.wait(timeout: .seconds(10))
                #expect(stopped.exitCode == 130, "\(stopped.stderr)")
                #expect(stopped.stderr.contains("haul: paused 3 downloads, 2 failed; run the same command again to resume and retry them"),
                        "the failed are not counted as paused: \(stopped.stderr)")
            }
        }
    }

    // MARK: 5. -i - (URLs on stdin)

    /// Runs a batch of `files` into `out/` (two at a time) and checks every file: the folder, and the arguments to run
    /// the same command again.
    private func savedOnce(_ files: BatchFiles, _ box: Sandbox) async throws -> (out: String, args: [String]) {
        let out = box.path("out")
        let args = ["get"] + files.urls + ["-j", "2", "--dir", out]
        let first = try await box.run(args)
        #expect(first.exitCode == 0, "\(first.stderr)")
        files.expectExact(in: out)
        return (out, args)
    }

    /// The same command again after a finished file was deleted or moved: it is fetched again (as wget and curl
    /// would), not counted as finished with nothing at its path; the files still there are left as they are.
    @Test func aFinishedFileThatIsGoneIsFetchedAgainByTheSameCommand() async throws {
        try await withTestServer { server in
            let files = BatchFiles(server, prefix: "g", count: 3, size: 50_000, seed: 1_300, rate: nil)
            try await Sandbox.with { box in
                let (out, args) = try await savedOnce(files, box)
                try FileManager.default.removeItem(atPath: out + "/" + files.names[1])
                let before = files.names.map { server.requests("/" + $0).count }
                let again = try await box.run(args)
                #expect(again.exitCode == 0, "\(again.stderr)")
                #expect(again.stderr.contains("3 finished, 0 failed"), "\(again.stderr)")
                files.expectExact(in: out)
                let after = files.names.map { server.requests("/" + $0).count }
                #expect(after[1] > before[1], "the deleted file was fetched again")
                #expect(after[0] == before[0] && after[2] == before[2], "the files still there were not fetched: \(before) → \(after)")
            }
        }
    }

    /// The same command again after finished files were changed: one truncated, one rewritten with other bytes of
    /// another length, one replaced by a symbolic link. None is counted as finished: each is left exactly as it is,
    /// said in a warning, and its URL fetched again under the next free name, as wget names a file it did not just
    /// create `.1`. A third run finds everything saved.
    @Test func aFinishedFileThatWasChangedIsLeftAsItIsAndFetchedAgainBesideIt() async throws {
        try await withTestServer { server in
            let files = BatchFiles(server, prefix: "c", count: 4, size: 40_000, seed: 1_400, rate: nil)
            try await Sandbox.with { box in
                let (out, args) = try await savedOnce(files, box)
                let truncated = out + "/c1.bin", rewritten = out + "/c2.bin", linked = out + "/c3.bin"
                #expect(truncate(truncated, 1_000) == 0)
                try writeBytes(Array("the user's own notes".utf8), to: rewritten)
                try FileManager.default.removeItem(atPath: linked)
                try FileManager.default.createSymbolicLink(atPath: linked, withDestinationPath: out + "/c4.bin")
                let before = files.names.map { server.requests("/" + $0).count }

                let again = try await box.run(args)
                #expect(again.exitCode == 0, "\(again.stderr)")
                #expect(again.stderr.contains("4 finished, 0 failed"), "\(again.stderr)")
                for path in [truncated, rewritten, linked] {
                    #expect(again.stderrLines.contains { $0.hasPrefix("haul: warning: \(path) is not the file saved") }, "\(path): \(again.stderr)")
                }
                // Left as they were.
                #expect(readBytes(truncated) == Array(files.bodies[0].prefix(1_000)))
                #expect(readBytes(rewritten) == Array("the user's own notes".utf8))
                #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: linked)) == out + "/c4.bin")
                // Fetched again beside them; the intact file was not.
                for (index, name) in ["c1 (1).bin", "c2 (1).bin", "c3 (1).bin"].enumerated() {
                    #expect(contentMismatch(out + "/" + name, expected: files.bodies[index]) == nil, "\(name)")
                }
                let after = files.names.map { server.requests("/" + $0).count }
                #expect(after[3] == before[3] && (0..<3).allSatisfy { after[$0] == before[$0] + 1 }, "\(before) → \(after)")

                let third = try await box.run(args)
                #expect(third.exitCode == 0 && !third.stderr.contains("warning"), "\(third.stderr)")
                #expect(files.names.map { server.requests("/" + $0).count } == after, "nothing is fetched a third time")
            }
        }
    }

    @Test func urlListFromStdinSkipsBlankLinesAndComments() async throws {
        try await withTestServer { server in
            let files = BatchFiles(server, prefix: "i", count: 3, size: 100_000, seed: 5_000, rate: nil)
            server.serve("/commented.bin", Resource(body: TestData.bytes(1_000, seed: 5_999)))
            try await Sandbox.with { box in
                let out = box.path("out")
                let input = """
                    # URLs for this batch

                    \(files.urls[0])
                       \(files.urls[1])\t
                    #\(server.url("/commented.bin"))
                      # \(server.url("/commented.bin")) indented comment
                    \t

                    \(files.urls[2])
                    """
                let result = try await box.runFeedingStdin(["get", "-i", "-", "-d", out], input: input, timeout: .seconds(30))
                #expect(result.exitCode == 0 && !result.signalled, "exit \(result.exitCode): \(result.stderr)")
                #expect(result.stderrLines.contains("3 finished, 0 failed"), "stderr: \(result.stderr)")
                files.expectExact(in: out)
                #expect(finals(out) == files.names.sorted(), "folder: \(dirContents(out))")
                #expect(server.requests("/commented.bin").isEmpty, "a commented-out URL was downloaded")
                let rows = try StoreRows.read(box)
                #expect(rows.map(\.url).sorted() == files.urls.sorted(), "store: \(rows.map(\.url))")
            }
        }
    }
}

// MARK: - Helpers (file-private)

/// `count` resources served at /<prefix><n>.bin, each with its own bytes and ETag.
private struct BatchFiles {
    let server: TestServer
    let names: [String]
    let bodies: [[UInt8]]
    var urls: [String] { names.map { server.url("/" + $0) } }

    init(_ server: TestServer, prefix: String, count: Int, size: Int, seed: UInt64, rate: Int?) {
        self.server = server
        names = (1...count).map { "\(prefix)\($0).bin" }
        bodies = (0..<count).map { TestData.bytes(size, seed: seed + UInt64($0)) }
        serveAll(rate: rate)
    }

    /// (Re-)serves every file, throttled per request to `rate` bytes/s, or at full speed when nil.
    func serveAll(rate: Int?) {
        for (name, body) in zip(names, bodies) {
            var resource = Resource(body: body, etag: "\"\(name)-v1\"")
            resource.faults.throttleBytesPerSecond = rate
            server.serve("/" + name, resource)
        }
    }

    func expectExact(in folder: String, context: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        for (name, body) in zip(names, bodies) {
            let mismatch = contentMismatch(folder + "/" + name, expected: body)
            #expect(mismatch == nil, "\(mismatch ?? "") \(context)", sourceLocation: sourceLocation)
        }
    }
}

private func dirContents(_ folder: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
}

private func partials(_ folder: String) -> [String] {
    dirContents(folder).filter { $0.hasSuffix(".haul-part") }
}

private func finals(_ folder: String) -> [String] {
    dirContents(folder).filter { !$0.hasSuffix(".haul-part") }
}

/// The first byte a request asked for: N of `Range: bytes=N-…`, else 0.
private func rangeStart(_ request: RecordedRequest) -> Int {
    guard let value = request.header("Range")?.trimmingCharacters(in: .whitespaces), value.hasPrefix("bytes="),
          let dash = value.firstIndex(of: "-") else { return 0 }
    return Int(value[value.index(value.startIndex, offsetBy: 6)..<dash]) ?? 0
}

/// Rows of the `task` table of the sandbox's only session store, read with the sqlite3 CLI (python3 as fallback).
private struct StoreRows: CustomStringConvertible {
    var id: String
    var url: String
    var state: String
    var bytes: Int
    var total: Int?
    var filePath: String?

    var description: String { "\(url) \(state) \(bytes)/\(total.map(String.init) ?? "?")" }

    static func read(_ box: Sandbox) throws -> [StoreRows] {
        let sessions = box.home + "/sessions"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: sessions)) ?? []).filter { $0.hasPrefix("get-") }
        guard names.count == 1 else { throw HarnessError("expected one get-* session in \(sessions), found \(names)") }
        let database = sessions + "/" + names[0] + "/tasks.sqlite"
        let query = "SELECT id, url, state, bytes, total, filePath FROM task ORDER BY sequence"
        let output: Data
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") {
            output = try capture("/usr/bin/sqlite3", ["-json", database, query])
        } else {
            let script = "import sqlite3,json,sys; c=sqlite3.connect(sys.argv[1]); c.row_factory=sqlite3.Row; "
                + "print(json.dumps([dict(r) for r in c.execute(sys.argv[2])]))"
            output = try capture("/usr/bin/env", ["python3", "-c", script, database, query])
        }
        // sqlite3 -json prints nothing for no rows.
        guard !output.allSatisfy({ $0 == 10 || $0 == 32 }) else { return [] }
        guard let objects = try JSONSerialization.jsonObject(with: output) as? [[String: Any]] else {
            throw HarnessError("unreadable store dump: \(String(decoding: output, as: UTF8.self))")
        }
        return objects.map { row in
            StoreRows(
                id: row["id"] as? String ?? "", url: row["url"] as? String ?? "", state: row["state"] as? String ?? "",
                bytes: (row["bytes"] as? NSNumber)?.intValue ?? -1, total: (row["total"] as? NSNumber)?.intValue,
                filePath: row["filePath"] as? String)
        }
    }

    private static func capture(_ executable: String, _ arguments: [String]) throws -> Data {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stdout = Pipe(), stderr = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let data = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw HarnessError("\(executable) \(arguments) failed: \(String(decoding: errors, as: UTF8.self))")
        }
        return data
    }
}
