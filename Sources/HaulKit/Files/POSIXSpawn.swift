import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

#if os(macOS) || os(Linux)
/// Starts programs with `posix_spawn`, not Foundation's `Process`: swift-corelibs-foundation's `Process.run()` (Swift
/// 6.3.1) can crash in a process with about a thousand descriptors open, as a daemon running many downloads has.
enum POSIXSpawn {
    /// Why `posix_spawn` refused (strerror's words).
    struct SpawnError: Error {
        var reason: String
    }

    /// Where the child's standard output and error go.
    enum Output {
        /// This process's own.
        case inherited
        /// A descriptor of this process (duplicated onto the child's stdout; stderr stays this process's).
        case descriptor(Int32)
        /// Appended to a file (created 0600), stdout and stderr both.
        case file(String)
    }

    /// Starts `executable` with `arguments` and exactly `environment`, stdin from /dev/null, and no other descriptor
    /// of this process (a pipe inherited by a child would keep whoever reads it waiting for the child too).
    /// `newSession`: no controlling terminal, immune to the caller's Ctrl-C.
    static func start(
        _ executable: String, _ arguments: [String], environment: [String: String], output: Output, newSession: Bool
    ) throws(SpawnError) -> pid_t {
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        var attributes: posix_spawnattr_t?
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        switch output {
        case .inherited: break
        case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, 1)
        case .file(let path):
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        // The child starts with no signal blocked and SIGPIPE (which NIO ignores in this process) and the stop
        // signals at their defaults: a hook's `yes | head` ends as in a shell, and SIGTERM stops what it runs.
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        let signalFlags = Int32(POSIX_SPAWN_SETSIGMASK) | Int32(POSIX_SPAWN_SETSIGDEF)
        #if os(Linux)
        let setSession: Int32 = newSession ? 0x80 : 0  // POSIX_SPAWN_SETSID in <spawn.h>
        markCloseOnExec()
        let flags = setSession | signalFlags
        #else
        let flags = (newSession ? Int32(POSIX_SPAWN_SETSID) : 0) | Int32(POSIX_SPAWN_CLOEXEC_DEFAULT) | signalFlags
        #endif
        posix_spawnattr_setflags(&attributes, Int16(flags))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw SpawnError(reason: String(cString: strerror(result))) }
        return pid
    }

    #if os(Linux)
    /// Sets FD_CLOEXEC on every open descriptor above stderr (glibc's closefrom action is not visible to Swift).
    private static func markCloseOnExec() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for name in names {
            guard let fd = Int32(name), fd > 2 else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
    #endif
}
#endif
