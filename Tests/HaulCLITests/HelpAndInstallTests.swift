import Foundation
import Testing

/// What a person installing and learning `haul` reads: every command's help (with examples, titles as written),
/// the shell completions, and the systemd user unit in contrib/.
@Suite struct HelpAndInstallTests {
    static let commands: [[String]] = [
        [], ["get"], ["add"], ["ls"], ["pause"], ["resume"], ["rm"], ["watch"], ["wait"], ["session"], ["session", "show"], ["session", "set"],
        ["daemon"], ["daemon", "stop"], ["web"],
    ]

    @Test(arguments: commands)
    func helpHasExamplesAndNoCapitalisedTitles(_ command: [String]) async throws {
        try await Sandbox.with { box in
            let result = try await box.run(command + ["--help"], timeout: .seconds(20))
            #expect(result.exitCode == 0, "exit \(result.exitCode): \(result.stderr)")
            let lines = result.stdout.components(separatedBy: "\n")
            let shouted = lines.filter { $0.range(of: #"^[A-Z][A-Z0-9 ()/_,.-]*:"#, options: .regularExpression) != nil }
            #expect(shouted.isEmpty, "titles in capitals in haul \(command.joined(separator: " ")) --help: \(shouted)")
            #expect(lines.contains { $0.hasPrefix("Usage: haul") }, "\(result.stdout)")
            guard let start = lines.firstIndex(of: "Examples:") else {
                Issue.record("no Examples: section in haul \(command.joined(separator: " ")) --help:\n\(result.stdout)")
                return
            }
            let examples = lines[(start + 1)...].prefix { !$0.isEmpty }
            #expect(examples.count >= 2, "\(examples)")
            for line in examples {
                // Each example is one line of its own: a command, not wrapped at the help's width.
                #expect(["  haul ", "  id=", "  systemctl "].contains { line.hasPrefix($0) }, "not an example line: \(line)")
            }
        }
    }

    @Test func helpSubcommandAndGroupTitlesAreAsWritten() async throws {
        try await Sandbox.with { box in
            let result = try await box.run(["help", "add"], timeout: .seconds(20))
            #expect(result.exitCode == 0, "exit \(result.exitCode): \(result.stderr)")
            #expect(result.stdout.hasPrefix("Overview: Queue downloads"), "\(result.stdout)")
            #expect(result.stdout.contains("\nFile options (--limit-rate caps each download):\n"), "\(result.stdout)")
            #expect(result.stdout.contains("\nConnection options (the proxy variables and SSL_CERT_FILE/SSL_CERT_DIR are read here, not in the daemon):\n"),
                    "\(result.stdout)")
        }
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsAreGenerated(_ shell: String) async throws {
        try await Sandbox.with { box in
            let result = try await box.run(["--generate-completion-script", shell], timeout: .seconds(20))
            #expect(result.exitCode == 0, "exit \(result.exitCode): \(result.stderr)")
            // Each script names the subcommands; a help page would not be a script.
            #expect(result.stdout.contains("haul") && result.stdout.contains("daemon") && result.stdout.contains("limit-rate"),
                    "\(result.stdout.prefix(400))")
            #expect(!result.stdout.hasPrefix("Overview:"), "\(result.stdout.prefix(400))")
        }
    }

    /// The unit with its ExecStart pointed at the built binary (systemd-analyze wants it to exist), checked by
    /// `systemd-analyze verify`; a warning about the unit counts as a failure.
    @Test(.enabled(if: systemdAnalyze != nil, "needs systemd-analyze (Debian's systemd package); the unit file is not checked"))
    func systemdUnitVerifiesAndDoesNotRestartWhenAnotherDaemonRuns() async throws {
        let analyze = try #require(Self.systemdAnalyze)
        let unit = try String(contentsOfFile: Self.packageRoot + "/contrib/haul-daemon.service", encoding: .utf8)
        #expect(unit.contains("\nExecStart=%h/.local/bin/haul daemon\n"), "the README's install puts haul in ~/.local/bin")
        #expect(unit.contains("\nRestartPreventExitStatus=8\n"), "exit 8 (another daemon holds the socket) must not be restarted")
        try await Sandbox.with { box in
            let binary = box.path("bin/haul")
            try FileManager.default.createDirectory(atPath: box.path("bin"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: try HaulBinary.path(), toPath: binary)
            let path = box.path("haul-daemon.service")
            try unit.replacingOccurrences(of: "%h/.local/bin/haul", with: binary).write(toFile: path, atomically: true, encoding: .utf8)
            let result = try runCommand(analyze, ["verify", path], in: box.work, timeout: .seconds(60))
            let aboutUnit = (result.stdout + result.stderr).components(separatedBy: "\n").filter { $0.contains("haul-daemon.service") }
            #expect(result.status == 0 && aboutUnit.isEmpty, "systemd-analyze verify: \(result.status) \(result.stdout) \(result.stderr)")
        }
    }

    @Test func anotherDaemonOnTheSameSocketExitsWith8() async throws {
        try await Sandbox.with { box in
            _ = try await startDaemon(box)
            let second = try await box.run(["daemon"], timeout: .seconds(20))
            #expect(second.exitCode == 8, "exit \(second.exitCode): \(second.stderr)")
            #expect(second.stderr.contains("already running"), "\(second.stderr)")
        }
    }

    static let systemdAnalyze = ExternalTools.find("systemd-analyze", also: ["/usr/bin", "/bin"])

    static var packageRoot: String {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        for _ in 0..<16 where !FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
            directory = directory.deletingLastPathComponent()
        }
        return directory.path
    }
}
