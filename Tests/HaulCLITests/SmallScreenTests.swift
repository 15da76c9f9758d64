import Foundation
import HaulKit
import HaulTestSupport
import Testing

/// `haul ls`, `haul watch` and a batch of 2,000 files in real terminals of 80×24 and 60×20 (tmux): every line fits
/// (the screen read with and without joining wrapped lines is the same), tasks are named by their files, and a
/// long batch neither floods the terminal nor hides its failures.
@Suite(.serialized, .enabled(if: TmuxSession.enabled, "needs tmux (apt-get install tmux; scripts/test installs it)"))
struct SmallScreenTests {
    struct Size: Sendable, CustomTestStringConvertible {
        var width: Int
        var height: Int
        var testDescription: String { "\(width)x\(height)" }
    }

    static let sizes = [Size(width: 80, height: 24), Size(width: 60, height: 20)]

    // MARK: haul ls

    @Test(arguments: sizes) func listFitsTheTerminalAndNotesGetLinesOfTheirOwn(_ size: Size) async throws {
        try await withTestServer { server in
            let body = TestData.bytes(64 << 10, seed: 2_600)
            server.serve("/files/done.bin", Resource(body: body, etag: "\"done\""))
            var slow = Resource(body: TestData.bytes(4 << 20, seed: 2_601), etag: "\"slow\"")
            slow.faults.throttleBytesPerSecond = 32 << 10
            server.serve("/files/slow.bin", slow)
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                let long = box.path("a-rather-long-folder-name/with-another-level/" + String(repeating: "very-long-file-name-", count: 3) + "final.iso")
                var ids: [String] = []
                for arguments in [
                    ["add", server.url("/files/done.bin"), "-o", long],
                    ["add", server.url("/files/missing-" + String(repeating: "x", count: 40) + ".bin"), "--dir", box.path("out")],
                    ["add", server.url("/files/slow.bin"), "-o", box.path("slow.bin")],
                ] {
                    let added = try await box.run(arguments + ["--no-autostart"])
                    #expect(added.exitCode == 0, "\(arguments): \(added.stderr)")
                    ids += added.stdoutLines
                }
                try await eventuallyAsync("the three tasks settle: finished, failed, running", timeout: .seconds(60), step: .milliseconds(200)) {
                    let listed = try await box.run(["ls", "--json", "--no-autostart"])
                    let states = listed.stdoutLines.compactMap { line in
                        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["state"] as? String
                    }
                    return states == ["finished", "failed", "running"]
                }

                let tmux = try TmuxSession(
                    command: try shellCommand(["ls", "--no-autostart"]), width: size.width, height: size.height,
                    directory: box.work, environment: box.environment)
                defer { tmux.kill() }
                let screen = try await finalScreen(tmux)
                try expectNoLineWrapped(tmux, size)
                #expect(screen.first?.hasPrefix("ID ") == true && screen.first?.contains("STATE") == true, "\(screen)")
                for id in ids {
                    let line = screen.first { $0.hasPrefix(String(id.prefix(8)) + " ") }
                    #expect(line != nil, "a line starting with \(id.prefix(8)): \(screen)")
                    #expect(!screen.contains { $0.contains(id) }, "the whole id is not shown on a terminal: \(screen)")
                }
                #expect(screen.contains { $0.contains("final.iso") && $0.contains("…") }, "the long path shortened, its file name kept: \(screen)")
                let failed = try #require(screen.firstIndex { $0.hasPrefix(String(ids[1].prefix(8))) })
                #expect(screen.indices.contains(failed + 1) && screen[failed + 1].hasPrefix("  ") && screen[failed + 1].contains("404"),
                        "the failure's note on a line of its own under it: \(screen)")
                #expect(screen.last == "exit=0", "\(screen)")

                // A prefix as shown is what the other commands take.
                #expect(try await box.run(["pause", String(ids[2].prefix(8)), "--no-autostart"]).exitCode == 0)

                // Not a terminal: whole values, one task per line; --wide the same on a terminal.
                let piped = try await box.run(["ls", "--no-autostart"])
                #expect(piped.stdoutLines.count == 4, "\(piped.stdout)")
                for (id, line) in zip(ids, piped.stdoutLines.dropFirst()) { #expect(line.hasPrefix(id + "  "), "\(line)") }
                #expect(piped.stdoutLines.contains { $0.contains(long) }, "the whole path: \(piped.stdout)")
                let wide = try TmuxSession(
                    command: try shellCommand(["ls", "--wide", "--no-autostart"]), width: size.width, height: size.height,
                    directory: box.work, environment: box.environment)
                defer { wide.kill() }
                let wideScreen = try await finalScreen(wide)
                #expect(ids.allSatisfy { id in wideScreen.contains { $0.hasPrefix(id) } }, "--wide shows whole ids: \(wideScreen)")
            }
        }
    }

    // MARK: haul watch

    @Test(arguments: sizes) func watchNamesTasksByTheirFilesShowsRetriesAndExitsAsWaitDoes(_ size: Size) async throws {
        try await withTestServer { server in
            // Three downloads of files all called f.bin, saved under names of their own; one more answers 503
            // four times (Retry-After: 3) before it serves; one is missing.
            var bodies: [[UInt8]] = []
            for (index, folder) in ["a", "b", "c"].enumerated() {
                let body = TestData.bytes(1 << 20, seed: 2_610 + UInt64(index))
                bodies.append(body)
                var resource = Resource(body: body, etag: "\"\(folder)\"")
                resource.faults.throttleBytesPerSecond = 48 << 10
                server.serve("/\(folder)/f.bin", resource)
            }
            var flaky = Resource(body: TestData.bytes(32 << 10, seed: 2_620), etag: "\"flaky\"")
            flaky.faults.statusForFirstRequests = (status: 503, count: 4, retryAfter: "3")
            server.serve("/flaky/f.bin", flaky)
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                #expect(try await box.run(["session", "set", "--max-concurrent", "5", "--no-autostart"]).exitCode == 0)
                let names = ["alpha-report.bin", "bravo-dataset.bin", "charlie-archive.bin"]
                var ids: [String] = []
                for (folder, name) in zip(["a", "b", "c"], names) {
                    ids += try await box.run(["add", server.url("/\(folder)/f.bin"), "-o", box.path(name), "--no-autostart"]).stdoutLines
                }
                ids += try await box.run(["add", server.url("/flaky/f.bin"), "-o", box.path("flaky.bin"), "--no-autostart"]).stdoutLines
                ids += try await box.run(["add", server.url("/missing/f.bin"), "-o", box.path("missing.bin"), "--no-autostart"]).stdoutLines
                #expect(ids.count == 5)

                let tmux = try TmuxSession(
                    command: try shellCommand(["watch", "--no-autostart"] + ids), width: size.width, height: size.height,
                    directory: box.work, environment: box.environment)
                defer { tmux.kill() }
                var screen: [String] = []
                var sawRetry = false
                try await eventually("the three downloads by their file names, and the retry: \(screen)", timeout: .seconds(60), step: .milliseconds(100)) {
                    screen = try tmux.screen()
                    try expectFits(screen, size)
                    sawRetry = sawRetry || screen.contains { $0.hasPrefix("flaky.bin") && $0.contains("retry") && $0.contains("503") }
                    return sawRetry && names.allSatisfy { name in screen.contains { $0.hasPrefix(name) && $0.contains("%") } }
                }
                #expect(!screen.contains { $0.hasPrefix("f.bin") }, "no task named by its URL's f.bin: \(screen)")
                #expect(!screen.contains { $0.contains("flaky.bin") && $0.contains("starting") }, "a retrying task is not shown as starting")
                try expectNoLineWrapped(tmux, size)

                for (folder, body) in zip(["a", "b", "c"], bodies) { server.serve("/\(folder)/f.bin", Resource(body: body, etag: "\"\(folder)\"")) }
                screen = try await finalScreen(tmux, timeout: .seconds(90))
                try expectNoLineWrapped(tmux, size)
                let waited = try await box.run(["wait", "--no-autostart"] + ids)
                #expect(waited.exitCode == 4, "wait: \(waited.stderr)")
                #expect(screen.last == "exit=\(waited.exitCode)", "watch exits as wait does: \(screen)")
                #expect(screen.contains { $0.hasPrefix("4 finished, 1 failed") }, "\(screen)")
                #expect(screen.contains { $0.hasPrefix("  missing.bin: ") && $0.contains("404") }, "the failure by its file and reason: \(screen)")
            }
        }
    }

    // MARK: A batch of 2,000

    @Test(arguments: sizes) func aBatchOfTwoThousandFilesCountsWhatFinishedAndNamesItsFailures(_ size: Size) async throws {
        try await withTestServer { server in
            // 2,000 URLs: four slow files first (moving lines to see), 1,984 small ones, and 12 that are missing.
            var urls: [String] = []
            for index in 0..<4 {
                var resource = Resource(body: TestData.bytes(512 << 10, seed: 2_700 + UInt64(index)), etag: "\"s\(index)\"")
                resource.faults.throttleBytesPerSecond = 96 << 10
                server.serve("/batch/slow-\(index).bin", resource)
                urls.append(server.url("/batch/slow-\(index).bin"))
            }
            let small = TestData.bytes(2 << 10, seed: 2_710)
            for index in 0..<1_996 {
                let path = index % 166 == 165 ? "/batch/missing-\(index).bin" : "/batch/file-\(index).bin"
                if !path.contains("missing") { server.serve(path, Resource(body: small, etag: "\"f\(index)\"")) }
                urls.append(server.url(path))
            }
            let missing = urls.filter { $0.contains("missing") }.count
            #expect(missing == 12)
            try await Sandbox.with { box in
                let list = box.path("urls.txt"), recording = box.path("terminal.out")
                try writeBytes(Array(urls.joined(separator: "\n").utf8) + [10], to: list)
                let tmux = try TmuxSession(
                    command: try shellCommand(["get", "-i", list, "--dir", box.path("out"), "-j", "8", "--retries", "0"]),
                    width: size.width, height: size.height, directory: box.work, environment: box.environment,
                    recording: recording)
                defer { tmux.kill() }

                // The screen is read now and then to see that it fits; what was drawn is judged from everything
                // written to the terminal, since a reading every 250 ms on a starved pool can miss the few seconds
                // a slow download moves.
                var screen: [String] = []
                try await eventually("the batch ends: \(screen)", timeout: .seconds(400), step: .milliseconds(250)) {
                    screen = try tmux.screen()
                    try expectFits(screen, size)
                    #expect(screen.filter { $0.contains("starting") }.count <= 1, "downloads still starting are counted on one line: \(screen)")
                    return screen.contains { $0.hasPrefix("exit=") }
                }
                try expectNoLineWrapped(tmux, size)
                // `exit=` is on the screen: the pipe to the recording has it too once `cat` has written it (bounded).
                try await eventually("the recording has the exit status", timeout: .seconds(20)) {
                    TmuxSession.recordedFrames(recording).last?.contains { $0.hasPrefix("exit=") } == true
                }
                let frames = TmuxSession.recordedFrames(recording)
                let twice = frames.first { $0.filter { $0.contains("starting") }.count > 1 }
                #expect(twice == nil, "downloads still starting are counted on one line in every frame drawn: \(twice ?? [])")
                #expect(frames.contains { $0.contains { $0.hasPrefix("slow-") && $0.contains("%") } },
                        "a moving download had a line of its own in one of \(frames.count) frames")
                #expect(frames.contains { $0.contains { $0.contains("more files are counted, not listed") } },
                        "the per-file lines stopped with a line that says so")
                // The terminal was not flooded: a screenful at most scrolled away, not 2,000 lines.
                let history = try tmux.historySize()
                #expect(history <= size.height, "\(history) lines scrolled off the screen")

                #expect(screen.last == "exit=4", "a 404 gives exit 4: \(screen)")
                let summary = try #require(screen.firstIndex(of: "\(2_000 - missing) finished, \(missing) failed"), "\(screen)")
                let named = screen[(summary + 1)...].filter { $0.hasPrefix("  ") }
                #expect(named.count == 11, "ten failures and the count of the rest: \(named)")
                #expect(named.prefix(10).allSatisfy { $0.contains("missing-") && $0.contains("404") }, "\(named)")
                #expect(named.last == "  … and 2 more", "\(named)")
            }
        }
    }

    // MARK: Helpers

    /// `haul ARGS` for `sh -c`, then the exit status; the pane stays for reading.
    private func shellCommand(_ arguments: [String]) throws -> String {
        let haul = ([try HaulBinary.path()] + arguments).map(TmuxSession.quoted).joined(separator: " ")
        return "trap : INT; \(haul); echo \"exit=$?\"; sleep 300"
    }

    /// The screen once the command has printed its exit status.
    private func finalScreen(_ tmux: TmuxSession, timeout: Duration = .seconds(30)) async throws -> [String] {
        var screen: [String] = []
        try await eventually("the command ends: \(screen)", timeout: timeout, step: .milliseconds(100)) {
            screen = try tmux.screen()
            return screen.contains { $0.hasPrefix("exit=") }
        }
        return screen
    }

    /// No line wider than the terminal and no more lines than it has rows.
    private func expectFits(_ screen: [String], _ size: Size, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(screen.count <= size.height, "\(screen.count) lines", sourceLocation: sourceLocation)
        for line in screen {
            #expect(TerminalText.width(line) <= size.width, "wider than \(size.width): \(line)", sourceLocation: sourceLocation)
        }
    }

    /// The screen read as rows and read with wrapped lines joined is the same: no line wrapped.
    private func expectNoLineWrapped(_ tmux: TmuxSession, _ size: Size, sourceLocation: SourceLocation = #_sourceLocation) throws {
        // Both reads of one still screen: taken again if output arrived between them (bounded).
        for _ in 0..<20 {
            let rows = try tmux.screen(joined: false)
            let joined = try tmux.screen(joined: true)
            guard rows == (try tmux.screen(joined: false)) else { continue }
            #expect(rows == joined, "a line wrapped at \(size.width) columns:\n\(rows.joined(separator: "\n"))", sourceLocation: sourceLocation)
            return
        }
        Issue.record("the screen kept changing", sourceLocation: sourceLocation)
    }
}
