import Foundation
import HaulTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// nginx over HTTPS (and HTTP/2) with the certificates of ``TestCertificates``: one process
/// (`master_process off`, so SIGKILL leaves no worker behind) listening on 127.0.0.1 only, on one free
/// port per role, all serving `<prefix>/www`:
///
/// | role | port | what |
/// |---|---|---|
/// | ``Role/valid`` | `ssl http2` | the valid certificate; `/auth/` needs Basic authentication (``user``/``password``); `/auth/moved` (after authentication) answers 302 to ``Role/otherOrigin``'s `/file.bin` |
/// | ``Role/expired`` | `ssl http2` | the expired certificate |
/// | ``Role/wrongName`` | `ssl http2` | the certificate for `wrong.example` |
/// | ``Role/clientCertificate`` | `ssl http2` | the valid certificate; every request needs a client certificate signed by the CA (`ssl_verify_client on`), else 400 |
/// | ``Role/otherOrigin`` | `ssl http2` | the valid certificate: another origin (same host, another port) to redirect to |
/// | ``Role/http1Only`` | `ssl` | the valid certificate, HTTP/1.1 only (no `h2` by ALPN); an idle connection is closed after 2 s (`keepalive_timeout`) |
/// | ``Role/fewRequests`` | `ssl http2` | the valid certificate; GOAWAY after 3 requests on a connection (`keepalive_requests 3`) |
/// | ``Role/fewStreams`` | `ssl http2` | the valid certificate; 2 streams at once per connection (`http2_max_concurrent_streams`); `/crawl/` as on ``Role/valid`` |
/// | ``Role/plain`` | plain HTTP | readiness checks; `/slow/` and `/crawl/` as on ``Role/valid`` |
///
/// Under `/slow/` a fresh download (no `Range`, or `bytes=0-`) is sent at 256 KiB/s (a resume at full speed); under `/crawl/` every
/// request at 64 KiB/s (nginx's `limit_rate` is per request, so per HTTP/2 stream too).
///
/// `/file.bin` is ``file`` (random bytes; nginx sends a strong ETag and honours ranges); `/auth/file.bin` is
/// the same bytes behind authentication. Every request is logged, when it ends, in `access.log` (see ``LogEntry``):
/// the port, nginx's connection serial number, the protocol (`HTTP/1.1`, `HTTP/2.0`), the `Authorization` and
/// `If-Range` headers as received.
final class HTTPSNginx: @unchecked Sendable {
    enum Role: String, CaseIterable, Sendable {
        case valid, expired, wrongName, clientCertificate, otherOrigin, plain, http1Only, fewStreams, fewRequests
    }

    static var enabled: Bool { (ExternalTools.nginx != nil && TestCertificates.openssl != nil) || ExternalTools.inCI }

    /// The Basic authentication accepted under `/auth/`.
    static let user = "haul-user"
    static let password = "s3cret-Pass-71"

    let prefix: String
    let certificates: TestCertificates
    let ports: [Role: Int]
    /// The bytes of `/file.bin` and `/auth/file.bin`.
    let file: [UInt8]
    private let process: ChildProcess

    private init(prefix: String, certificates: TestCertificates, ports: [Role: Int], file: [UInt8], process: ChildProcess) {
        self.prefix = prefix
        self.certificates = certificates
        self.ports = ports
        self.file = file
        self.process = process
    }

    var documentRoot: String { prefix + "/www" }

    func port(_ role: Role) -> Int { ports[role]! }

    /// `https://127.0.0.1:PORT/path` (`http://` for ``Role/plain``).
    func url(_ path: String, _ role: Role = .valid) -> String {
        "\(role == .plain ? "http" : "https")://127.0.0.1:\(port(role))\(path)"
    }

    /// Writes a file to serve at `/<relativePath>` on every port.
    func put(_ relativePath: String, _ bytes: [UInt8]) throws {
        let path = documentRoot + "/" + relativePath
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try writeBytes(bytes, to: path)
    }

