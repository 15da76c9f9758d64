import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Connects to `haul daemon`, starting one (detached, logging to `HAUL_HOME/daemon.log`) when none answers.
package enum DaemonLauncher {
    /// How long to wait for a daemon that was just started.
    static let startTimeout: Duration = .seconds(15)
    /// A daemon started here exits after this long with nothing to do (`haul daemon --idle-exit`); the next
    /// command that needs one starts it again.
    public static let autostartIdleExit: Duration = .seconds(600)

    public static func connect(
        _ endpoint: DaemonEndpoint, home: HaulHome, environment: [String: String] = ProcessInfo.processInfo.environment,
        client: String = "haulkit", started: (@Sendable (_ pid: Int32, _ log: String) -> Void)? = nil
    ) async throws -> DaemonClient {
        let location = DaemonLocation(explicit: endpoint.socketPath, environment: environment, home: home)
        do {
            return try await DaemonClient.connect(socketPath: location.socketPath, client: client)
        } catch let error as HaulError where error.kind == .usage {
            // Another user's socket at the path: starting a daemon of ours would not take it over.
            throw error
        } catch {}
        guard endpoint.autostart else {
            throw HaulError(.network, "no haul daemon is running at \(location.socketPath)", reason: .daemonNotRunning(socketPath: location.socketPath))
        }
        guard let executable = executable(endpoint, environment: environment) else {
            throw HaulError(.usage, "cannot start haul daemon: no haul executable found; set HAUL_EXECUTABLE or put haul on PATH")
        }
        let log = home.path + "/daemon.log"
        try POSIX.makePrivateDirectories(home.path, root: home.path)
        // Bounded: a log past 4 MiB is kept as daemon.log.1 (replacing the one before) and a new one begins.
        if let size = POSIX.fileSize(log), size > 4 << 20 { _ = rename(log, log + ".1") }
        // The daemon serves the caller's HAUL_HOME, wherever the caller's configuration put it.
        var daemonEnvironment = environment
        daemonEnvironment["HAUL_HOME"] = home.path
        let arguments = ["daemon", "--socket", location.socketPath, "--idle-exit", String(Int(autostartIdleExit.seconds))]
        let pid = try spawnDetached(executable, arguments, environment: daemonEnvironment, log: log)
        let deadline = ContinuousClock.now + startTimeout
        var lastError: any Error = HaulError(.network, "the haul daemon did not start")
        while ContinuousClock.now < deadline {
            do {
                let connected = try await DaemonClient.connect(socketPath: location.socketPath, client: client)
                // Only when it is the daemon this call started: another client starting one at the same moment
                // may have won (ours then exits), and two "started" lines would name a daemon that is gone.
                if await connected.daemonPID == Int(pid) { started?(pid, log) }
                return connected
            } catch {
                lastError = error
            }
            // Another client may have started a daemon first: ours then exits (busy) while theirs answers.
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid, !(status & 0x7f == 0 && (status >> 8) & 0xff == 8) {
                throw HaulError(.network, "haul daemon exited at start; see \(log)" + lastLine(of: log))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HaulError(.network, "haul daemon did not answer within \(startTimeout) (\(lastError)); see \(log)")
    }

    private static func lastLine(of path: String) -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let line = text.split(separator: "\n").last else { return "" }
        return ": " + line
    }

    /// `endpoint.executable`, else `$HAUL_EXECUTABLE`, else `haul` beside this program, else `haul` on `PATH`.
    static func executable(_ endpoint: DaemonEndpoint, environment: [String: String]) -> String? {
        if let path = endpoint.executable ?? environment["HAUL_EXECUTABLE"], !path.isEmpty { return path }
        var candidates: [String] = []
        if let own = Bundle.main.executablePath {
            candidates.append((own as NSString).deletingLastPathComponent + "/haul")
        }
        for folder in (environment["PATH"] ?? "/usr/local/bin:/usr/bin").split(separator: ":") {
            candidates.append(folder + "/haul")
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts `executable` in its own session (no controlling terminal, immune to the caller's Ctrl-C),
    /// stdin from /dev/null, stdout and stderr appended to `log`.
    static func spawnDetached(_ executable: String, _ arguments: [String], environment: [String: String], log: String) throws -> pid_t {
        #if os(macOS) || os(Linux)
        do {
            return try POSIXSpawn.start(executable, arguments, environment: environment, output: .file(log), newSession: true)
        } catch {
            throw HaulError(.usage, "could not start \(executable) daemon: \(error.reason)")
        }
        #else
        throw HaulError(.usage, "this platform cannot start a haul daemon; start one with `haul daemon`")
        #endif
    }
}
