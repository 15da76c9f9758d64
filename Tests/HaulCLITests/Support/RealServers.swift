import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real servers of the compatibility suite, each run as a child process on a free 127.0.0.1 port with a
/// configuration written into its own temporary folder:
///
/// - apache2: strong ETag + Last-Modified, honours If-Range; `/slow/` is throttled by mod_ratelimit.
/// - lighttpd: strong ETag + Last-Modified, honours If-Range; `/slow/` is throttled by `connection.kbytes-per-second`.
/// - Twisted (`python3 -m twisted web`): Last-Modified only, no ETag, and it IGNORES If-Range; no throttling.
///
/// Apache and lighttpd throttle each connection under `/slow/` to `slowRate` bytes per second; Twisted cannot,
/// so a test that must kill a download part-way there slows haul down with `--limit-rate` instead.
enum RealServer: String, CaseIterable, Sendable, CustomStringConvertible {
    case apache
    case lighttpd
    case twisted

    var description: String { rawValue }

    /// Bytes per second per connection under `/slow/` (apache and lighttpd).
    static let slowRate = 512 * 1024

    /// Whether the server is installed on this machine.
    var installed: Bool {
        switch self {
        case .apache: return RealServerTools.apache2 != nil
        case .lighttpd: return RealServerTools.lighttpd != nil
        case .twisted: return RealServerTools.twistedPython != nil
        }
    }

    /// Tests against the server run when it is installed, and always in CI, where a missing server is a failure.
    var testsEnabled: Bool { installed || ExternalTools.inCI }

    /// Apache and lighttpd send a strong ETag; Twisted sends Last-Modified only.
    var sendsEntityTag: Bool { self != .twisted }

    /// Apache and lighttpd answer a Range request whose If-Range does not match with the whole file (200);
    /// Twisted ignores If-Range and sends the range (206).
    var honoursIfRange: Bool { self != .twisted }

    /// Whether the server can throttle `/slow/` itself (else the test uses haul's `--limit-rate`).
    var throttles: Bool { self != .twisted }

    /// Whether the server writes an access log (`METHOD URI STATUS range="…" if_range="…" sent=N`, `-` for a missing header).
    var hasAccessLog: Bool { self != .twisted }

    /// Runs `body` with a fresh server of this kind serving `server.documentRoot`; the server is stopped
    /// (SIGTERM, then SIGKILL) when `body` returns or throws.
    func with<T>(_ body: (ExternalServer) async throws -> T) async throws -> T {
        switch self {
        case .apache: return try await withApache(body)
        case .lighttpd: return try await withLighttpd(body)
        case .twisted: return try await withTwisted(body)
        }
    }
}

enum RealServerTools {
    static let apache2 = ExternalTools.find("apache2", also: ["/usr/sbin", "/usr/local/sbin", "/sbin"])
    static let lighttpd = ExternalTools.find("lighttpd", also: ["/usr/sbin", "/usr/local/sbin", "/sbin"])
    /// Where Debian keeps Apache's loadable modules.
    static let apacheModules = ["/usr/lib/apache2/modules", "/usr/lib64/httpd/modules", "/usr/libexec/apache2"]
        .first { fileExists($0 + "/mod_ratelimit.so") }
    /// The `python3` on PATH, when it can import Twisted's web server (`pip install twisted`).
    static let twistedPython = pythonImporting("twisted.web.static")

    /// The `python3` on PATH, when it can import `module` (bounded: 20 s).
    static func pythonImporting(_ module: String) -> String? {
        guard let python = ExternalTools.python3 else { return nil }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", "import " + module]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let deadline = ContinuousClock.now + .seconds(20)
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            return nil
        }
        return process.terminationStatus == 0 ? python : nil
    }
}

