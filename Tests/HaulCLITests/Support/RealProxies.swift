import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// squid (Debian's) with its stock `CONNECT` rule, started on a free loopback port: `http_access deny CONNECT
/// !SSL_ports`, where SSL_ports is 443 and whatever ports a test adds (as an administrator adds a TLS port).
/// Plain `http://` requests must reach it in absolute form; a tunnel to any other port is refused with 403. With
/// `basicAuth`, every request needs that user and password (squid's `basic_ncsa_auth`), else 407.
final class Squid: @unchecked Sendable {
    static let binary = ["/usr/sbin/squid", "/usr/bin/squid"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var enabled: Bool { binary != nil || ExternalTools.inCI }

    let port: Int
    let folder: String
    private let process: ChildProcess

    /// Starts squid allowing `CONNECT` to 443 and `tlsPorts`, answering only 127.0.0.1; with `basicAuth`, only to
    /// that user and password.
    init(tlsPorts: [Int] = [], basicAuth: (user: String, password: String)? = nil) throws {
        guard let binary = Self.binary else { throw HarnessError("squid is not installed: apt-get install squid") }
        folder = NSTemporaryDirectory() + "haul-squid-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var authentication = ""
        var owned = [folder, folder + "/squid.conf"]
        if let basicAuth {
            let helper = ["/usr/lib/squid/basic_ncsa_auth", "/usr/lib64/squid/basic_ncsa_auth"].first { FileManager.default.isExecutableFile(atPath: $0) }
            guard let helper else { throw HarnessError("squid's basic_ncsa_auth helper is missing") }
            try TestCertificates.htpasswdLine(user: basicAuth.user, password: basicAuth.password, in: folder)
                .write(toFile: folder + "/passwd", atomically: true, encoding: .utf8)
            owned.append(folder + "/passwd")
            authentication = """
                auth_param basic program \(helper) \(folder)/passwd
                auth_param basic realm haul
                acl authenticated proxy_auth REQUIRED
                http_access deny !authenticated

                """
        }
        var failures: [String] = []
        for _ in 0..<3 {
            let port = try freeLoopbackPort()
            let config = """
                http_port 127.0.0.1:\(port)
                acl SSL_ports port \((([443] + tlsPorts).map(String.init)).joined(separator: " "))
                acl CONNECT method CONNECT
                http_access deny CONNECT !SSL_ports
                \(authentication)http_access allow localhost
                http_access deny all
                cache deny all
                pid_filename \(folder)/squid.pid
                access_log stdio:\(folder)/access.log
                cache_log \(folder)/cache.log
                coredump_dir \(folder)
                shutdown_lifetime 1 seconds
                pinger_enable off
                via off
                forwarded_for delete

                """
            try config.write(toFile: folder + "/squid.conf", atomically: true, encoding: .utf8)
            // Started as root, squid drops to user `proxy`: its folder must be that user's.
            if geteuid() == 0, let proxyUser = getpwnam("proxy") {
                for path in owned { chown(path, proxyUser.pointee.pw_uid, proxyUser.pointee.pw_gid) }
            }
            let process = try launchProcess(binary, ["-N", "-f", folder + "/squid.conf"], logsIn: folder)
            for _ in 0..<500 where process.isRunning {
                // squid answers a request that is not absolute with its own error page: it is up.
                if rawHTTPGet(port: port, path: "/") != nil {
                    self.port = port
                    self.process = process
                    return
                }
                usleep(20_000)
            }
            failures.append("port \(port): \(process.isRunning ? "no answer in 10 s" : "exited") \(Self.read(folder, "cache.log").suffix(400))")
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
        throw HarnessError("squid did not start: \(failures.joined(separator: " | "))")
    }

    func log(_ name: String) -> String { Self.read(folder, name) }

    static func read(_ folder: String, _ name: String) -> String {
        (try? String(contentsOfFile: folder + "/" + name, encoding: .utf8)) ?? ""
    }

    /// The access log's requests as `METHOD URL STATUS` (squid's native format: time, elapsed, client,
    /// result/status, bytes, method, URL, …).
    func requests() -> [String] {
        log("access.log").split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 7, let status = fields[3].split(separator: "/").last else { return nil }
            return "\(fields[5]) \(fields[6]) \(status)"
        }
    }

    /// Waits (at most 5 s) until squid has logged at least `count` requests, then returns them.
    func loggedRequests(atLeast count: Int) async -> [String] {
        try? await eventually("squid logs \(count) requests", timeout: .seconds(5)) { self.requests().count >= count }
        return requests()
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// dante (`danted`, Debian's dante-server): SOCKS5 on a free loopback port, without authentication, or with
/// user name and password (RFC 1929) checked against a local user's password.
final class Dante: @unchecked Sendable {
    static let binary = ["/usr/sbin/danted", "/usr/bin/danted"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var enabled: Bool { binary != nil || ExternalTools.inCI }

    let port: Int
    let folder: String
    private let process: ChildProcess

    /// Starts danted; `authenticated`: clients must log in as a local user (`socksmethod: username`).
    init(authenticated: Bool) throws {
        guard let binary = Self.binary else { throw HarnessError("danted is not installed: apt-get install dante-server") }
        folder = NSTemporaryDirectory() + "haul-dante-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var failures: [String] = []
        for _ in 0..<3 {
            let port = try freeLoopbackPort()
            let users = geteuid() == 0 ? "user.privileged: root\nuser.unprivileged: nobody\n" : ""
            let config = """
                logoutput: \(folder)/danted.log
                internal: 127.0.0.1 port = \(port)
                external: 127.0.0.1
                socksmethod: \(authenticated ? "username" : "none")
                clientmethod: none
                \(users)client pass {
                    from: 127.0.0.0/8 to: 0.0.0.0/0
                    log: error
                }
                socks pass {
                    from: 127.0.0.0/8 to: 0.0.0.0/0
                    log: connect error
                }

                """
            try config.write(toFile: folder + "/danted.conf", atomically: true, encoding: .utf8)
            let process = try launchProcess(binary, ["-f", folder + "/danted.conf", "-p", folder + "/danted.pid"], logsIn: folder)
            for _ in 0..<250 where process.isRunning {
                // A greeting offering "no authentication": dante answers with its method (or refuses it).
                if let answer = rawExchange(port: port, request: "\u{5}\u{1}\u{0}", maxBytes: 2, timeoutSeconds: 1), answer.first == 5 {
                    self.port = port
                    self.process = process
                    return
                }
                usleep(20_000)
            }
            failures.append("port \(port): \(process.isRunning ? "no answer in 5 s" : "exited") \(Squid.read(folder, "danted.log").suffix(400)) \(Squid.read(folder, "stderr.log").suffix(400))")
            Self.stop(process)
        }
        try? FileManager.default.removeItem(atPath: folder)
        throw HarnessError("danted did not start: \(failures.joined(separator: " | "))")
    }

    func log(_ name: String) -> String { Squid.read(folder, name) }

    /// The proxy URL, with `user` and `password` when given.
    func url(scheme: String = "socks5", user: String? = nil, password: String? = nil) -> String {
        let userinfo = user.map { "\($0):\(password ?? "")@" } ?? ""
        return "\(scheme)://\(userinfo)127.0.0.1:\(port)"
    }

    /// SIGTERM (the mother process stops its children), then SIGKILL.
    private static func stop(_ process: ChildProcess) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(3)
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    func stop() {
        Self.stop(process)
        try? FileManager.default.removeItem(atPath: folder)
    }
}
