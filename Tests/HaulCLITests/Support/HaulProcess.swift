import Foundation
import HaulTestSupport
import HaulKit
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure of the test harness itself (not of the product), thrown so Swift Testing records it.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` every `step` until it holds; throws once `timeout` has passed.
func eventually(
    _ what: @autoclosure () -> String,
    timeout: Duration = .seconds(20),
    step: Duration = .milliseconds(20),
    _ condition: () throws -> Bool
) async throws {
    try await eventuallyAsync(what(), timeout: timeout, step: step) { try condition() }
}

/// `eventually` for a condition that must await (running `haul ls`, say); bounded by `timeout`.
func eventuallyAsync(
    _ what: @autoclosure () -> String,
    timeout: Duration = .seconds(20),
    step: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return }
        guard ContinuousClock.now < deadline else {
            throw HarnessError("timed out after \(timeout) waiting until \(what())")
        }
        try await Task.sleep(for: step)
    }
}

/// Starts `haul daemon` in the sandbox (its default socket) and waits until it says it listens.
func startDaemon(_ box: Sandbox) async throws -> HaulRun {
    let daemon = try box.start(["daemon"])
    try await eventually("the daemon listens") {
        guard daemon.isRunning else { throw HarnessError("haul daemon exited: \(daemon.stderrSoFar())") }
        return daemon.stderrSoFar().contains("listening on")
    }
    return daemon
}

/// Size of the file at `path`, or nil when it does not exist.
func fileSize(_ path: String) -> Int? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Int(info.st_size)
}

func fileExists(_ path: String) -> Bool { fileSize(path) != nil }

func readBytes(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { Array($0) }
}

func writeBytes(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// The built `haul` executable: `$HAUL_BIN`, else `<package root>/.build/debug/haul`.
enum HaulBinary {
    static func path() throws -> String {
        if let override = ProcessInfo.processInfo.environment["HAUL_BIN"], !override.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: override) else {
                throw HarnessError("HAUL_BIN=\(override) is not an executable file")
            }
            return override
        }
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        for _ in 0..<16 where directory.path != "/" {
            if fileExists(directory.appendingPathComponent("Package.swift").path) {
                let binary = directory.appendingPathComponent(".build/debug/haul").path
                guard FileManager.default.isExecutableFile(atPath: binary) else {
                    throw HarnessError("the haul binary is missing at \(binary): run `swift build` first, or set HAUL_BIN")
                }
                return binary
            }
            directory = directory.deletingLastPathComponent()
        }
        throw HarnessError("no Package.swift above \(#filePath); set HAUL_BIN to the haul binary")
    }
}

/// What a finished `haul` process left behind.
struct HaulResult {
    var exitCode: Int32
    /// Killed by a signal (then `exitCode` is the signal number).
    var signalled: Bool
    var stdout: String
    var stderr: String
    /// stdout exactly as written (a file streamed with `-o -` is not text).
    var stdoutBytes: [UInt8] = []

    var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }

    /// The `--json` events; throws when a line is not a JSON object.
    func jsonEvents() throws -> [[String: Any]] {
        try stdoutLines.map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw HarnessError("stdout line is not a JSON object: \(line)")
            }
            return object
        }
    }
}

/// One running `haul` process; stdout and stderr go to files so the child never blocks on a full pipe.
final class HaulRun: @unchecked Sendable {
    let process: ChildProcess
    let arguments: [String]
    private let stdoutPath: String
    private let stderrPath: String

    /// With `input`, the child's stdin is a pipe that gets `input` and is then closed; with `standardInput`, that
    /// file (a device, a pipe the test holds); else /dev/null.
    init(binary: String, arguments: [String], environment: [String: String], directory: String, logPrefix: String, input: Data? = nil,
         standardInput: FileHandle? = nil) throws {
        self.arguments = arguments
        stdoutPath = logPrefix + ".stdout"
        stderrPath = logPrefix + ".stderr"
        FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let pipe = input.map { _ in Pipe() }
        process.standardInput = pipe ?? standardInput ?? FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        if let pipe, let input {
            // Small inputs (well under a pipe buffer) do not block; closing sends EOF.
            try pipe.fileHandleForWriting.write(contentsOf: input)
            try pipe.fileHandleForWriting.close()
        }
    }

    var pid: Int32 { process.processIdentifier }
    /// When the process ended (seen the moment it did), or `nil` while it runs.
    var endedAt: ContinuousClock.Instant? { process.endedAt }
    var isRunning: Bool { process.isRunning }

    func signal(_ number: Int32) {
        if process.isRunning { kill(process.processIdentifier, number) }
    }

    func stderrSoFar() -> String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
    func stdoutSoFar() -> String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }

    /// Waits (bounded) for the process to end; on timeout it is killed and an error thrown.
    @discardableResult
    func wait(timeout: Duration = .seconds(40)) async throws -> HaulResult {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                kill(process.processIdentifier, SIGKILL)
                try? await eventually("the killed haul exits", timeout: .seconds(5)) { !process.isRunning }
                throw HarnessError("haul \(arguments.joined(separator: " ")) did not finish within \(timeout); killed it. stderr: \(stderrSoFar())")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return HaulResult(
            exitCode: process.terminationStatus,
            signalled: process.terminationReason == .uncaughtSignal,
            stdout: (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "",
            stderr: stderrSoFar(),
            stdoutBytes: readBytes(stdoutPath) ?? [])
    }
}

/// A fresh temporary folder per test: `work/` (the working directory), `home/` (HAUL_HOME), `logs/`.
/// Every process started through it is killed when the test ends, pass or fail.
final class Sandbox: @unchecked Sendable {
    let root: String
    var work: String { root + "/work" }
    var home: String { root + "/home" }
    private var logs: String { root + "/logs" }
    private let lock = NSLock()
    private var runs: [HaulRun] = []
    private var readers: [String: SessionRecords.Reader] = [:]

    private init() throws {
        root = NSTemporaryDirectory() + "haul-cli-" + UUID().uuidString
        for folder in [root, root + "/work", root + "/home", root + "/logs"] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
    }

    /// Runs `body` with a new sandbox, then stops stray processes and deletes the folder.
    static func with<T>(_ body: (Sandbox) async throws -> T) async throws -> T {
        let sandbox = try Sandbox()
        defer { sandbox.cleanUp() }
        return try await body(sandbox)
    }

    func path(_ name: String) -> String { work + "/" + name }

    /// The environment `haul` runs with here: this process's, with HAUL_HOME = `home`.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["HAUL_HOME"] = home
        // The daemon's socket then lives under HAUL_HOME/run, private to this sandbox.
        environment["XDG_RUNTIME_DIR"] = nil
        environment["HAUL_SOCKET"] = nil
        return environment
    }

    /// Starts `haul ARGS` (or `binary ARGS`) with HAUL_HOME = `home` in `work`; `changes` set or replace variables
    /// of that environment (another HAUL_HOME, say).
    func start(
        _ arguments: [String], input: Data? = nil, standardInput: FileHandle? = nil, binary: String? = nil,
        environment changes: [String: String] = [:]
    ) throws -> HaulRun {
        let environment = self.environment.merging(changes) { _, new in new }
        let run = try lock.withLock {
            let run = try HaulRun(
                binary: try binary ?? HaulBinary.path(), arguments: arguments, environment: environment,
                directory: work, logPrefix: "\(logs)/run\(runs.count)", input: input, standardInput: standardInput)
            runs.append(run)
            return run
        }
        return run
    }

    /// Runs `haul ARGS` to completion (bounded).
    func run(_ arguments: [String], timeout: Duration = .seconds(40)) async throws -> HaulResult {
        try await start(arguments).wait(timeout: timeout)
    }

    /// The resume records, decoded as JSON objects: the files under `$HAUL_HOME/transfers` (`haul get`), then those
    /// in each session's store (a batch's or the daemon's tasks).
    func records() -> [[String: Any]] {
        let folder = home + "/transfers"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var texts: [Data] = names.filter { $0.hasSuffix(".json") }.sorted().compactMap { name in
            FileManager.default.contents(atPath: folder + "/" + name)
        }
        let sessions = (try? FileManager.default.contentsOfDirectory(atPath: home + "/sessions")) ?? []
        for name in sessions.sorted() {
            guard let reader = sessionReader(home + "/sessions/" + name + "/tasks.sqlite") else { continue }
            texts += ((try? reader.recordTexts()) ?? []).map { Data($0.utf8) }
        }
        return texts.compactMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
    }

    /// A reader of the session store at `path`, opened once and kept while the file is the same (tests look often).
    private func sessionReader(_ path: String) -> SessionRecords.Reader? {
        lock.lock()
        defer { lock.unlock() }
        if let open = readers[path], open.isCurrent { return open }
        readers[path] = SessionRecords.Reader(path: path)
        return readers[path]
    }

    /// The `offset` of the only resume record, if there is exactly one.
    func recordedOffset() -> Int? {
        let all = records()
        guard all.count == 1 else { return nil }
        return (all[0]["offset"] as? NSNumber)?.intValue
    }

    /// Names in the working directory.
    func workContents() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: work)) ?? []).sorted()
    }

    /// Process ids of daemons started in this sandbox (also autostarted ones): every `*.pid` under `home`.
    func daemonPIDs() -> [Int32] {
        let enumerator = FileManager.default.enumerator(atPath: home)
        var pids: [Int32] = []
        while let name = enumerator?.nextObject() as? String {
            guard name.hasSuffix(".pid"),
                  let text = try? String(contentsOfFile: home + "/" + name, encoding: .utf8),
                  let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1,
                  // A stale file's pid may belong to another process by now.
                  let command = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8),
                  command.contains("haul") else { continue }
            pids.append(pid)
        }
        return pids
    }

    private func cleanUp() {
        let all = lock.withLock { runs }
        for run in all where run.isRunning { run.signal(SIGKILL) }
        for pid in daemonPIDs() { kill(pid, SIGKILL) }
        let deadline = ContinuousClock.now + .seconds(5)
        while all.contains(where: \.isRunning), ContinuousClock.now < deadline { usleep(10_000) }
        try? FileManager.default.removeItem(atPath: root)
    }
}
