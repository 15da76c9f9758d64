import ArgumentParser
import Foundation
import HaulKit
import Logging

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download URLs; run the same command again to resume an interrupted download.",
        discussion: HelpText.examples(
            "haul get https://example.com/big.iso     # Ctrl-C, then again to resume",
            "haul get https://example.com/big.iso -o /tmp/big.iso --checksum sha256:HEX",
            "haul get https://example.com/a.iso https://example.com/b.iso -j 2",
            "haul get -i urls.txt --dir downloads --limit-rate 2M --segments 4",
            "haul get https://example.com/data.json -o - | jq .",
            "haul get https://example.com/big.iso --json   # JSON events on stdout"
        ) + "\n\n" + ExitStatus.help
    )

    @OptionGroup var list: URLList

    @Option(name: [.customShort("j"), .customLong("jobs"), .customLong("max-concurrent-downloads"), .customLong("parallel-max")], parsing: .unconditional,
            help: "Downloads at once when several URLs are given (aria2c's --max-concurrent-downloads, curl's --parallel-max).")
    var jobs = 3

    @Option(name: [.customLong("stall-timeout"), .customLong("read-timeout")], parsing: .unconditional,
            help: "Seconds without data after which a transfer is retried (default 30; 0: no limit; wget's --read-timeout).")
    var stallTimeoutOption: Seconds?

    @Option(name: .customLong("connect-timeout"), parsing: .unconditional, help: "Seconds to wait for a connection (default 30; 0: no limit).")
    var connectTimeoutOption: Seconds?

    @Option(name: [.customShort("T"), .customLong("timeout")], parsing: .unconditional, help: "Seconds for both: --connect-timeout and --stall-timeout (wget's -T, aria2c's --timeout; 0: no limit).")
    var timeout: Seconds?

    @Option(name: .customLong("max-time"), parsing: .unconditional, help: "Stop after this many seconds in all, with several URLs too (the state is kept: run again to resume); exit 3. 0: no limit.")
    var maxTimeOption: Seconds?

    @Option(name: .customLong("on-complete"), help: "A shell command run after each download finishes or fails, with HAUL_TASK_* set; haul waits for it (up to 2 minutes).")
    var onComplete: String?

    @OptionGroup(title: HelpText.fileOptions)
    var file: FileOptions

    @OptionGroup(title: HelpText.connectionOptions)
    var connection: ConnectionOptions

    @Flag(name: [.short, .long, .customLong("silent")], help: "Print only errors.")
    var quiet = false

    @Flag(help: "Print one JSON event per line on stdout.")
    var json = false

    @Flag(name: .shortAndLong, help: "Log every request, response and resume decision to stderr; with several URLs, a line for every file, also on a terminal.")
    var verbose = false

    /// `--verbose`'s log: every request, answer and resume decision, on standard error.
    static func verboseLogger() -> Logger {
        var logger = Logger(label: "haul", factory: { _ in LineLogHandler(.verbose, level: .debug) })
        logger.logLevel = .debug
        return logger
    }

    /// Seconds without data after which a transfer is retried: --stall-timeout, else -T, else 30; 0 for none.
    var stallTimeout: Seconds { (stallTimeoutOption ?? timeout ?? Seconds(30)).zeroMeaningNoLimit }
    /// Seconds to wait for a connection: --connect-timeout, else -T, else 30; 0 for none.
    var connectTimeout: Seconds { (connectTimeoutOption ?? timeout ?? Seconds(30)).zeroMeaningNoLimit }
    /// `--max-time`: `nil` without one, and for 0 (no limit, as curl's `-m 0`).
    var maxTime: Seconds? { maxTimeOption.flatMap { $0.value == 0 ? nil : $0 } }

    /// The command's own ranges and the flags that cannot go together, checked before anything runs (the file
    /// options check theirs in ``FileOptions/validate()``).
    func validate() throws {
        guard (1...64).contains(jobs) else { throw InputError("-j must be between 1 and 64") }
        if quiet, json { throw InputError("use either --quiet or --json, not both") }
        if json, let output = file.output, FileOptions.standardOutputNames.contains(output) {
            throw InputError("-o - writes the file to standard output, where --json would write too; use one of them")
        }
        // 0 is no limit, as curl's -m 0 and --connect-timeout 0 and wget's -T 0 are.
        let times = [("--stall-timeout", stallTimeoutOption), ("--connect-timeout", connectTimeoutOption), ("-T/--timeout", timeout), ("--max-time", maxTimeOption)]
        for case let (name, seconds?) in times where !(seconds.value >= 0 && seconds.value <= 86_400) {
            throw InputError("\(name) must be 0 (no limit) or a number of seconds up to 86400")
        }
    }

    func run() async throws {
        let allURLs: [InputList.Entry]
        do {
            allURLs = try await collectURLs()
        } catch let error as InputError {
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.usage)
        }
        if allURLs.count != 1 || list.inputFile != nil {
            try await BatchGet(command: self, arguments: allURLs, list: list.inputFile).run()
            return
        }
        let options: DownloadOptions
        do {
            options = try makeOptions(entry: allURLs[0])
        } catch let error as InputError {
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.usage)
        }
        connection.warnIfInsecure()
        // The live line needs the terminal to itself: not with --verbose's log lines.
        let mode: Reporter.Mode = json ? .json : quiet ? .quiet : (LiveArea.isLiveTerminal() && !verbose ? .terminal : .plain)
        let reporter = Reporter(mode: mode, url: Redaction.url(options.url))
        var configuration = TransferEngine.Configuration()
        configuration.stallTimeout = stallTimeout.duration
        configuration.connectTimeout = connectTimeout.duration
        configuration.maxConnectionsPerHost = file.connectionsPerHost
        if verbose { configuration.logger = Self.verboseLogger() }
        let home = HaulHome(environment: ProcessInfo.processInfo.environment)
        do {
            try home.prepare()
        } catch {
            reporter.failed(error, exitCode: ExitStatus.code(for: error.kind))
            throw ExitCode(ExitStatus.code(for: error.kind))
        }
        let engine = TransferEngine(home: home, configuration: configuration)

        let download = Task { try await engine.download(options, events: { reporter.handle($0) }) }
        let signals = SignalForwarder { download.cancel() }
        let deadline = maxTime.map { seconds in
            Task {
                try await Task.sleep(for: seconds.duration)
                download.cancel()
            }
        }
        var outcome = await download.result
        deadline?.cancel()
        signals.stop()
        // A stream (`-o -`) keeps nothing to resume: stopped, it ends with the cancellation itself.
        if case .failure(let error) = outcome, error is CancellationError {
            let what = options.destination == .standardOutput
                ? "stopped; what standard output received is not resumed: run the same command again to fetch it whole" : "stopped"
            // Its own advice: "run the same command again to resume" would promise what a stream cannot do.
            outcome = .failure(HaulError(.interrupted, what, reason: .other))
        }
        if case .failure(let error as HaulError) = outcome, error.kind == .interrupted, let maxTime,
           (try? await deadline?.value) != nil {
            outcome = .failure(HaulError(.network, "stopped after --max-time \(maxTime.value.formatted()) s; \(error.line)"))
        }
        try? await engine.shutdown()
        var failure: HaulError?
        if case .failure(let error) = outcome {
            let shown = error as? HaulError ?? HaulError(.network, String(describing: error))
            reporter.failed(shown, exitCode: ExitStatus.code(for: shown))
            failure = shown
        }
        if case .success(let result) = outcome, quiet, file.output == nil, !file.remoteName, Self.standardOutputIsRedirected() {
            // curl's `curl -fsSL URL | sh` run as `haul get`: the body went to a file, and the pipe got nothing. Said
            // once, even under -s, since a silent empty pipe looks like success.
            Reporter.printError("haul: note: saved \(result.path): haul saves to a file, as wget does; for standard output, as curl writes it, add -o -")
        }
        // After the outcome is shown, as its last step: the command may move or open the file.
        if let hook = OnComplete(onComplete, toStandardError: json || options.destination == .standardOutput),
           let task = OnComplete.task(options, outcome) {
            hook.run(for: task, session: nil)
            await hook.waitForAll()
        }
        if let failure { throw ExitCode(ExitStatus.code(for: failure)) }
    }

    /// Whether standard output goes to a pipe or a file (`| sh`, `> out`) rather than a terminal or nowhere: where
    /// curl's users expect the body.
    static func standardOutputIsRedirected() -> Bool {
        var info = stat()
        guard fstat(STDOUT_FILENO, &info) == 0 else { return false }
        let kind = info.st_mode & S_IFMT
        return kind == S_IFIFO || kind == S_IFREG || kind == S_IFSOCK
    }

    /// The URLs from the arguments and `-i`.
    /// The URLs given as arguments; with `-i`, its list is read by the batch, a part at a time (``BatchGet``).
    func collectURLs() async throws -> [InputList.Entry] {
        let all = list.inputFile == nil ? try await list.collect() : list.urls.map { InputList.Entry(url: $0, line: 0) }
        try await file.loadNetrc()
        if list.inputFile == nil { try file.checkCount(all.count, remoteName: file.remoteName, arguments: list.urls) }
        return all
    }

    /// The spec of the download of `url`, from the file and connection flags. Checks every input before any
    /// network or file activity. `refusingExisting: false` (a batch) leaves an existing file to the batch's session:
    /// its own finished download of that URL to that file is done, and anything else is refused when the download
    /// starts, as for every entry of a list. Only the session knows its tasks; the records of single downloads
    /// checked here do not (a list's `out=` file, saved by the batch, was refused on the next run).
    func makeSpec(entry: InputList.Entry, cookies: GivenCookies, refusingExisting: Bool = true) throws -> DownloadSpec {
        var spec = try file.makeSpec(entry: entry, cookies: cookies)
        try connection.apply(to: &spec)
        // A destination the download would refuse is refused now, before any connection (exit 2).
        do {
            try TransferEngine.checkDestination(DownloadOptions(spec), home: HaulHome(environment: ProcessEnvironment.values))
        } catch {
            // A link on the way of a list's dir= or out= fails that entry when it runs, as the session finds it then.
            switch error.reason.which {
            case .destinationExists, .destinationNotAFile, .listedThroughLink: if !refusingExisting { return spec }
            default: break
            }
            throw InputError(error.line)
        }
        return spec
    }

    /// The specs of several URLs (a batch): the first made and checked whole, the others from it with their own URL,
    /// credentials and proxy check. The same flags and destination folder hold for all of them.
    /// Makes the specs of a batch's entries, one at a time: the first made whole, the others from it.
    func specMaker() throws -> SpecMaker { SpecMaker(command: self, cookies: try file.givenCookies()) }

    /// The specs of a batch's entries, made one at a time (a list may be too long to hold its specs): the first whole,
    /// the others as copies of it with their own URL and what depends on it (``FileOptions/makeSpec(entry:like:cookies:)``).
    final class SpecMaker {
        let command: GetCommand
        let cookies: GivenCookies
        private var template: DownloadSpec?

        init(command: GetCommand, cookies: GivenCookies) {
            self.command = command
            self.cookies = cookies
        }

        func spec(for entry: InputList.Entry) throws -> DownloadSpec {
            do {
                guard let template else {
                    let made = try command.makeSpec(entry: entry, cookies: cookies, refusingExisting: false)
                    template = made
                    return made
                }
                let spec = try command.file.makeSpec(entry: entry, like: template, cookies: cookies)
                _ = try spec.proxies?.proxy(for: spec.url)
                try spec.validate()
                return spec
            } catch let error as InputError where entry.line > 0 {
                throw InputError("line \(entry.line) of the URL list: \(error.message)")
            }
        }
    }

    /// What the engine runs for one URL: its spec, and, for a person at a terminal, failing fast when the server
    /// cannot be reached at all.
    func makeOptions(entry: InputList.Entry) throws -> DownloadOptions {
        var options = DownloadOptions(try makeSpec(entry: entry, cookies: try file.givenCookies()))
        options.failFastBeforeData = true
        return options
    }
}

/// This process's environment, read once: building `ProcessInfo`'s dictionary again for each URL of a batch of
/// thousands was 3% of the batch's time.
enum ProcessEnvironment {
    static let values = ProcessInfo.processInfo.environment
}
