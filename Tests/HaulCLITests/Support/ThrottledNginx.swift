import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An nginx child process whose `/throttled/` location applies `limit_rate` to every request, ranged or not
/// (unlike `withNginx`'s `/slow/`, which leaves Range requests at full speed). Everything else is served unthrottled.
final class ThrottledNginx: @unchecked Sendable {
    let port: Int
    let prefix: String
    var documentRoot: String { prefix + "/www" }
    private let process: Process

    private init(port: Int, prefix: String, process: Process) {
        self.port = port
        self.prefix = prefix
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

    /// The access log, one line per request: `METHOD URI STATUS range="…" if_range="…" sent=N`.
    func accessLog() -> [String] {
        let text = (try? String(contentsOfFile: prefix + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    private func log(_ name: String) -> String {
        (try? String(contentsOfFile: prefix + "/" + name, encoding: .utf8)) ?? ""
    }

    private func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(3)
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let hardDeadline = ContinuousClock.now + .seconds(3)
        while process.isRunning, ContinuousClock.now < hardDeadline { usleep(10_000) }
    }

    private static func config(prefix: String, port: Int, rate: String) -> String {
        // nginx started as root switches its worker to an unprivileged user; keep it root to read the temp folder.
        let user = geteuid() == 0 ? "user root;\n" : ""
        return """
            \(user)worker_processes 1;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log warn;
            events { worker_connections 128; }
            http {
                types { }
                default_type application/octet-stream;
                log_format haul escape=none '$request_method $uri $status range="$http_range" if_range="$http_if_range" sent=$body_bytes_sent';
                access_log \(prefix)/access.log haul;
                client_body_temp_path \(prefix)/tmp-body;
                proxy_temp_path \(prefix)/tmp-proxy;
                fastcgi_temp_path \(prefix)/tmp-fastcgi;
                uwsgi_temp_path \(prefix)/tmp-uwsgi;
                scgi_temp_path \(prefix)/tmp-scgi;
                server {
                    listen 127.0.0.1:\(port);
                    root \(prefix)/www;
                    location /throttled/ { limit_rate \(rate); }
                }
            }

            """
    }

    /// Runs `body` with a fresh nginx (on a free port, retried when taken) that throttles `/throttled/` to `rate`
    /// per connection for every request; stopped (SIGTERM, then SIGKILL) when `body` returns or throws.
    static func with<T>(rate: String, _ body: (ThrottledNginx) async throws -> T) async throws -> T {
        let nginx = try ExternalTools.requireNginx()
        let prefix = NSTemporaryDirectory() + "haul-nginx-throttled-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: prefix + "/www", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let token = UUID().uuidString
        try writeBytes(Array(token.utf8), to: prefix + "/www/ready-\(token).txt")
        var failures: [String] = []
        for _ in 0..<5 {
            let port = try freeLoopbackPort()
            try config(prefix: prefix, port: port, rate: rate)
                .write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: nginx)
            process.arguments = ["-p", prefix + "/", "-c", prefix + "/nginx.conf", "-e", prefix + "/error.log", "-g", "daemon off;"]
            process.standardInput = FileHandle.nullDevice
            _ = FileManager.default.createFile(atPath: prefix + "/stderr.log", contents: nil)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle(forWritingAtPath: prefix + "/stderr.log")
            try process.run()
            let server = ThrottledNginx(port: port, prefix: prefix, process: process)
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
                try FileManager.default.removeItem(atPath: prefix + "/www/ready-\(token).txt")
                return try await body(server)
            }
            failures.append("port \(port): \(process.isRunning ? "no answer in 15 s" : "exited") \(server.log("stderr.log")) \(server.log("error.log"))")
        }
        throw HarnessError("throttled nginx did not start: \(failures.joined(separator: " | "))")
    }
}
