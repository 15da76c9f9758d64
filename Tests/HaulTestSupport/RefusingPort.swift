import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback port where nothing listens, held (bound, never listening) until `close()`: connections to it are
/// refused, and no other test's server can be given it meanwhile, as could happen to a port that was only free.
public final class RefusingPort: @unchecked Sendable {
    public let port: Int
    private var fd: Int32

    public init() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ChildProcessError("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let descriptor = fd
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else {
            closeDescriptor(fd)
            throw ChildProcessError("bind(127.0.0.1:0) failed: errno \(errno)")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// From now on the port listens and never accepts: the kernel completes every TCP handshake and nobody ever
    /// answers (a TLS peer that never says hello).
    public func listenSilently() throws {
        guard listen(fd, 64) == 0 else { throw ChildProcessError("listen() failed: errno \(errno)") }
    }

    public func close() {
        if fd >= 0 { closeDescriptor(fd) }
        fd = -1
    }

    deinit { close() }
}

/// `close(2)`, where a method named `close` would hide it.
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }
