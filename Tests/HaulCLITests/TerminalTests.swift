import Foundation
import HaulKit
import HaulTestSupport
import Testing

/// `haul get` in a real terminal (tmux): progress lines fit the terminal's width in display columns, are redrawn
/// in place (the screen does not fill up with old frames), follow a resize, and leave a clean screen after
/// Ctrl-C and at the end.
@Suite(.enabled(if: TmuxSession.enabled, "needs tmux (apt-get install tmux; scripts/test installs it)"))
struct TerminalTests {
    /// Long names, one of them in wide (two-column) characters.
    static let names = [
        "a-rather-long-file-name-for-the-terminal-width-test-number-one-of-three.bin",
        "another-even-longer-file-name-that-cannot-possibly-fit-beside-its-progress-numbers.iso",
        "日本語のとても長いファイル名-データセット-二番目の版-最終.tar",
    ]

    @Test func batchViewFitsTheWidthFollowsAResizeAndCtrlCLeavesOneCleanLine() async throws {
        try await withTestServer { server in
            // ~90 s each at 48 KiB/s: all three are still running when Ctrl-C comes.
            let urls = Self.names.enumerated().map { index, name in
                let path = "/" + (name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name)
                var resource = Resource(body: TestData.bytes(4 << 20, seed: 9_100 + UInt64(index)), etag: "\"t\(index)\"")
                resource.faults.throttleBytesPerSecond = 48 * 1024
                server.serve(path, resource)
                return server.url(path)
            }
            try await Sandbox.with { box in
                let command = try haulCommand(box, ["get"] + urls + ["-j", "3", "--dir", box.path("out")])
                let tmux = try TmuxSession(command: command, width: 80, height: 24, directory: box.work, environment: box.environment)
                defer { tmux.kill() }

                var screen: [String] = []
                try await eventually("three progress lines and the total", timeout: .seconds(30), step: .milliseconds(100)) {
                    screen = try tmux.screen()
                    return screen.filter { $0.contains("%") }.count == 3 && screen.contains { $0.hasPrefix("total: ") }
                }
                // Refreshes redraw in place: the view stays four lines at most (three downloads and the total), each
                // within 80 columns.
                try await expectRefreshes(tmux, width: 80)

                try tmux.resize(width: 50, height: 24)
                try await eventually("the view redrawn for 50 columns: \(screen)", timeout: .seconds(15), step: .milliseconds(100)) {
                    screen = try tmux.screen()
                    return screen.count <= 4 && screen.filter { $0.contains("%") }.count == 3
                        && screen.allSatisfy { TerminalText.width($0) <= 50 }
                }
                try await expectRefreshes(tmux, width: 50)

                try tmux.sendKeys("C-c")
                try await eventually("haul exits after Ctrl-C: \(screen)", timeout: .seconds(20), step: .milliseconds(100)) {
                    screen = try tmux.screen()
                    return screen.contains { $0.hasPrefix("exit=") }
                }
                #expect(screen == ["haul: paused 3 downloads; run the same command again to resume", "exit=130"],
                        "after Ctrl-C the screen should hold the paused line and the exit status only, got \(screen)")
            }
        }
    }

    /// `-j 4` against one server that allows 2 at once: the total line says why only 2 run (issue 25).
    @Test func theTotalLineSaysWhenThePerHostLimitHoldsDownloadsBack() async throws {
        try await withTestServer { server in
            let urls = (0..<4).map { n in
                var resource = Resource(body: TestData.bytes(2 << 20, seed: 9_200 + UInt64(n)), etag: "\"h\(n)\"")
                resource.faults.throttleBytesPerSecond = 32 * 1024
                server.serve("/held\(n).bin", resource)
                return server.url("/held\(n).bin")
            }
            try await Sandbox.with { box in
                let command = try haulCommand(box, ["get"] + urls + ["-j", "4", "--max-connections-per-host", "2", "--dir", box.path("out")])
                let tmux = try TmuxSession(command: command, width: 100, height: 24, directory: box.work, environment: box.environment)
                defer { tmux.kill() }
                var screen: [String] = []
                try await eventually("the total line says the per-host limit holds two back", timeout: .seconds(30), step: .milliseconds(100)) {
                    screen = try tmux.screen()
                    return screen.contains { $0.hasPrefix("total: 0 finished, 0 failed, 2 running, 2 waiting (held back: 2 per host)") }
                }
                #expect(screen.allSatisfy { TerminalText.width($0) <= 100 }, "\(screen)")
                try tmux.sendKeys("C-c")
                try await eventually("haul exits after Ctrl-C: \(screen)", timeout: .seconds(20), step: .milliseconds(100)) {
                    screen = try tmux.screen()
                    return screen.contains { $0.hasPrefix("exit=") }
                }
            }
        }
    }

    @Test func singleDownloadLineFitsANarrowTerminalAndTheEndIsClean() async throws {
        try await withTestServer { server in
            let name = Self.names[1]
            // ~25 s at 40 KiB/s: time enough to read the live line even when a loaded machine reads the screen seldom.
            var resource = Resource(body: TestData.bytes(1 << 20, seed: 9_200), etag: "\"s\"")
            resource.faults.throttleBytesPerSecond = 40 * 1024
            server.serve("/" + name, resource)
            try await Sandbox.with { box in
                let command = try haulCommand(box, ["get", server.url("/" + name), "-o", name])
                let tmux = try TmuxSession(command: command, width: 40, height: 24, directory: box.work, environment: box.environment)
                defer { tmux.kill() }

                var screen: [String] = []
                /// The live line, one at most, within the 40 columns.
                func checkProgress() -> Int {
                    let progress = screen.filter { $0.contains("%") }
                    #expect(progress.count <= 1, "one progress line at a time: \(screen)")
                    for line in progress {
                        #expect(TerminalText.width(line) <= 40, "wider than the terminal: \(line)")
                    }
                    return progress.count
                }
                try await eventually("a progress line on the screen: \(screen)", timeout: .seconds(20), step: .milliseconds(100)) {
                    screen = try tmux.screen()
                    return checkProgress() == 1 || screen.contains { $0.hasPrefix("exit=") }
                }
                #expect(!screen.contains { $0.hasPrefix("exit=") }, "haul ended before its progress line was seen: \(screen)")
                try await eventually("haul finishes: \(screen)", timeout: .seconds(90), step: .milliseconds(100)) {
                    screen = try tmux.screen()
                    _ = checkProgress()
                    return screen.contains { $0.hasPrefix("exit=") }
                }
                #expect(screen.count == 3 && screen.first?.hasPrefix("downloading ") == true
                        && screen.dropFirst().first.map { $0.hasPrefix("saved ") && $0.contains(name + " (1.0 MiB in ") } == true
                        && screen.last == "exit=0",
                        "the end: the download's first and last notes and the exit status, no progress fragments; got \(screen)")
            }
        }
    }

    /// Eight screens a quarter of a second apart: never more than the view's four lines, none wider than `width`
    /// columns. A screen read while a frame is being written may show less of it, so the whole view (three
    /// download lines and the total) is asked of most screens, not of all.
    private func expectRefreshes(_ tmux: TmuxSession, width: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var whole = 0
        for _ in 0..<8 {
            let screen = try tmux.screen()
            #expect(screen.count <= 4, "more lines than the view: \(screen)", sourceLocation: sourceLocation)
            for line in screen {
                #expect(TerminalText.width(line) <= width, "wider than \(width) columns: \(line)", sourceLocation: sourceLocation)
            }
            if screen.count == 4 && screen.filter({ $0.contains("%") }).count == 3 && screen.last?.contains("running") == true {
                whole += 1
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(whole >= 6, "the whole view should be on most screens (\(whole) of 8)", sourceLocation: sourceLocation)
    }

    /// `haul ARGS` for `sh -c` in the sandbox: Ctrl-C reaches haul (the shell waits it out with a trap), then the
    /// exit status is printed and the pane is kept for reading.
    private func haulCommand(_ box: Sandbox, _ arguments: [String]) throws -> String {
        let haul = ([try HaulBinary.path()] + arguments).map(TmuxSession.quoted).joined(separator: " ")
        return "trap : INT; \(haul); echo \"exit=$?\"; sleep 120"
    }
}