    /// One request as nginx logged it.
    struct LogEntry: CustomStringConvertible {
        var port: Int
        /// nginx's connection serial number: requests with the same number came on one connection.
        var connection: Int
        /// `HTTP/1.1` or `HTTP/2.0`.
        var protocolVersion: String
        var method: String
        var uri: String
        var status: Int
        /// The Range header, "" when absent.
        var range: String
        /// The Authorization header as received, "" when absent.
        var authorization: String
        var bytesSent: Int
        /// The If-Range header, "" when absent.
        var ifRange: String

        var description: String {
            "\(port) #\(connection) \(protocolVersion) \(method) \(uri) \(status) range=\(range) if-range=\(ifRange) auth=\(authorization.isEmpty ? "-" : "(set)") sent=\(bytesSent)"
        }
    }

    /// Every request logged so far (nginx writes a line when a request ends).
    func accessLog() -> [LogEntry] {
        let text = (try? String(contentsOfFile: prefix + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            // Tab-separated; `escape=json` turns any tab inside a value into `\t`.
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 10, let port = Int(fields[0]), let connection = Int(fields[1]),
                  let status = Int(fields[5]), let sent = Int(fields[8]) else { return nil }
            return LogEntry(
                port: port, connection: connection, protocolVersion: fields[2], method: fields[3], uri: fields[4],
                status: status, range: fields[6], authorization: fields[7], bytesSent: sent, ifRange: fields[9])
        }
    }

    /// The logged requests for `uri` on `role`'s port.
    func accessLog(_ role: Role, uri: String) -> [LogEntry] {
        accessLog().filter { $0.port == port(role) && $0.uri == uri }
    }

    /// Waits (at most 5 s) until at least `count` requests for `uri` on `role`'s port are logged, then returns them all.
    func loggedRequests(_ role: Role, uri: String, atLeast count: Int = 1) async -> [LogEntry] {
        try? await eventually("nginx logs \(count) requests for \(uri) on \(role)", timeout: .seconds(5)) {
            accessLog(role, uri: uri).count >= count
        }
        return accessLog(role, uri: uri)
    }

    func log(_ file: String) -> String { (try? String(contentsOfFile: prefix + "/" + file, encoding: .utf8)) ?? "" }

    /// SIGKILL (a child of the test process inherits a blocked SIGTERM); one process, so nothing is left behind.
    private func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
    }

