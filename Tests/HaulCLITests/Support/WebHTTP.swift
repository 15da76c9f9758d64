#if os(Linux)
import Foundation
import Glibc

/// One HTTP answer as read off the wire by ``WebHTTP``.
struct WebReply: CustomStringConvertible {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: String

    /// The first value of a header (names compared without case).
    func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    func has(_ name: String) -> Bool { header(name) != nil }

    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] }

    var description: String { "HTTP \(status) \(headers.map { "\($0.name): \($0.value)" }) \(body.prefix(500))" }
}

/// A minimal HTTP/1.1 client over a TCP socket to 127.0.0.1, for the dashboard's security tests: the test
/// writes every header itself (a wrong `Host`, a foreign `Origin`), which an ordinary client would not allow.
/// Every read is bounded by `poll()`.
final class WebHTTP {
    let port: Int
    private var fd: Int32 = -1
    private var raw: [UInt8] = []

    init(port: Int) throws {
        self.port = port
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket(): \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let text = String(cString: strerror(errno))
            Glibc.close(fd)
            // deinit runs for an initialised object whose init throws: without this, it closed the number again,
            // by then another thread's descriptor (a child's log file: posix_spawn then failed with EBADF).
            fd = -1
            throw HarnessError("connect(127.0.0.1:\(port)): \(text)")
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Sends a request (`Host: 127.0.0.1:PORT` unless `headers` give one; `Connection: close`).
    func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: String? = nil) throws {
        var lines = ["\(method) \(target) HTTP/1.1"]
        if !headers.contains(where: { $0.0.lowercased() == "host" }) { lines.append("Host: 127.0.0.1:\(port)") }
        for (name, value) in headers { lines.append("\(name): \(value)") }
        if let body { lines.append("Content-Length: \(body.utf8.count)") }
        lines.append("Connection: close")
        let bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")).utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw HarnessError("send(): \(String(cString: strerror(errno)))") }
            sent += count
        }
    }

    /// Sends `bytes` as they are (a request trickled byte by byte, or never finished).
    func sendRaw(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw HarnessError("send(): \(String(cString: strerror(errno)))") }
            sent += count
        }
    }

    /// Whether the server closed the connection within `timeout` (reading, and dropping, what it sent).
    func closedByServer(within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard (try? readSome(timeout: .milliseconds(100))) == true else { return true }
        }
        return false
    }

    /// Reads what arrives within `timeout`; false once the server closed.
    @discardableResult
    func readSome(timeout: Duration) throws -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&descriptor, 1, max(1, milliseconds)) > 0 else { return true }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { return false }
        raw += buffer[0..<count]
        return true
    }

    /// The answer so far: head parsed, body de-chunked as far as it has arrived; nil before the head is complete.
    func replySoFar() -> WebReply? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...max(0, raw.count - 4)).first(where: { raw.count >= 4 && Array(raw[$0..<($0 + 4)]) == separator }) else { return nil }
        let head = String(decoding: raw[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        let headers = head.dropFirst().compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body = Array(raw[(end + 4)...])
        if headers.contains(where: { $0.name.lowercased() == "transfer-encoding" && $0.value.lowercased().contains("chunked") }) {
            body = Self.dechunked(body)
        }
        return WebReply(status: status, headers: headers, body: String(decoding: body, as: UTF8.self))
    }

    /// Reads until `condition` holds of the answer so far (or the server closes); bounded by `timeout`.
    func read(timeout: Duration = .seconds(20), until condition: (WebReply) -> Bool) throws -> WebReply {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let reply = replySoFar(), condition(reply) { return reply }
            guard ContinuousClock.now < deadline else {
                throw HarnessError("timed out reading from the dashboard; so far: \(replySoFar().map(String.init(describing:)) ?? String(decoding: raw, as: UTF8.self))")
            }
            if try !readSome(timeout: .milliseconds(200)) {
                guard let reply = replySoFar() else { throw HarnessError("the dashboard closed before answering") }
                return reply
            }
        }
    }

    /// The whole answer (the server closes after it: `Connection: close`).
    func readAll(timeout: Duration = .seconds(20)) throws -> WebReply {
        try read(timeout: timeout) { _ in false }
    }

    private static func dechunked(_ bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = [], index = 0
        while let lineEnd = (index..<max(index, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }) {
            guard let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self), radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            guard start + size <= bytes.count else { result += bytes[start...]; break }
            result += bytes[start..<(start + size)]
            index = start + size + 2
        }
        return result
    }

    /// One request on a new connection, answered in full.
    static func call(_ port: Int, _ method: String, _ target: String, headers: [(String, String)] = [], body: String? = nil) throws -> WebReply {
        let client = try WebHTTP(port: port)
        defer { client.close() }
        try client.send(method, target, headers: headers, body: body)
        return try client.readAll()
    }
}
#endif
