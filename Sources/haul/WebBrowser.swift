import Foundation
import HaulKit

/// How `haul web --open` starts the user's browser on an address (the `file://` address of the private login page,
/// never the login link itself: a command line is readable by every local user).
enum WebBrowser {
    /// The commands to try, in order: each entry of `$BROWSER` (a colon-separated list, as xdg-open and Python's
    /// `webbrowser` read it: `%s` in an entry stands for the address, else the address is its last argument; an
    /// entry is split at spaces), then the desktop's opener (`open` on macOS, `xdg-open` elsewhere).
    static func commands(for address: String, environment: [String: String]) -> [[String]] {
        var commands: [[String]] = []
        for entry in (environment["BROWSER"] ?? "").split(separator: ":") {
            let words = entry.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard !words.isEmpty else { continue }
            commands.append(words.contains { $0.contains("%s") }
                ? words.map { $0.replacingOccurrences(of: "%s", with: address) }
                : words + [address])
        }
        #if os(macOS)
        commands.append(["open", address])
        #else
        commands.append(["xdg-open", address])
        #endif
        return commands
    }

    /// How long a browser command is waited for: an opener (xdg-open, a browser that hands the address to one already
    /// running) exits soon, with its status; a browser that keeps running is left to run.
    static let patience: Duration = .seconds(10)

    /// Runs the commands of ``commands(for:environment:)`` until one exits with 0 or keeps running past ``patience``;
    /// false when none could open the address.
    static func open(_ address: String, environment: [String: String]) async -> Bool {
        for command in commands(for: address, environment: environment) {
            let process = Process()
            // Through env, so that a command is looked up in PATH as a shell would.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["--"] + command
            // Silent: a browser's chatter, or env's "no such file" for an entry that is not installed, is not ours to
            // show; when none opens, `haul web` says what to do in one line.
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do { try process.run() } catch { continue }
            let deadline = ContinuousClock.now + patience
            // Each turn checks whether it has ended; bounded by the deadline.
            while process.isRunning, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(20))
            }
            if process.isRunning || process.terminationStatus == 0 { return true }
        }
        return false
    }
}
