#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport

/// A second local account for the tests of what another user can do: created with `useradd` for one test and
/// removed with `userdel` after it, pass or fail. Needs root. Accounts left by a test run that was killed
/// (their names start with ``prefix``) are removed before a new one is made.
struct LocalUser {
    static let prefix = "haul-t-"
    let name: String
    let uid: UInt32
    let gid: UInt32

    /// Whether this process can create accounts (root, with `useradd`).
    static var available: Bool { geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd") }

    /// Runs `body` with a fresh account, removed afterwards whatever happens in `body`.
    static func with<T>(_ body: (LocalUser) async throws -> T) async throws -> T {
        removeLeftovers()
        // The test process's pid in the name: only accounts of processes that are gone are leftovers (tests of this
        // process run at once, and each one's account is its own until it ends).
        let name = prefix + String(getpid(), radix: 36) + "-" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        try command("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
        defer { try? command("/usr/sbin/userdel", [name]) }
        guard let entry = getpwnam(name) else { throw HarnessError("useradd \(name) made no account") }
        let user = LocalUser(name: name, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
        return try await body(user)
    }

    /// Removes accounts a killed test run left behind: those whose test process is gone.
    private static func removeLeftovers() {
        guard let text = try? String(contentsOfFile: "/etc/passwd", encoding: .utf8) else { return }
        for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
            guard let name = line.split(separator: ":").first else { continue }
            let owner = name.dropFirst(prefix.count).split(separator: "-").first.flatMap { Int32($0, radix: 36) }
            if let owner, owner == getpid() || kill(owner, 0) == 0 { continue }
            try? command("/usr/sbin/userdel", [String(name)])
        }
    }

    private static func command(_ path: String, _ arguments: [String]) throws {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Bounded: useradd and userdel finish in well under a second.
        for _ in 0..<3_000 where process.isRunning { usleep(10_000) }
        guard !process.isRunning, process.terminationStatus == 0 else {
            throw HarnessError("\(path) \(arguments.joined(separator: " ")) failed (\(process.terminationStatus))")
        }
    }

    /// Gives the user a password (with `chpasswd`), as a service that checks local users' passwords needs (dante's
    /// `socksmethod: username`); returns it. Letters, digits and dashes: safe inside the shell's quotes.
    func setPassword() throws -> String {
        let password = "pw-" + UUID().uuidString.prefix(13)
        try runTool("/bin/sh", ["-c", "printf '%s:%s\\n' '\(name)' '\(password)' | /usr/sbin/chpasswd"], in: "/")
        return password
    }

    /// Runs `/bin/sh -c SCRIPT` as this user (with `runuser`); its output, or an error naming the exit status.
    @discardableResult
    func shell(_ script: String) throws -> String {
        try runTool("/usr/sbin/runuser", ["-u", name, "--", "/bin/sh", "-c", script], in: "/")
    }

    /// Gives `path` to this user.
    func own(_ path: String) {
        _ = chown(path, uid, gid)
    }

    /// Starts `python3 -c script ARGS` as this user, its stdout going to `output`: the script runs `os.setgid` and
    /// `os.setuid` first, from root, after importing `modules` (a python of root's, such as pyenv's, may be out of the
    /// user's reach once it is that user).
    func python(_ script: String, _ arguments: [String], modules: [String] = [], output: String) throws -> ChildProcess {
        let prologue = "import " + (["os", "sys"] + modules).joined(separator: ", ")
            + "\nos.setgroups([]); os.setgid(\(gid)); os.setuid(\(uid))\n"
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: try ExternalTools.requirePython())
        process.arguments = ["-c", prologue + script] + arguments
        for path in [output, output + ".stderr"] { FileManager.default.createFile(atPath: path, contents: nil) }
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle(forWritingAtPath: output + ".stderr")
        try process.run()
        return process
    }
}
#endif