/// Runs `body` with a fresh Apache serving `<prefix>/www`: `apache2 -X -f CONFIG`, one process (with mpm_event's
/// threads, so segments still get parallel connections) that stays in the foreground and leaves no worker
/// processes behind, even if it has to be SIGKILLed.
func withApache<T>(_ body: (ExternalServer) async throws -> T) async throws -> T {
    guard let apache2 = RealServerTools.apache2 else {
        throw HarnessError("apache2 is not installed: install apache2 (apt-get install apache2)")
    }
    guard let modules = RealServerTools.apacheModules else {
        throw HarnessError("Apache's modules (mod_ratelimit.so) are not in /usr/lib/apache2/modules: install apache2")
    }
    return try await ExternalServer.with(name: "apache", documentRoot: { $0 + "/www" }, launch: { prefix, port in
        // Apache refuses to serve as root: it switches to nobody once listening, so the folders must be readable by all.
        let user = geteuid() == 0 ? "User nobody\nGroup #65534\n" : ""
        try makeWorldReadable(prefix)
        try makeWorldReadable(prefix + "/www")
        for name in try FileManager.default.contentsOfDirectory(atPath: prefix + "/www") {
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: prefix + "/www/" + name)
        }
        let config = """
            ServerRoot "\(prefix)"
            ServerName 127.0.0.1
            Listen 127.0.0.1:\(port)
            \(user)PidFile "\(prefix)/apache.pid"
            DefaultRuntimeDir "\(prefix)"
            Mutex file:\(prefix)
            ErrorLog "\(prefix)/error.log"
            LogLevel warn
            LoadModule mpm_event_module "\(modules)/mod_mpm_event.so"
            LoadModule authz_core_module "\(modules)/mod_authz_core.so"
            LoadModule env_module "\(modules)/mod_env.so"
            LoadModule ratelimit_module "\(modules)/mod_ratelimit.so"
            LogFormat "%m %U %>s range=\\"%{Range}i\\" if_range=\\"%{If-Range}i\\" sent=%B" haul
            CustomLog "\(prefix)/access.log" haul
            DocumentRoot "\(prefix)/www"
            <Directory "\(prefix)/www">
                Require all granted
            </Directory>
            <Location "/slow/">
                SetOutputFilter RATE_LIMIT
                SetEnv rate-limit \(RealServer.slowRate / 1024)
            </Location>

            """
        try config.write(toFile: prefix + "/apache.conf", atomically: true, encoding: .utf8)
        return try launchProcess(apache2, ["-X", "-f", prefix + "/apache.conf"], logsIn: prefix)
    }, body)
}

/// Runs `body` with a fresh lighttpd (`lighttpd -D -f CONFIG`) serving `<prefix>/www`.
func withLighttpd<T>(_ body: (ExternalServer) async throws -> T) async throws -> T {
    guard let lighttpd = RealServerTools.lighttpd else {
        throw HarnessError("lighttpd is not installed: install lighttpd (apt-get install lighttpd)")
    }
    return try await ExternalServer.with(name: "lighttpd", documentRoot: { $0 + "/www" }, launch: { prefix, port in
        // Without a content type lighttpd sends neither ETag nor Last-Modified. The stat cache is off, so a
        // file replaced on disk gets new validators at once (the "simple" cache keeps them for up to a second).
        // The access log goes through a pipe: lighttpd writes piped log lines at once, but buffers those for
        // a file for up to 4 seconds.
        let config = """
            server.modules = ( "mod_accesslog" )
            server.bind = "127.0.0.1"
            server.port = \(port)
            server.document-root = "\(prefix)/www"
            server.errorlog = "\(prefix)/error.log"
            server.stat-cache-engine = "disable"
            mimetype.assign = ( "" => "application/octet-stream" )
            accesslog.filename = "|exec /bin/cat >> '\(prefix)/access.log'"
            accesslog.format = "%m %U %>s range=\\"%{Range}i\\" if_range=\\"%{If-Range}i\\" sent=%b"
            $HTTP["url"] =~ "^/slow/" {
                connection.kbytes-per-second = \(RealServer.slowRate / 1024)
            }

            """
        try config.write(toFile: prefix + "/lighttpd.conf", atomically: true, encoding: .utf8)
        return try launchProcess(lighttpd, ["-D", "-f", prefix + "/lighttpd.conf"], logsIn: prefix)
    }, body)
}

