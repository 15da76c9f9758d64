import Foundation
import HaulTestSupport
import Testing

/// What a server sends (here a redirect's `Location`) reaches the person's terminal as text, never as commands to
/// it: in `haul get`'s error line, under `--verbose`, in `haul wait` and in the daemon's log, every control
/// character (C1's CSI among them, which a terminal obeys like ESC [) and bidirectional override shows as `?`.
@Suite struct TerminalEscapeCLITests {
    /// Locations a hostile server may send over HTTP/1.1 (obs-text bytes pass the parser; C0 controls do not).
    static let locations = [
        "ftp://x\u{9B}2J\u{9B}31mRED/a",
        "ftp://x/\u{9D}0;pwned\u{9C}\u{202E}txt.exe",
        "ftp://\u{85}\u{8D}\u{2066}x\u{2069}/\u{200F}b",
    ]

    /// Whether `text` holds a character a terminal would act on or reorder text by.
    static func hasUnsafeCharacter(_ text: String) -> Bool {
        text.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x0A: return false
            case 0x00..<0x20, 0x7F..<0xA0, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: return true
            default: return false
            }
        }
    }

    @Test(arguments: locations)
    func aServersControlCharactersNeverReachTheTerminal(_ location: String) async throws {
        try await withTestServer { server in
            server.route("/loc") { _ in ResponsePlan(status: 302, headers: [("Location", location)]) }
            try await Sandbox.with { box in
                let plain = try await box.run(["get", server.url("/loc"), "-o", "a.bin", "--retries", "0"])
                #expect(plain.exitCode != 0)
                #expect(!plain.stderr.isEmpty && !Self.hasUnsafeCharacter(plain.stderr + plain.stdout), "\(plain.stderr.debugDescription)")
                let verbose = try await box.run(["get", server.url("/loc"), "-o", "b.bin", "--retries", "0", "-v"])
                #expect(verbose.exitCode != 0)
                #expect(!Self.hasUnsafeCharacter(verbose.stderr + verbose.stdout), "\(verbose.stderr.debugDescription)")

                let daemon = try await startDaemon(box)
                let added = try await box.run(["add", server.url("/loc"), "-o", "c.bin", "--retries", "0", "--no-autostart"])
                let id = try #require(added.stdoutLines.first, "add failed: \(added.stderr)")
                let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                #expect(waited.exitCode != 0)
                #expect(!waited.stderr.isEmpty && !Self.hasUnsafeCharacter(waited.stderr + waited.stdout), "\(waited.stderr.debugDescription)")
                let listed = try await box.run(["ls", "--wide", "--no-autostart"])
                #expect(!Self.hasUnsafeCharacter(listed.stderr + listed.stdout), "\(listed.stdout.debugDescription)")
                _ = try await box.run(["daemon", "stop"])
                _ = try await daemon.wait(timeout: .seconds(20))
                #expect(!Self.hasUnsafeCharacter(daemon.stderrSoFar()), "\(daemon.stderrSoFar().debugDescription)")
            }
        }
    }
}
