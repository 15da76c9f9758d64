import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A private PostgreSQL server for the tests: `initdb` into a temporary folder as an unprivileged user (the server
/// refuses root: as root it runs as the `postgres` account Debian's package makes), listening on a loopback port with
/// its socket in that folder, and stopped at the end. A watchdog shell stops it too should the test process die.
///
/// ``shared()`` is one server for the whole test process (each test takes a database of its own); a test that stops
/// and starts its server (``stop()``, ``start()``) makes its own with ``make()``.
public final class PostgresServer: @unchecked Sendable {
    /// Whether CI is set: a missing PostgreSQL is then a failure, not a skip.
    public static let inCI = !(ProcessInfo.processInfo.environment["CI"] ?? "").isEmpty
    /// The folder of `initdb` and `postgres` (the highest version installed), or `nil`.
    public static let binaries: String? = {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() {
            let bin = "\(root)/\(version)/bin"
            if ["initdb", "postgres", "pg_isready", "psql"].allSatisfy({ FileManager.default.isExecutableFile(atPath: bin + "/" + $0) }) {
                return bin
            }
        }
        return nil
    }()
    /// Tests that need PostgreSQL run when it is installed, and always in CI (where scripts/test installs it).
    public static var testsEnabled: Bool { binaries != nil || inCI }
    /// Why such a test is skipped.
    public static let missing = "needs PostgreSQL: apt-get install postgresql (scripts/test does)"

    /// The loopback port it listens on.
    public private(set) var port: Int
    /// Its temporary folder: `data` (the cluster), `run` (its socket), `log`.
    public let folder: String
    /// The role `haul`'s password, when the server asks for one (``make(password:)``).
    public let password: String?
    private let lock = NSLock()
    private var watchdog: ChildProcess?
    private var databases = 0

    private init(folder: String, port: Int, password: String?) {
        self.folder = folder
        self.port = port
        self.password = password
    }

    // MARK: One server for the test process

    nonisolated(unsafe) private static var sharedServer: PostgresServer?
    private static let sharedLock = NSLock()

    /// The test process's server, started on first use and stopped when the process exits.
    public static func shared() throws -> PostgresServer {
        try sharedLock.withLock {
            if let sharedServer { return sharedServer }
            let server = try make()
            sharedServer = server
            atexit { PostgresServer.stopShared() }
            return server
        }
    }

    private static func stopShared() {
        sharedLock.withLock {
            sharedServer?.close()
            sharedServer = nil
        }
    }

    // MARK: A server of one's own

    /// A new server in a new folder, started. With `password`, every connection must give it (SCRAM), else the
    /// server trusts loopback.
    public static func make(password: String? = nil) throws -> PostgresServer {
        guard let binaries else { throw ChildProcessError("PostgreSQL is not installed: apt-get install postgresql") }
        let folder = NSTemporaryDirectory() + "haul-pg-" + UUID().uuidString.prefix(8).lowercased()
        let manager = FileManager.default
        try manager.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        for name in ["data", "run"] {
            try manager.createDirectory(atPath: folder + "/" + name, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        }
        _ = manager.createFile(atPath: folder + "/log", contents: nil, attributes: [.posixPermissions: 0o600])
        if getuid() == 0 {
            guard let account = getpwnam("postgres") else {
                throw ChildProcessError("running as root, PostgreSQL needs the postgres account (Debian's postgresql package makes it)")
            }
            for path in [folder + "/data", folder + "/run", folder + "/log"] { chown(path, account.pointee.pw_uid, account.pointee.pw_gid) }
        }
        var initdbArguments = [binaries + "/initdb", "-D", folder + "/data", "-U", "haul", "-E", "UTF8", "--locale=C", "--no-sync"]
        if let password {
            let file = folder + "/run/password"
            _ = manager.createFile(atPath: file, contents: Data(password.utf8), attributes: [.posixPermissions: 0o600])
            if getuid() == 0, let account = getpwnam("postgres") { chown(file, account.pointee.pw_uid, account.pointee.pw_gid) }
            initdbArguments += ["-A", "scram-sha-256", "--pwfile=" + file]
        } else {
            initdbArguments += ["-A", "trust"]
        }
        let initdb = try run(asServer(initdbArguments))
        guard initdb.status == 0 else { throw ChildProcessError("initdb failed: \(initdb.output)") }
        // A port that was free a moment ago may be taken meanwhile: try a few.
        var lastError: (any Error)?
        for _ in 0..<5 {
            let server = PostgresServer(folder: folder, port: try freePort(), password: password)
            do {
                try server.start()
                return server
            } catch {
                lastError = error
            }
        }
        throw lastError ?? ChildProcessError("PostgreSQL did not start")
    }

    /// Starts the server (again, after ``stop()``: same folder, same port) and waits until it accepts connections.
    public func start() throws {
        guard let binaries = Self.binaries else { throw ChildProcessError("PostgreSQL is not installed") }
        let server = Self.asServer([
            binaries + "/postgres", "-D", folder + "/data", "-p", String(port), "-c", "listen_addresses=127.0.0.1",
            "-c", "unix_socket_directories=\(folder)/run", "-c", "fsync=off", "-c", "full_page_writes=off",
            "-c", "max_connections=300", "-c", "shared_buffers=16MB",
        ]).map(Self.quoted).joined(separator: " ")
        // The watchdog: stops the server when asked (SIGTERM) or when the test process is gone.
        let script = """
            \(server) >>\(Self.quoted(folder + "/log")) 2>&1 &
            child=$!
            trap 'kill -INT $child 2>/dev/null; wait $child; exit 0' TERM INT
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 1; done
            kill -INT $child 2>/dev/null
            wait $child
            """
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        lock.withLock { watchdog = process }
        // Bounded: 60 checks, a quarter of a second apart.
        for _ in 0..<240 {
            if (try? Self.run([binaries + "/pg_isready", "-q", "-h", "127.0.0.1", "-p", String(port), "-U", "haul", "-d", "postgres"]))?.status == 0 {
                return
            }
            if !process.isRunning {
                break
            }
            usleep(250_000)
        }
        stop()
        throw ChildProcessError("PostgreSQL did not start on port \(port): \(log.suffix(2000))")
    }

    /// Stops the server (a fast shutdown: clients are disconnected, everything committed is kept) and waits.
    public func stop() {
        guard let process = lock.withLock({ () -> ChildProcess? in
            defer { watchdog = nil }
            return watchdog
        }) else { return }
        process.terminate()
        // Bounded: 30 s, then the server itself is killed.
        for _ in 0..<300 where process.isRunning { usleep(100_000) }
        if process.isRunning, let pid = serverPID { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    /// Stops the server and removes its folder.
    public func close() {
        stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    deinit { close() }

    /// A new empty database; its URL (`postgres://haul@127.0.0.1:PORT/NAME`, no password: the server trusts loopback).
    public func createDatabase() throws -> String {
        let name = lock.withLock { () -> String in
            databases += 1
            return "haul_test_\(databases)_\(UUID().uuidString.prefix(8).lowercased())"
        }
        _ = try psql("CREATE DATABASE \(name)", database: "postgres")
        return url(database: name)
    }

    /// The URL of `database` on this server.
    public func url(database: String) -> String { "postgres://haul@127.0.0.1:\(port)/\(database)" }

    /// Runs `sql` with psql in `database`; what it printed (unaligned, tuples only).
    @discardableResult
    public func psql(_ sql: String, database: String) throws -> String {
        guard let binaries = Self.binaries else { throw ChildProcessError("PostgreSQL is not installed") }
        let result = try Self.run([
            binaries + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U", "haul",
            "-d", database, "-c", sql,
        ], password: password)
        guard result.status == 0 else { throw ChildProcessError("psql failed: \(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The server's log so far.
    public var log: String {
        (try? String(contentsOfFile: folder + "/log", encoding: .utf8)) ?? ""
    }

    /// The postmaster's process id, from its pid file.
    private var serverPID: pid_t? {
        guard let text = try? String(contentsOfFile: folder + "/data/postmaster.pid", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    // MARK: Helpers

    /// `command` as the server's account: as root, through setpriv as `postgres` (no fork: the pid is the server's).
    private static func asServer(_ command: [String]) -> [String] {
        guard getuid() == 0 else { return command }
        return ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--clear-groups", "--"] + command
    }

    private static func quoted(_ word: String) -> String {
        "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Runs a command to its end (with `PGPASSWORD` set to `password`, if any); its exit status and output (stdout
    /// and stderr together).
    private static func run(_ command: [String], password: String? = nil) throws -> (status: Int32, output: String) {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        if let password {
            var environment = ProcessInfo.processInfo.environment
            environment["PGPASSWORD"] = password
            process.environment = environment
        }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A loopback port nothing listens on (bound, read and released).
    public static func freePort() throws -> Int {
        let held = try RefusingPort()
        defer { held.close() }
        return held.port
    }
}
