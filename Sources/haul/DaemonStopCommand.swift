import ArgumentParser
import Foundation
import HaulKit

/// `haul daemon stop`: asks the running daemon to stop (SIGTERM: every download's progress is saved and the next
/// daemon resumes them), and waits until it has.
struct DaemonStopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop",
        abstract: "Stop the running haul daemon; its downloads are saved and resume with the next daemon.",
        discussion: HelpText.examples("haul daemon stop", "haul daemon stop --socket \"$XDG_RUNTIME_DIR/haul-test.sock\""))

    @Option(help: "The daemon's control socket (default: $HAUL_SOCKET, else $XDG_RUNTIME_DIR/haul/daemon.sock, else $HAUL_HOME/run/daemon.sock).")
    var socket: String?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let endpoint = DaemonEndpoint(socketPath: socket, autostart: false)
        let client: DaemonClient
        do {
            client = try await DaemonLauncher.connect(endpoint, home: HaulHome(environment: environment), client: "haul-cli")
        } catch let error as HaulError where error.kind == .network {
            // Nothing to stop is what was asked for.
            Reporter.printError("haul: \(error.message.components(separatedBy: ";").first ?? "no haul daemon is running")")
            return
        } catch {
            throw CLIFailure.exit(error)
        }
        let status: DaemonStatus.Result
        do {
            status = try await client.call(DaemonStatus.self, NoParameters())
        } catch is GarbledAnswer {
            throw CLIFailure.exit(HaulError(.server, "the haul daemon did not say its process id"))
        } catch {
            throw CLIFailure.exit(error)
        }
        await client.close()
        guard let pid = Int32(exactly: status.pid), pid > 1 else {
            throw CLIFailure.exit(HaulError(.server, "the haul daemon did not say its process id"))
        }
        guard kill(pid, SIGTERM) == 0 else {
            throw CLIFailure.exit(HaulError(.usage, "cannot stop the haul daemon (pid \(pid)): \(String(cString: strerror(errno)))"))
        }
        // Bounded: it saves each running download's progress, then exits.
        for _ in 0..<600 {
            if kill(pid, 0) != 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        if kill(pid, 0) == 0 {
            throw CLIFailure.exit(HaulError(.server, "the haul daemon (pid \(pid)) is still stopping after 30 s"))
        }
        Reporter.printError("haul: stopped the haul daemon (pid \(pid))")
    }
}
