import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Real HTTP servers run as child processes: nginx (Range, ETag, `limit_rate`) and Python's http.server (no Range).
enum ExternalTools {
    static let inCI = !(ProcessInfo.processInfo.environment["CI"] ?? "").isEmpty
    static let nginx = find("nginx", also: ["/usr/sbin", "/usr/local/sbin", "/sbin"])
    static let python3 = find("python3", also: ["/usr/bin", "/usr/local/bin"])

    /// Tests needing a tool run when it is installed, and always in CI, where a missing tool is a failure, not a skip.
    /// The rule for every such test: `.enabled(if: tool != nil || ExternalTools.inCI, "needs TOOL (how to install it)")`,
    /// so a developer without the tool sees the test skipped with that reason, and CI (where scripts/test has installed
    /// everything) can never pass on a test it did not run. Tools scripts/test does not install (systemd-analyze) and
    /// what only root may do (mounting a tmpfs, acting as another user) are plain `.enabled(if:)` skips.
    static var nginxTestsEnabled: Bool { nginx != nil || inCI }
    static var pythonTestsEnabled: Bool { python3 != nil || inCI }

    static func requireNginx() throws -> String {
        guard let nginx else { throw HarnessError("nginx is not installed: install nginx-light (apt-get install nginx-light)") }
        return nginx
    }

    static func requirePython() throws -> String {
        guard let python3 else { throw HarnessError("python3 is not installed: install python3") }
        return python3
    }

