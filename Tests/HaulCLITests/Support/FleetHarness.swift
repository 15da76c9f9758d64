#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// Daemons of one fleet as real processes: each its own HAUL_HOME and socket, all on one PostgreSQL store and one
/// download folder. Every process is killed when the sandbox ends.
final class FleetProcesses: @unchecked Sendable {
    let sandbox: Sandbox
    /// The store's URL.
    let store: String
    /// The download folder every node writes to.
    let folder: String
    private let lock = NSLock()
    private var daemons: [String: HaulRun] = [:]

    init(_ sandbox: Sandbox, store: String) throws {
        self.sandbox = sandbox
        self.store = store
        folder = sandbox.root + "/downloads"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    func home(_ node: String) -> String { sandbox.root + "/home-" + node }
    func socket(_ node: String) -> String { home(node) + "/run/daemon.sock" }

    /// Starts node `node` (`haul daemon --store STORE --node NODE EXTRA`) and waits until it accepts connections.
    @discardableResult
    func start(_ node: String, _ extra: [String] = [], environment: [String: String] = [:]) async throws -> HaulRun {
        try FileManager.default.createDirectory(atPath: home(node), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var changes = environment
        changes["HAUL_HOME"] = home(node)
        let daemon = try sandbox.start(
            ["daemon", "--socket", socket(node), "--store", store, "--node", node] + extra, environment: changes)
        lock.withLock { daemons[node] = daemon }
        let path = socket(node)
        try await eventually("node \(node) accepts connections", timeout: .seconds(60)) {
            guard daemon.isRunning else { throw HarnessError("node \(node) exited: \(daemon.stderrSoFar())") }
            return RawSocketClient.canConnect(path)
        }
        return daemon
    }

    func daemon(_ node: String) -> HaulRun? { lock.withLock { daemons[node] } }

    /// Runs `haul ARGS` through node `node`'s daemon.
    func haul(_ node: String, _ arguments: [String], timeout: Duration = .seconds(60)) async throws -> HaulResult {
        try await sandbox.start(arguments + ["--socket", socket(node), "--no-autostart"], environment: ["HAUL_HOME": home(node)])
            .wait(timeout: timeout)
    }

    /// The session's tasks as `haul ls --json` through `node` shows them.
    func tasks(through node: String) async throws -> [[String: Any]] {
        let result = try await haul(node, ["ls", "--json"])
        guard result.exitCode == 0 else { throw HarnessError("haul ls through \(node): \(result.stderr)") }
        return try result.jsonEvents()
    }

    /// Waits (bounded by `timeout`) until every task `haul ls` through `node` shows is finished; the tasks then.
    func waitUntilAllFinished(_ count: Int, through node: String, timeout: Duration = .seconds(240)) async throws -> [[String: Any]] {
        var last: [[String: Any]] = []
        try await eventuallyAsync("\(count) tasks finished (last seen: \(Self.states(last)))\n\(logs())", timeout: timeout, step: .milliseconds(500)) {
            last = (try? await tasks(through: node)) ?? last
            return last.count == count && last.allSatisfy { $0["state"] as? String == "finished" }
        }
        return last
    }

    /// What each node logged so far (for a failure's message).
    func logs() -> String {
        lock.withLock { daemons }.sorted { $0.key < $1.key }.map { "--- node \($0.key):\n\($0.value.stderrSoFar().suffix(3_000))" }
            .joined(separator: "\n")
    }

    static func states(_ tasks: [[String: Any]]) -> String {
        Dictionary(grouping: tasks, by: { ($0["state"] as? String ?? "?") + "@" + ($0["node"] as? String ?? "-") })
            .map { "\($0.key): \($0.value.count)" }.sorted().joined(separator: ", ")
    }
}

/// A shared library that shifts the wall clock (CLOCK_REALTIME, gettimeofday, time) of the process it is preloaded
/// into by `HAUL_TEST_CLOCK_OFFSET` seconds, as a machine with a wrong clock has it; the monotonic clocks stay true.
/// Built with the toolchain's C compiler; `nil` when there is none.
enum ClockOffsetShim {
    static let source = """
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <stdlib.h>
        #include <time.h>
        #include <sys/time.h>
        static long offset(void) { const char *s = getenv("HAUL_TEST_CLOCK_OFFSET"); return s ? atol(s) : 0; }
        int clock_gettime(clockid_t id, struct timespec *ts) {
            static int (*real)(clockid_t, struct timespec *);
            if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
            int r = real(id, ts);
            if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) ts->tv_sec += offset();
            return r;
        }
        int gettimeofday(struct timeval *tv, void *tz) {
            static int (*real)(struct timeval *, void *);
            if (!real) real = (int (*)(struct timeval *, void *))dlsym(RTLD_NEXT, "gettimeofday");
            int r = real(tv, tz);
            if (r == 0) tv->tv_sec += offset();
            return r;
        }
        time_t time(time_t *t) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            if (t) *t = ts.tv_sec;
            return ts.tv_sec;
        }
        """

    /// A C compiler: the Swift toolchain's clang, else the system's cc.
    static let compiler: String? = {
        let swiftBin = ExternalTools.find("swift", also: ["/opt/swift/usr/bin"]).map { ($0 as NSString).deletingLastPathComponent }
        return ([swiftBin.map { $0 + "/clang" }] + [ExternalTools.find("cc", also: ["/usr/bin"])])
            .compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Builds the library into `folder`; its path.
    static func build(in folder: String) throws -> String {
        guard let compiler else { throw HarnessError("no C compiler (the Swift toolchain's clang, or cc) to build the clock shim") }
        let file = folder + "/clock-offset.c", library = folder + "/clock-offset.so"
        try Self.source.write(toFile: file, atomically: true, encoding: .utf8)
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: compiler)
        process.arguments = ["-shared", "-fPIC", "-O2", "-o", library, file, "-ldl"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw HarnessError("\(compiler) could not build the clock shim") }
        return library
    }
}
#endif
