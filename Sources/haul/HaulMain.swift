import ArgumentParser
import Foundation
import HaulKit

@main
struct HaulMain {
    static func main() async {
        // A list over thousands of hosts, or a daemon's clients and downloads, need more than 1,024 descriptors.
        DescriptorLimit.raise()
        // Read before any thread runs: the daemon narrows the umask for a moment while it creates its socket.
        DownloadFileMode.prepare()
        await runCommandLine()
    }

    /// Off the main actor, as a command's `run()` is: the command parsed here is the one that runs.
    nonisolated static func runCommandLine() async {
        let arguments: [String]
        let given = Array(CommandLine.arguments.dropFirst())
        // Read: from now on other users' `ps` sees no password, token or credential header in them.
        ArgumentSecrets.blank()
        switch FlagCompatibility.rewrite(given) {
        case .arguments(let rewritten):
            arguments = rewritten
        case .refused(let line):
            Reporter.printError("haul: error: \(ArgumentSecrets.hiding(given, in: line))")
            exit(ExitStatus.usage)
        }
        var command: any ParsableCommand
        do {
            command = try UsageError.parsing { try HaulCommand.parseAsRoot(arguments) }
        } catch let error as UsageError {
            Reporter.printError("haul: error: \(ArgumentSecrets.hiding(given, in: error.line))")
            exit(ExitStatus.usage)
        } catch {
            // --help, --version, a completion script.
            print(HelpText.unshouted(HaulCommand.fullMessage(for: error)))
            exit(0)
        }
        do {
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let code as ExitCode {
            exit(code.rawValue)
        } catch {
            let code = HaulCommand.exitCode(for: error)
            let message = HaulCommand.fullMessage(for: error)
            if code == .success {
                print(HelpText.unshouted(message))
                exit(0)
            }
            Reporter.write(message + "\n", to: STDERR_FILENO)
            exit(ExitStatus.usage)
        }
    }
}

struct HaulCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haul",
        abstract: "A download manager that never loses progress.",
        discussion: HelpText.examples(
            "haul get https://example.com/big.iso     # run it again to resume",
            "haul get -i urls.txt -j 4 --dir downloads",
            "haul add https://example.com/big.iso     # the daemon downloads it",
            "haul help get",
            "haul --generate-completion-script bash   # also zsh, fish"
        ) + "\n\n" + ExitStatus.help,
        version: HaulVersion.string,
        subcommands: [
            GetCommand.self, AddCommand.self, ListCommand.self, PauseCommand.self, ResumeCommand.self, PriorityCommand.self, RemoveCommand.self,
            WatchCommand.self, WaitCommand.self, SessionCommand.self, WebCommand.self, DaemonCommand.self, FleetCommand.self, CleanCommand.self,
        ]
    )
}

/// Exit codes, one per class of failure (documented in the README).
enum ExitStatus {
    static let success: Int32 = 0
    static let usage: Int32 = 2
    static let network: Int32 = 3
    static let httpStatus: Int32 = 4
    static let checksum: Int32 = 5
    static let fileSystem: Int32 = 6
    static let server: Int32 = 7
    static let busy: Int32 = 8
    static let interrupted: Int32 = 130
    /// The reader of standard output closed it (`| head`): as a process stopped by SIGPIPE is seen by a shell.
    static let outputClosed: Int32 = 141

    /// The exit code of `error`: by its kind, except a standard output closed by its reader.
    static func code(for error: HaulError) -> Int32 {
        error.reason == .outputClosed ? outputClosed : code(for: error.kind)
    }

    static func code(for kind: HaulError.Kind) -> Int32 {
        switch kind.known {
        case nil: return 1    // a class of a newer daemon's
        case .usage: return usage
        case .network: return network
        case .httpStatus: return httpStatus
        case .checksum: return checksum
        case .fileSystem: return fileSystem
        case .server: return server
        case .busy: return busy
        case .interrupted: return interrupted
        }
    }

    static let help = """
        Exit codes: 0 success, 2 bad usage or input, 3 network error, 4 HTTP error status, \
        5 checksum mismatch, 6 file system error, 7 unusable server response, 8 download already running, \
        130 interrupted (state saved; run the same command again to resume), \
        141 standard output closed by its reader (haul get URL -o - | head), as after SIGPIPE.
        """
}