    /// Runs `body` with a fresh server (new CA and certificates, `fileSize` random bytes at `/file.bin`),
    /// stopped and deleted when `body` returns or throws.
    static func with<T>(fileSize: Int = 8 << 20, seed: UInt64 = 1201, _ body: (HTTPSNginx) async throws -> T) async throws -> T {
        let nginx = try ExternalTools.requireNginx()
        let prefix = NSTemporaryDirectory() + "haul-https-nginx-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: prefix + "/www/auth", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let certificates = try TestCertificates.make(in: prefix + "/certs")
        try TestCertificates.htpasswdLine(user: user, password: password, in: prefix)
            .write(toFile: prefix + "/htpasswd", atomically: true, encoding: .utf8)
        let file = TestData.bytes(fileSize, seed: seed)
        try writeBytes(file, to: prefix + "/www/file.bin")
        try writeBytes(file, to: prefix + "/www/auth/file.bin")
        let token = UUID().uuidString
        try writeBytes(Array(token.utf8), to: prefix + "/www/ready-\(token).txt")

        var failures: [String] = []
        for _ in 0..<5 {
            var ports: [Role: Int] = [:]
            for role in Role.allCases {
                var port = try freeLoopbackPort()
                for _ in 0..<20 where ports.values.contains(port) { port = try freeLoopbackPort() }
                ports[role] = port
            }
            try configuration(prefix: prefix, certificates: certificates, ports: ports)
                .write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
            try? FileManager.default.removeItem(atPath: prefix + "/error.log")
            let process = try launchProcess(
                nginx, ["-p", prefix + "/", "-c", prefix + "/nginx.conf", "-e", prefix + "/error.log"], logsIn: prefix)
            let server = HTTPSNginx(prefix: prefix, certificates: certificates, ports: ports, file: file, process: process)
            defer { server.stop() }
            // One process binds every port before it serves any: the plain port answering means all are up.
            let deadline = ContinuousClock.now + .seconds(15)
            var ready = false
            while process.isRunning, ContinuousClock.now < deadline {
                if let response = rawHTTPGet(port: ports[.plain]!, path: "/ready-\(token).txt"), response.contains(token) {
                    ready = true
                    break
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            if ready { return try await body(server) }
            failures.append("ports \(ports.values.sorted()): \(process.isRunning ? "no answer in 15 s" : "exited") \(server.log("stderr.log")) \(server.log("error.log"))")
        }
        throw HarnessError("nginx (HTTPS) did not start: \(failures.joined(separator: " | "))")
    }

    /// nginx 1.22 (Debian 12): `listen … ssl http2` (the separate `http2 on;` came in 1.25.1).
    private static func configuration(prefix: String, certificates: TestCertificates, ports: [Role: Int]) -> String {
        let user = geteuid() == 0 ? "user root;\n" : ""
        func tls(_ role: Role) -> String { "listen 127.0.0.1:\(ports[role]!) ssl http2;" }
        return """
            \(user)master_process off;
            daemon off;
            worker_processes 1;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log warn;
            events { worker_connections 256; }
            http {
                types { }
                default_type application/octet-stream;
                log_format haul escape=json '$server_port\t$connection\t$server_protocol\t$request_method\t$uri\t$status\t$http_range\t$http_authorization\t$body_bytes_sent\t$http_if_range';
                access_log \(prefix)/access.log haul;
                # Under /slow/, a fresh download (no Range header, or the probe `bytes=0-`) crawls, so that one can be
                # interrupted part-way; its resume (a Range request) runs at full speed.
                map $http_range $haul_slow_rate { "" 256k; "bytes=0-" 256k; default 0; }
                client_body_temp_path \(prefix)/tmp-body;
                proxy_temp_path \(prefix)/tmp-proxy;
                fastcgi_temp_path \(prefix)/tmp-fastcgi;
                uwsgi_temp_path \(prefix)/tmp-uwsgi;
                scgi_temp_path \(prefix)/tmp-scgi;
                root \(prefix)/www;
                ssl_certificate \(certificates.serverCertificate);
                ssl_certificate_key \(certificates.serverKey);
                server {
                    listen 127.0.0.1:\(ports[.plain]!);
                    location /slow/ { limit_rate $haul_slow_rate; }
                    location /crawl/ { limit_rate 64k; }
                }
                server {
                    \(tls(.valid))
                    location /slow/ { limit_rate $haul_slow_rate; }
                    location /crawl/ { limit_rate 64k; }
                    location /auth/ {
                        auth_basic "haul";
                        auth_basic_user_file \(prefix)/htpasswd;
                    }
                    # `return` would answer before auth_basic runs (rewrite phase < access phase); try_files
                    # runs after it, so the redirect is given only to an authenticated request.
                    location = /auth/moved {
                        auth_basic "haul";
                        auth_basic_user_file \(prefix)/htpasswd;
                        try_files /nonexistent-\(UUID().uuidString) @moved;
                    }
                    location @moved {
                        return 302 https://127.0.0.1:\(ports[.otherOrigin]!)/file.bin;
                    }
                }
                server {
                    \(tls(.expired))
                    ssl_certificate \(certificates.expiredCertificate);
                    ssl_certificate_key \(certificates.expiredKey);
                }
                server {
                    \(tls(.wrongName))
                    ssl_certificate \(certificates.wrongNameCertificate);
                    ssl_certificate_key \(certificates.wrongNameKey);
                }
                server {
                    \(tls(.clientCertificate))
                    ssl_verify_client on;
                    ssl_client_certificate \(certificates.caCertificate);
                }
                server {
                    \(tls(.otherOrigin))
                }
                server {
                    listen 127.0.0.1:\(ports[.http1Only]!) ssl;
                    keepalive_timeout 2s;
                }
                server {
                    \(tls(.fewStreams))
                    http2_max_concurrent_streams 2;
                    location /crawl/ { limit_rate 64k; }
                }
                server {
                    \(tls(.fewRequests))
                    keepalive_requests 3;
                }
            }

            """
    }
}
