#if os(Linux)
import Foundation
import Glibc
import Testing

/// `haul daemon` as a subprocess for the tests of its limits: started on `<home>/run/daemon.sock` with extra
/// options, looked at through /proc, and stopped with SIGTERM within the two seconds docs/protocol.md promises.
enum DaemonHarness {
    static func socket(_ sandbox: Sandbox) -> String { sandbox.home + "/run/daemon.sock" }

    /// Starts `haul daemon --socket <home>/run/daemon.sock EXTRA` and waits until it accepts connections.
    static func start(_ sandbox: Sandbox, _ extra: [String] = []) async throws -> HaulRun {
        let path = socket(sandbox)
        let daemon = try sandbox.start(["daemon", "--socket", path] + extra)
        try await eventually("the daemon accepts connections on \(path)", timeout: .seconds(30)) {
            guard daemon.isRunning else { throw HarnessError("the daemon exited: \(daemon.stderrSoFar())") }
            return RawSocketClient.canConnect(path)
        }
        return daemon
    }

    /// The daemon still answers, then exits 0 within 2 s of SIGTERM (an idle client stays connected across it)
    /// and removes its socket.
    static func expectAnswersAndStopsWithinTwoSeconds(_ daemon: HaulRun, _ sandbox: Sandbox) async throws {
        let path = socket(sandbox)
        let client = try RawSocketClient(path: path)
        let hello = try client.call("daemon.hello", ["protocol": 1], id: "last")
        #expect(int(hello.result?["protocol"]) == 1, "the daemon no longer answers: \(hello)")
        let start = ContinuousClock.now
        daemon.signal(SIGTERM)
        let result = try await daemon.wait(timeout: .seconds(10))
        // Until the daemon ended, not until this test noticed (the cooperative pool may be busy for seconds).
        let took = (daemon.endedAt ?? ContinuousClock.now) - start
        #expect(took < .seconds(2), "SIGTERM took \(took)")
        #expect(result.exitCode == 0 && !result.signalled, "SIGTERM: exit \(result.exitCode): \(result.stderr.suffix(2_000))")
        #expect(!fileExists(path), "the socket must be removed on SIGTERM")
        client.disconnect()
    }

    /// The process's resident memory in bytes (VmRSS), or nil when it is gone.
    static func residentBytes(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        return kilobytes * 1_024
    }

    /// How many descriptors the process has open, or nil when it is gone.
    static func openDescriptors(_ pid: Int32) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }

    /// The sessions the daemon has open (`daemon.status`).
    static func openSessions(_ client: RawSocketClient, id: Any = "status") throws -> [String] {
        let status = try client.call("daemon.status", id: id)
        guard let sessions = status.result?["sessions"] as? [String] else { throw HarnessError("daemon.status: \(status)") }
        return sessions
    }

    /// The folders under `<home>/sessions`.
    static func sessionFolders(_ sandbox: Sandbox) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: sandbox.home + "/sessions")) ?? []).sorted()
    }

    static func int(_ value: Any?) -> Int? { (value as? NSNumber)?.intValue }
}

extension RawSocketClient {
    /// Bytes this client sent that the daemon has not read yet (SIOCOUTQ), or -1.
    func unreadByPeer() -> Int {
        var count: Int32 = 0
        return ioctl(fd, UInt(TIOCOUTQ), &count) == 0 ? Int(count) : -1
    }
}

extension RawRPCMessage {
    /// `error.data`, for a failure.
    var errorData: [String: Any]? { (object["error"] as? [String: Any])?["data"] as? [String: Any] }
    /// The error says the session does not exist.
    var isNoSuchSession: Bool { errorCode == -32001 && errorData?["reason"] as? String == "noSuchSession" }
}
#endif