    static func find(_ name: String, also extra: [String]) -> String? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return (path + extra).map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// A port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket() failed: errno \(errno)") }
    defer { close(fd) }
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { throw HarnessError("bind(127.0.0.1:0) failed: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// A bounded `GET path HTTP/1.0` on 127.0.0.1:port; the raw response, or nil when nothing answers.
func rawHTTPGet(port: Int, path: String) -> String? {
    rawExchange(port: port, request: "GET \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n\r\n", maxBytes: 65536, timeoutSeconds: 1)
        .map { String(decoding: $0, as: UTF8.self) }
}

/// Sends `request` on a new connection to 127.0.0.1:port and reads the answer until the server closes or
/// `maxBytes` (each send and receive bounded by `timeoutSeconds`); nil when nothing answers.
func rawExchange(port: Int, request text: String, maxBytes: Int, timeoutSeconds: Int) -> [UInt8]? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = loopbackAddress(port: port)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard connected else { return nil }
    let request = Array(text.utf8)
    guard send(fd, request, request.count, 0) == request.count else { return nil }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while response.count < maxBytes {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { break }
        response += buffer[0..<count]
    }
    return response
}

/// A server child process, stopped (SIGTERM, then SIGKILL) when its scope ends.
final class ExternalServer: @unchecked Sendable {
    let name: String
    let port: Int
    let prefix: String
    /// The folder the server serves files from.
    let documentRoot: String
    private let process: ChildProcess

    init(name: String, port: Int, prefix: String, documentRoot: String, process: ChildProcess) {
        self.name = name
        self.port = port
        self.prefix = prefix
        self.documentRoot = documentRoot
        self.process = process
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Writes a file to serve at `/<relativePath>`.
    func put(_ relativePath: String, _ bytes: [UInt8]) throws {
        let path = documentRoot + "/" + relativePath
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try writeBytes(bytes, to: path)
    }

    /// nginx's access log (format: `METHOD URI STATUS range="…" if_range="…" sent=N`).
    func accessLog() -> [String] {
        let text = (try? String(contentsOfFile: prefix + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    func log(_ file: String) -> String { (try? String(contentsOfFile: prefix + "/" + file, encoding: .utf8)) ?? "" }

    fileprivate func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(3)
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let hardDeadline = ContinuousClock.now + .seconds(3)
        while process.isRunning, ContinuousClock.now < hardDeadline { usleep(10_000) }
    }

    /// Starts the server on a free port (retrying when the port was taken) and waits until it answers
    /// a request for a per-start token file; the server is stopped when `body` returns or throws.
    static func with<T>(
        name: String,
        documentRoot: (String) -> String,
        launch: (_ prefix: String, _ port: Int) throws -> ChildProcess,
        _ body: (ExternalServer) async throws -> T
    ) async throws -> T {
        let prefix = NSTemporaryDirectory() + "haul-\(name)-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let root = documentRoot(prefix)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let token = UUID().uuidString
        try writeBytes(Array(token.utf8), to: root + "/ready-\(token).txt")
        var failures: [String] = []
        for _ in 0..<5 {
            let port = try freeLoopbackPort()
            let process = try launch(prefix, port)
            let server = ExternalServer(name: name, port: port, prefix: prefix, documentRoot: root, process: process)
            defer { server.stop() }
            let deadline = ContinuousClock.now + .seconds(15)
            var ready = false
            while process.isRunning, ContinuousClock.now < deadline {
                if let response = rawHTTPGet(port: port, path: "/ready-\(token).txt"), response.contains(token) {
                    ready = true
                    break
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            if ready {
                try FileManager.default.removeItem(atPath: root + "/ready-\(token).txt")
                return try await body(server)
            }
            failures.append("port \(port): \(process.isRunning ? "no answer in 15 s" : "exited") \(server.log("stderr.log")) \(server.log("error.log"))")
        }
        throw HarnessError("\(name) did not start: \(failures.joined(separator: " | "))")
    }
}

func launchProcess(_ executable: String, _ arguments: [String], logsIn prefix: String) throws -> ChildProcess {
    let process = ChildProcess()
    #if os(Linux)
    // A child inherits the signal mask of the test thread that starts it, which blocks SIGTERM (seen in
    // /proc/PID/status: SigBlk). A server that does not unblock it itself (apache2, lighttpd, Python) ignores
    // `stop()`'s SIGTERM and is SIGKILLed 3 s later; `env --default-signal` starts it with all signals unblocked.
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["--default-signal", executable] + arguments
    #else
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    #endif
    process.standardInput = FileHandle.nullDevice
    FileManager.default.createFile(atPath: prefix + "/stdout.log", contents: nil)
    FileManager.default.createFile(atPath: prefix + "/stderr.log", contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: prefix + "/stdout.log")
    process.standardError = FileHandle(forWritingAtPath: prefix + "/stderr.log")
    try process.run()
    return process
}

/// Runs `body` with a fresh nginx serving `<prefix>/www`. Under `/slow/`, whole-file requests are limited to
/// `slowRate` (`limit_rate`), so a download can be killed part-way; Range requests (resumes) run at full speed.
/// `/slow/` throttles only requests without a Range header (to `slowRate`); `/throttled/` throttles every
/// request, ranged or not, to `throttledRate`. Under `/ranges/`, a request whose `Range` starts at one of `slowStarts`
/// gets `slowRate`, every other one `throttledRate` (some segments crawl, the others finish first and take over).
func withNginx<T>(
    slowRate: String = "1m", throttledRate: String = "8m", slowStarts: [Int64] = [],
    _ body: (ExternalServer) async throws -> T
) async throws -> T {
    let nginx = try ExternalTools.requireNginx()
    return try await ExternalServer.with(name: "nginx", documentRoot: { $0 + "/www" }, launch: { prefix, port in
        // nginx started as root switches its worker to an unprivileged user; keep it root to read the temp folder.
        let user = geteuid() == 0 ? "user root;\n" : ""
        let config = """
            \(user)worker_processes 1;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log warn;
            events { worker_connections 128; }
            http {
                types { }
                default_type application/octet-stream;
                log_format haul escape=none '$request_method $uri $status range="$http_range" if_range="$http_if_range" sent=$body_bytes_sent';
                access_log \(prefix)/access.log haul;
                map $http_range $haul_slow_rate { "" \(slowRate); default 0; }
                map $http_range $haul_range_rate { \(slowStarts.isEmpty ? "" : "\"~^bytes=(\(slowStarts.map(String.init).joined(separator: "|")))-\" \(slowRate);") default \(throttledRate); }
                client_body_temp_path \(prefix)/tmp-body;
                proxy_temp_path \(prefix)/tmp-proxy;
                fastcgi_temp_path \(prefix)/tmp-fastcgi;
                uwsgi_temp_path \(prefix)/tmp-uwsgi;
                scgi_temp_path \(prefix)/tmp-scgi;
                server {
                    listen 127.0.0.1:\(port);
                    root \(prefix)/www;
                    location /slow/ { limit_rate $haul_slow_rate; }
                    location /throttled/ { limit_rate \(throttledRate); }
                    location /ranges/ { limit_rate $haul_range_rate; }
                }
            }

            """
        try config.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
        return try launchProcess(
            nginx, ["-p", prefix + "/", "-c", prefix + "/nginx.conf", "-e", prefix + "/error.log", "-g", "daemon off;"],
            logsIn: prefix)
    }, body)
}

/// Runs `body` with `python3 -m http.server` (which ignores Range) serving `<prefix>/files`.
func withPythonServer<T>(_ body: (ExternalServer) async throws -> T) async throws -> T {
    let python = try ExternalTools.requirePython()
    return try await ExternalServer.with(name: "python", documentRoot: { $0 + "/files" }, launch: { prefix, port in
        try launchProcess(
            python, ["-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", prefix + "/files"],
            logsIn: prefix)
    }, body)
}
