import NIOCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The user on the other end of a Unix socket connection: the daemon serves only its own user, and a client talks
/// only to a daemon of its own user (a socket another user made is never sent a task's credentials).
package enum PeerCredentials {
    #if os(Linux)
    /// `struct ucred` from <sys/socket.h>.
    private struct UCred: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }
    /// SO_PEERCRED in <asm-generic/socket.h> (x86-64 and arm64).
    private static let peerCredentialsOption: Int32 = 17
    #endif

    /// The peer's uid, or `nil` where the platform cannot tell (the socket's directory is then the only guard).
    package static func uid(of channel: Channel) -> EventLoopFuture<UInt32?> {
        #if os(Linux)
        guard let provider = channel as? SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
        let future: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(peerCredentialsOption))
        return future.map { Optional($0.uid) }
        #else
        return channel.eventLoop.makeSucceededFuture(nil)
        #endif
    }

    /// This process's effective uid.
    package static var ownUID: UInt32 { UInt32(geteuid()) }
}
