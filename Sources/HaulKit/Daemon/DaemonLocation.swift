#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a daemon's socket and its companions live, and the checks that keep them private.
package struct DaemonLocation: Equatable, Sendable {
    public var socketPath: String
    /// Held (flock) by the running daemon: one daemon per socket.
    public var lockPath: String { socketPath + ".lock" }
    /// The running daemon's process id.
    public var pidPath: String { socketPath + ".pid" }
    public var directory: String { POSIX.directoryOf(socketPath) }

    public init(socketPath: String) { self.socketPath = socketPath }

    /// `explicit`, else `$HAUL_SOCKET`, else `$XDG_RUNTIME_DIR/haul/daemon.sock`, else `$HAUL_HOME/run/daemon.sock`.
    public init(explicit: String?, environment: [String: String], home: HaulHome) {
        if let explicit, !explicit.isEmpty {
            socketPath = explicit
        } else if let socket = environment["HAUL_SOCKET"], !socket.isEmpty {
            socketPath = socket
        } else if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            socketPath = runtime + "/haul/daemon.sock"
        } else {
            socketPath = home.path + "/run/daemon.sock"
        }
        socketPath = absolutePath(socketPath)
    }

    /// Creates the socket's directory with mode 0700 when missing; refuses one that others can enter.
    public func prepareDirectory() throws(HaulError) {
        // sockaddr_un holds 108 bytes on Linux (104 on Darwin), the terminating NUL included.
        guard socketPath.utf8.count < 104 else {
            throw HaulError(.usage, "the socket path \(socketPath) is too long for a Unix socket", reason: .unusableSocketPath(socketPath))
        }
        try POSIX.makeDirectories(POSIX.directoryOf(directory))
        if mkdir(directory, 0o700) != 0, errno != EEXIST { throw POSIX.error("creating", directory) }
        var info = stat()
        guard stat(directory, &info) == 0 else { throw POSIX.error("reading", directory) }
        guard info.st_uid == geteuid() else {
            throw HaulError(.usage, "the socket directory \(directory) belongs to another user", reason: .unusableSocketPath(socketPath))
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            let shown = String(info.st_mode & 0o7777, radix: 8)
            // A folder others may write (such as /tmp) is shared by design: never advise to close it.
            let advice = mode & 0o022 != 0 || info.st_mode & S_ISVTX != 0
                ? "put the socket in a folder only you can enter, such as the default under HAUL_HOME or $XDG_RUNTIME_DIR"
                : "run `chmod 700 \(directory)`, or put the socket in a folder only you can enter"
            throw HaulError(
                .usage, "the socket directory \(directory) is open to other users (mode \(shown)); \(advice)",
                reason: .unusableSocketPath(socketPath))
        }
    }
}
