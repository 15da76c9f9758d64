import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, with the parts of Foundation's `Process` the tests use.
///
/// swift-corelibs-foundation's `Process.run()` (Swift 6.3.1) lists `/proc/self/fd` by copying each `dirent`'s whole
/// 256-byte name, which reads past glibc's buffer and crashes now and then once the test process has a thousand
/// descriptors open (swiftlang/swift-corelibs-foundation#5472); its exit is also only noticed by a handler that
/// needs a free dispatch thread, which two busy cooperative threads on a 2-core machine may not leave. This one lists
/// the descriptors through `FileManager`, and a thread of its own waits for the child's exit.
public final class ChildProcess: @unchecked Sendable {
    /// How the process ended.
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    public var executableURL: URL?
    public var arguments: [String] = []
    /// `nil`: this process's environment.
    public var environment: [String: String]?
    public var currentDirectoryURL: URL?
    /// A `FileHandle` or a `Pipe` (its reading end for stdin, its writing end for stdout and stderr); `nil` inherits.
    public var standardInput: Any?
    public var standardOutput: Any?
    public var standardError: Any?

    private let lock = NSLock()
    private var pid: pid_t = 0
    private var status: Int32?
    private var ended: ContinuousClock.Instant?

    public init() {}

    public var processIdentifier: Int32 { lock.withLock { pid } }

    /// Starts the process; throws when it cannot be started.
    public func run() throws {
        guard let executable = executableURL?.path else { throw ChildProcessError("no executable") }
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        var parentEnds: [FileHandle] = []
        for (target, value) in [(Int32(0), standardInput), (1, standardOutput), (2, standardError)] {
            if let handle = value as? FileHandle {
                posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target)
            } else if let pipe = value as? Pipe {
                let childEnd = target == 0 ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                posix_spawn_file_actions_adddup2(&actions, childEnd.fileDescriptor, target)
                parentEnds.append(childEnd)
            }
        }
        if let directory = currentDirectoryURL?.path {
            guard let addChdir = Self.addChdir else { throw ChildProcessError("posix_spawn cannot change directory here") }
            _ = addChdir(&actions, directory)
        }
        // As Foundation does: a process group of its own, and no descriptor of ours beyond the three given.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        Self.markCloseOnExec()

        let environment = self.environment ?? ProcessInfo.processInfo.environment
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw ChildProcessError("could not start \(executable): \(String(cString: strerror(result)))") }
        lock.withLock { pid = child }
        // The child has its ends of the pipes; the parent keeps only the other ones.
        for end in parentEnds { try? end.close() }
        // Reaped the moment it ends, as Foundation does: a zombie still answers `kill(pid, 0)`, and `haul daemon stop`
        // waits for the daemon's pid to be gone.
        let started = child
        Thread { [self] in
            var raw: Int32 = 0
            var reaped = waitpid(started, &raw, 0)
            while reaped < 0, errno == EINTR { reaped = waitpid(started, &raw, 0) }
            let code = reaped == started ? raw : 0
            let now = ContinuousClock.now
            lock.withLock {
                status = code
                ended = now
            }
        }.start()
    }

    /// When it ended, as seen by the thread that waits for it: how long something took to stop, without the delay
    /// of a test that polls on a busy cooperative pool.
    public var endedAt: ContinuousClock.Instant? { lock.withLock { ended } }

    /// Whether it still runs.
    public var isRunning: Bool {
        lock.withLock { pid > 0 && status == nil }
    }

    /// Blocks until it has ended (bounded by the tests' own timeouts on `isRunning`).
    public func waitUntilExit() {
        while isRunning { usleep(5_000) }
    }

    /// Sends SIGTERM.
    public func terminate() {
        let pid = processIdentifier
        if pid > 0 { kill(pid, SIGTERM) }
    }

    /// The exit status, or the signal that ended it.
    public var terminationStatus: Int32 {
        let raw = lock.withLock { status } ?? 0
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f
    }

    public var terminationReason: TerminationReason {
        let raw = lock.withLock { status } ?? 0
        return raw & 0x7f == 0 ? .exit : .uncaughtSignal
    }

    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29 and later), which Swift's Glibc module does not export.
    private static let addChdir: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32).self)
    }()

    /// Sets FD_CLOEXEC on every open descriptor above stderr, listed with `FileManager` (which reads each name
    /// by its length).
    private static func markCloseOnExec() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for name in names {
            guard let fd = Int32(name), fd > 2 else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}

/// Why a child process could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
