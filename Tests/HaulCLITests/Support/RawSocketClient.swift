#if os(Linux)
import Foundation
import Glibc

/// A minimal JSON-RPC client over a Unix domain socket for protocol tests: non-blocking socket, every wait
/// bounded by `poll()`. Sends raw bytes (so tests can send malformed or oversized frames) and reads
/// newline-delimited lines. Not thread-safe: use one client from one task or thread.
final class RawSocketClient {
    private(set) var fd: Int32
    private var buffer: [UInt8] = []
    /// Set once the peer closed the connection (EOF or ECONNRESET).
    private(set) var peerClosed = false

    /// Connects to `path`; retries only while the listen backlog is full (EAGAIN), until `timeout`.
    init(path: String, timeout: Duration = .seconds(5)) throws {
        fd = -1
        let deadline = ContinuousClock.now + timeout
        while true {
            let socketFD = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socketFD >= 0 else { throw HarnessError("socket(): \(Self.errorText())") }
            _ = fcntl(socketFD, F_SETFL, fcntl(socketFD, F_GETFL) | O_NONBLOCK)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
                Glibc.close(socketFD)
                throw HarnessError("socket path too long: \(path)")
            }
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            let result = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if result == 0 { fd = socketFD; return }
            let code = errno
            Glibc.close(socketFD)
            guard code == EAGAIN, ContinuousClock.now < deadline else {
                throw HarnessError("connect(\(path)): \(String(cString: strerror(code)))")
            }
            usleep(10_000)
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func disconnect() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Whether a connection to `path` succeeds right now.
    static func canConnect(_ path: String) -> Bool {
        (try? RawSocketClient(path: path, timeout: .zero)) != nil
    }

    /// Bytes received by the kernel and not yet read (FIONREAD).
    func pendingBytes() -> Int {
        var count: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &count) == 0 ? Int(count) + buffer.count : -1
    }

    // MARK: Sending

    /// Writes all of `bytes`; throws on timeout or when the peer has gone (EPIPE/ECONNRESET, no SIGPIPE).
    func send(_ bytes: [UInt8], timeout: Duration = .seconds(10)) throws {
        let deadline = ContinuousClock.now + timeout
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
            }
            if written > 0 { offset += written; continue }
            let code = errno
            guard written < 0, code == EAGAIN || code == EINTR else {
                throw HarnessError("send after \(offset) of \(bytes.count) bytes: \(String(cString: strerror(code)))")
            }
            try waitFor(Int16(POLLOUT), until: deadline, what: "writable (\(offset) of \(bytes.count) bytes sent)")
        }
    }

    func sendLine(_ line: String, timeout: Duration = .seconds(10)) throws {
        try send(Array((line + "\n").utf8), timeout: timeout)
    }

    /// Sends a JSON-RPC request (`id` nil: a notification).
    func sendRequest(_ method: String, _ params: [String: Any]? = nil, id: Any?) throws {
        var message: [String: Any] = ["jsonrpc": "2.0", "method": method]
        if let id { message["id"] = id }
        if let params { message["params"] = params }
        try sendLine(String(decoding: try JSONSerialization.data(withJSONObject: message), as: UTF8.self))
    }

    // MARK: Receiving

    /// The next line without its terminator; nil when the peer closed the connection. Throws on timeout.
    func readLine(timeout: Duration = .seconds(10)) throws -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            if peerClosed { return nil }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { buffer += chunk[..<count]; continue }
            let code = errno
            if count == 0 || code == ECONNRESET { peerClosed = true; continue }
            guard code == EAGAIN || code == EINTR else {
                throw HarnessError("recv: \(String(cString: strerror(code)))")
            }
            try waitFor(Int16(POLLIN), until: deadline, what: "a line (\(buffer.count) bytes buffered)")
        }
    }

    /// The next message as a JSON object; throws on timeout, close or a line that is not a JSON object.
    func readMessage(timeout: Duration = .seconds(10)) throws -> RawRPCMessage {
        guard let line = try readLine(timeout: timeout) else {
            throw HarnessError("the daemon closed the connection instead of answering")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw HarnessError("not a JSON object: \(line.prefix(300))")
        }
        return RawRPCMessage(object: object, line: line)
    }

    /// The next response (an object with `result` or `error`), skipping notifications.
    func readResponse(timeout: Duration = .seconds(10)) throws -> RawRPCMessage {
        let deadline = ContinuousClock.now + timeout
        for _ in 0..<1_000_000 {
            let message = try readMessage(timeout: deadline - .now)
            if message.isResponse { return message }
        }
        throw HarnessError("no response among a million notifications")
    }

    /// Sends a request and returns its response.
    func call(_ method: String, _ params: [String: Any]? = nil, id: Any, timeout: Duration = .seconds(10)) throws -> RawRPCMessage {
        try sendRequest(method, params, id: id)
        return try readResponse(timeout: timeout)
    }

    /// Reads and discards until the peer closes the connection; false when it is still open after `timeout`.
    func waitForClose(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard (try? readLine(timeout: deadline - .now)) != nil else { return peerClosed }
        }
        return peerClosed
    }

    private func waitFor(_ events: Int16, until deadline: ContinuousClock.Instant, what: String) throws {
        let remaining = deadline - .now
        guard remaining > .zero else { throw HarnessError("timed out waiting for \(what)") }
        var descriptor = pollfd(fd: fd, events: events, revents: 0)
        let milliseconds = Int32(min(max(remaining / .milliseconds(1), 1), 60_000))
        _ = poll(&descriptor, 1, milliseconds)
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}

// MARK: A received message

/// One JSON-RPC message as received, with accessors for the members the tests check.
struct RawRPCMessage: CustomStringConvertible {
    let object: [String: Any]
    let line: String

    subscript(key: String) -> Any? { object[key] }
    /// `error.code`, or nil for a success.
    var errorCode: Int? { ((object["error"] as? [String: Any])?["code"] as? NSNumber)?.intValue }
    var errorMessage: String { ((object["error"] as? [String: Any])?["message"] as? String) ?? "" }
    var result: [String: Any]? { object["result"] as? [String: Any] }
    var isResponse: Bool { object["result"] != nil || object["error"] != nil }
    /// The `id` rendered for comparison: `null`, `7`, `"a"`, or `absent`.
    var id: String { Self.idText(object["id"]) }
    var description: String { line.count > 400 ? String(line.prefix(400)) + "…" : line }

    static func idText(_ id: Any?) -> String {
        switch id {
        case nil: "absent"
        case is NSNull: "null"
        case let string as String: "\"\(string)\""
        case let number as NSNumber: number.stringValue
        default: "\(id!)"
        }
    }
}
#endif