/// Runs `body` with a fresh Twisted web server (`python3 -m twisted web --path DIR`) serving `<prefix>/files`.
func withTwisted<T>(_ body: (ExternalServer) async throws -> T) async throws -> T {
    guard let python = RealServerTools.twistedPython else {
        throw HarnessError("Twisted is not installed for \(ExternalTools.python3 ?? "python3"): python3 -m pip install twisted")
    }
    return try await ExternalServer.with(name: "twisted", documentRoot: { $0 + "/files" }, launch: { prefix, port in
        try launchProcess(
            python, ["-m", "twisted", "web", "--listen", "tcp:\(port):interface=127.0.0.1", "--path", prefix + "/files"],
            logsIn: prefix)
    }, body)
}

private func makeWorldReadable(_ directory: String) throws {
    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory)
}

extension ExternalServer {
    /// Writes `bytes` to serve at `/<relativePath>`, readable by all, with modification time `modified`.
    /// Writing in place (same inode) keeps the test honest: only content and mtime say the file changed.
    func put(_ relativePath: String, _ bytes: [UInt8], modified: Date) throws {
        try put(relativePath, bytes)
        let path = documentRoot + "/" + relativePath
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o644, .modificationDate: modified], ofItemAtPath: path)
        var folder = (path as NSString).deletingLastPathComponent
        while folder.count > documentRoot.count {
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder)
            folder = (folder as NSString).deletingLastPathComponent
        }
    }

    /// The access log lines for `GET uri` (apache and lighttpd write one line per finished request).
    func accessLog(uri: String) -> [String] { accessLog().filter { $0.hasPrefix("GET \(uri) ") } }

    /// One bounded request with extra header lines; nil when nothing answers.
    func request(_ path: String, headers: [String] = []) -> RawHTTPResponse? {
        rawHTTPRequest(port: port, path: path, headers: headers)
    }
}

/// A response read by ``rawHTTPRequest(port:path:headers:maxBytes:)``.
struct RawHTTPResponse {
    var status: Int
    /// Header names lowercased.
    var headers: [String: String]
    var body: [UInt8]
}

/// `GET path HTTP/1.1` with `headers` and `Connection: close` on 127.0.0.1:port, reading at most `maxBytes`
/// (bounded by 2 s timeouts). HTTP/1.1, as lighttpd ignores Range in HTTP/1.0 requests.
func rawHTTPRequest(port: Int, path: String, headers: [String] = [], maxBytes: Int = 1 << 20) -> RawHTTPResponse? {
    let lines = ["GET \(path) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close"] + headers
    guard let response = rawExchange(port: port, request: lines.joined(separator: "\r\n") + "\r\n\r\n", maxBytes: maxBytes, timeoutSeconds: 2) else {
        return nil
    }
    let separator: [UInt8] = [13, 10, 13, 10]
    guard let end = (0..<max(0, response.count - 3)).first(where: { Array(response[$0..<($0 + 4)]) == separator }) else {
        return nil
    }
    let head = String(decoding: response[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
    let statusWords = head.first?.split(separator: " ") ?? []
    guard statusWords.count >= 2, let status = Int(statusWords[1]) else { return nil }
    var fields: [String: String] = [:]
    for line in head.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return RawHTTPResponse(status: status, headers: fields, body: Array(response[(end + 4)...]))
}

/// Runs `body` with a fresh caddy (`caddy file-server`) serving `<prefix>/www`; its state (autosaved config, data)
/// goes under `<prefix>` instead of the user's home.
func withCaddy<T>(_ body: (ExternalServer) async throws -> T) async throws -> T {
    guard let caddy = RealServerTools.caddy else {
        throw HarnessError("caddy is not installed: install caddy (apt-get install caddy)")
    }
    return try await ExternalServer.with(name: "caddy", documentRoot: { $0 + "/www" }, launch: { prefix, port in
        try launchProcess("/usr/bin/env", [
            "HOME=\(prefix)", "XDG_DATA_HOME=\(prefix)/data", "XDG_CONFIG_HOME=\(prefix)/config",
            caddy, "file-server", "--root", prefix + "/www", "--listen", "127.0.0.1:\(port)",
        ], logsIn: prefix)
    }, body)
}

extension RealServerTools {
    static let caddy = ExternalTools.find("caddy", also: ["/usr/bin", "/usr/local/bin"])
}
