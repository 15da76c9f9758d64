import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real terminal for `haul`: a tmux server of the test's own (its socket in the sandbox, so nothing else's
/// tmux is touched) running one shell command in a detached session of a given size. `screen()` reads what a
/// person would see; every tmux call is bounded.
final class TmuxSession: @unchecked Sendable {
    static let binary = ExternalTools.find("tmux", also: ["/usr/bin", "/usr/local/bin"])
    private static let perlBinary = ExternalTools.find("perl", also: ["/usr/bin"])
    /// Unblocks every signal, closes every descriptor above 2, then runs its arguments.
    private static let cleanExec = #"""
        use POSIX (); POSIX::sigprocmask(POSIX::SIG_SETMASK(), POSIX::SigSet->new()) or die "sigprocmask: $!\n";
        opendir(my $d, "/proc/self/fd") or die "/proc/self/fd: $!\n";
        my @fds = grep { /^\d+$/ && $_ > 2 } readdir($d); closedir($d); POSIX::close($_) for @fds;
        exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!\n";
        """#
    /// Runs when tmux is installed, and always in CI (scripts/test installs it), where a missing tmux fails.
    static var enabled: Bool { binary != nil || ExternalTools.inCI }

    private let tmux: String
    private let perl: String
    private let socket: String
    private let directory: String
    private let environment: [String: String]
    private static let target = "haul-test"

    /// Starts `sh -c command` in a `width`×`height` terminal (UTF-8, TERM from tmux) in `directory`. With
    /// `recording`, everything the command writes to the terminal is also appended to that file (`pipe-pane`, set up
    /// by the same tmux call, before the server reads the pane's first output): what was drawn, not a sample of it.
    init(command: String, width: Int, height: Int, directory: String, environment: [String: String], recording: String? = nil) throws {
        guard let tmux = Self.binary else { throw HarnessError("tmux is not installed: apt-get install tmux (scripts/test installs it)") }
        self.tmux = tmux
        guard let perl = Self.perlBinary else { throw HarnessError("perl is not installed (Debian's perl-base): it starts tmux") }
        self.perl = perl
        self.directory = directory
        socket = directory + "/.tmux-" + String(UUID().uuidString.prefix(8))
        var environment = environment
        environment["TMUX"] = nil  // tmux refuses to start a session from inside another one
        environment["LANG"] = "C.UTF-8"
        environment["LC_ALL"] = "C.UTF-8"
        self.environment = environment
        let pipe = recording.map { [";", "pipe-pane", "-t", Self.target, "cat >> " + Self.quoted($0)] } ?? []
        _ = try call(["-f", "/dev/null", "new-session", "-d", "-s", Self.target, "-x", "\(width)", "-y", "\(height)", "sh", "-c", command] + pipe)
    }

    /// What was written to a terminal recorded to `path` (see `init`), cut into the writes that begin by returning
    /// to the first column and erasing to the end of the screen (`\r` `ESC[J`: a live view's frames, and the lines
    /// said above it), each as its lines with escape sequences left out and trailing spaces trimmed.
    static func recordedFrames(_ path: String) -> [[String]] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let text = String(decoding: data, as: UTF8.self)
        return text.components(separatedBy: "\r\u{1B}[J").map { frame in
            frame.replacing(#/\x1B\[[0-9;?]*[@-~]/#, with: "")
                .split(omittingEmptySubsequences: true) { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
                .map { String($0.reversed().drop { $0 == " " }.reversed()) }
                .filter { !$0.isEmpty }
        }
    }

    /// The screen as tmux shows it, each line joined with its wrapped continuation (`-J`, so a line longer than
    /// the terminal shows as one long line), trailing spaces and empty lines left out.
    func screen() throws -> [String] {
        try screen(joined: true)
    }

    /// The screen with each wrapped line joined (`-J`) or as the terminal's rows (a line that wrapped shows as two):
    /// when both are the same, no line wrapped. Trailing spaces and empty lines are left out.
    func screen(joined: Bool) throws -> [String] {
        try call(["capture-pane", "-p"] + (joined ? ["-J"] : []) + ["-t", Self.target])
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { String($0.reversed().drop { $0 == " " }.reversed()) }
            .filter { !$0.isEmpty }
    }

    /// How many lines have scrolled off the top of the screen into the pane's history.
    func historySize() throws -> Int {
        let text = try call(["display-message", "-p", "-t", Self.target, "#{history_size}"])
        guard let size = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw HarnessError("history_size: \(text)") }
        return size
    }

    func resize(width: Int, height: Int) throws {
        _ = try call(["resize-window", "-t", Self.target, "-x", "\(width)", "-y", "\(height)"])
    }

    /// Types keys, e.g. `C-c`.
    func sendKeys(_ keys: String) throws {
        _ = try call(["send-keys", "-t", Self.target, keys])
    }

    /// Ends the server and everything running in it.
    func kill() {
        _ = try? call(["kill-server"])
    }

    private func call(_ arguments: [String]) throws -> String {
        // The tmux server outlives the client that starts it and inherits what this process leaves to a child:
        // descriptors (Foundation's Process watches one to see the child end, so the client would never be seen
        // to exit) and the blocked signals of the thread that spawned it (a server that cannot see SIGCHLD or
        // SIGTERM never ends, not even on kill-server). Perl (Debian's perl-base is always there) clears both,
        // then becomes tmux.
        let result = try runCommand(
            perl, ["-e", Self.cleanExec, tmux, "-u", "-S", socket] + arguments, in: directory, environment: environment,
            timeout: .seconds(10))
        guard result.status == 0 else {
            throw HarnessError("tmux \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderr)")
        }
        return result.stdout
    }

    /// `text` quoted for `sh`.
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
