import Foundation
import HaulCore
import NIOCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Looks up a host's addresses with the system's resolver (`getaddrinfo`, on a blocking-I/O thread), keeping
/// only IPv4 or IPv6 ones when asked (`-4`, `-6`). A literal address is returned as it is.
enum HostResolver {
    /// The addresses of `host` for `port`, in the resolver's order; throws when there is none (of `family`).
    static func addresses(of host: String, port: Int, family: IPFamily?) async throws -> [SocketAddress] {
        if let literal = IPAddress(host) {
            if let family, literal.isIPv4 != (family == .v4) {
                throw TransientFailure(reason: "\(host) is not an \(family == .v4 ? "IPv4" : "IPv6") address (-\(family == .v4 ? 4 : 6))")
            }
            return [try SocketAddress(ipAddress: literal.description, port: port)]
        }
        let found = try await BlockingIO.run { () -> [SocketAddress] in
            var hints = addrinfo()
            hints.ai_family = family == .v4 ? AF_INET : family == .v6 ? AF_INET6 : AF_UNSPEC
            #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            #else
            hints.ai_socktype = SOCK_STREAM
            #endif
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return [] }
            defer { freeaddrinfo(list) }
            var addresses: [SocketAddress] = []
            var entry: UnsafeMutablePointer<addrinfo>? = first
            while let current = entry, addresses.count < 16 {
                if let sockaddr = current.pointee.ai_addr {
                    switch Int32(current.pointee.ai_family) {
                    case AF_INET:
                        let address = sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                        addresses.append(SocketAddress(address, host: host))
                    case AF_INET6:
                        let address = sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                        addresses.append(SocketAddress(address, host: host))
                    default: break
                    }
                }
                entry = current.pointee.ai_next
            }
            return addresses
        }
        guard !found.isEmpty else {
            let kind = family.map { $0 == .v4 ? " IPv4" : " IPv6" } ?? ""
            var failure = TransientFailure(reason: "the host name could not be resolved to an\(kind) address (\(host))")
            failure.beforeConnecting = true
            throw failure
        }
        return found
    }
}
