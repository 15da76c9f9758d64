import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A listener on 127.0.0.1 that answers every connection with fixed bytes (anything, not necessarily HTTP)
/// after reading the request head, then closes: for answers no HTTP library would produce. Bounded: it
/// serves at most `maxConnections` and stops with ``stop()``.
public final class RawResponder: @unchecked Sendable {
    public let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var stopped = false
    private var served = 0

    public init(answer: [UInt8], maxConnections: Int = 50) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawResponderError("socket() failed") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 16) == 0 else {
            close(fd)
            throw RawResponderError("bind/listen on 127.0.0.1 failed")
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in self.serve(answer: answer, maxConnections: maxConnections) }
        thread.start()
    }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// How many connections were answered.
    public var connections: Int { lock.withLock { served } }

    private func serve(answer: [UInt8], maxConnections: Int) {
        for _ in 0..<maxConnections {
            let client = accept(fd, nil, nil)
            if client < 0 { return }
            if lock.withLock({ stopped }) { close(client); return }
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            // Read the request head (bounded), then answer and close.
            var head: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while head.count < 65536 {
                let n = recv(client, &buffer, buffer.count, 0)
                if n <= 0 { break }
                head += buffer[0..<n]
                if head.count >= 4, head.suffix(4) == [13, 10, 13, 10] { break }
            }
            _ = answer.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(client, Int32(SHUT_RDWR))
            close(client)
            lock.withLock { served += 1 }
        }
    }

    public func stop() {
        lock.withLock { stopped = true }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}

public struct RawResponderError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
