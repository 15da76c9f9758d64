import ArgumentParser
import Foundation
import HaulKit
import Logging

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download URLs; run the same command again to resume an interrupted download.",
        discussion: ExitStatus.help
    )

    @Argument(help: "The http:// or https:// URLs to download.")
    var urls: [String] = []

    @Option(name: [.customShort("i"), .customLong("input-file")], help: "Read URLs from a file, one per line ('-' for stdin); blank lines and lines starting with # are skipped.")
    var inputFile: String?

    @Option(name: [.customShort("j"), .customLong("jobs")], help: "Downloads at once when several URLs are given.")
    var jobs = 3

    @Option(name: .shortAndLong, help: "Save to this path.")
    var output: String?

    @Option(name: .customLong("dir"), help: "Save into this folder under the name the server suggests (default: the current folder).")
    var directory: String?

    @Flag(help: "Replace an existing file at the -o path once the new one is complete.")
    var overwrite = false

    @Flag(name: [.customShort("c"), .customLong("continue")], help: "Continue a partial file at the -o path that another program left, after checking it matches the server's.")
    var continuePartial = false

    @Option(help: "Verify the download: md5, sha1, sha256 or sha512, as ALG:HEX.")
    var checksum: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "An extra request header, 'Name: value' (repeatable); sent only to the URL's own origin.")
    var headers: [String] = []

    @Option(help: "Retries after network errors, 5xx, 408 and 429 (the count restarts whenever data arrives).")
    var retries = 5

    @Option(name: .customLong("retry-wait"), help: "Seconds before the first retry; doubles each time, with jitter.")
    var retryWait = 1.0

    @Option(name: .customLong("stall-timeout"), help: "Seconds without data after which a transfer is retried.")
    var stallTimeout = 30.0

    @Option(name: .customLong("connect-timeout"), help: "Seconds to wait for a connection.")
    var connectTimeout = 30.0

    @Option(name: .customLong("limit-rate"), help: "Maximum speed, e.g. 500K, 2M (bytes per second; K = 1024).")
    var limitRate: String?

    @Option(help: "Connections for one file, 1-32 (default: up to 8 for large files, 1 for small ones).")
    var segments: Int?

    @Option(name: .customLong("min-segment-size"), help: "Never split a range below this size, e.g. 1M (default 1M).")
    var minSegmentSize: String?

    @Option(name: .customLong("max-connections-per-host"), help: "At most this many connections to one host.")
    var maxConnectionsPerHost = 8

    @Flag(name: .customLong("allow-insecure-redirects"), help: "Follow redirects from https to plain http.")
    var allowInsecureRedirects = false

    @Flag(name: .shortAndLong, help: "Print only errors.")
    var quiet = false

    @Flag(help: "Print one JSON event per line on stdout.")
    var json = false

    @Flag(name: .shortAndLong, help: "Log every request, response and resume decision to stderr.")
    var verbose = false

    func run() async throws {
        let allURLs: [String]
        do {
            allURLs = try collectURLs()
        } catch let error as InputError {
            Reporter.printError("haul: error: \(error.message)")
            throw ExitCode(ExitStatus.usage)
        }
        if allURLs.count != 1 || inputFile != nil {
            try await BatchGet(command: self, urls: allURLs).run()
            return
        }
        let options: DownloadOptions
        do {
            options = try makeOptions(url: allURLs[0])
        } catch let error as InputError {
            Reporter.printError("haul: error: \(error.message)")
            throw ExitCode(ExitStatus.usage)
        }
        let mode: Reporter.Mode = json ? .json : quiet ? .quiet : (isatty(STDERR_FILENO) == 1 ? .terminal : .plain)
        let reporter = Reporter(mode: mode, url: options.url.absoluteString)
        var configuration = TransferEngine.Configuration()
        configuration.stallTimeout = .milliseconds(Int64(stallTimeout * 1000))
        configuration.connectTimeout = .milliseconds(Int64(connectTimeout * 1000))
        configuration.maxConnectionsPerHost = maxConnectionsPerHost
        if verbose {
            var logger = Logger(label: "haul", factory: { label in StreamLogHandler.standardError(label: label) })
            logger.logLevel = .debug
            configuration.logger = logger
        }
        let engine = TransferEngine(home: HaulHome(environment: ProcessInfo.processInfo.environment), configuration: configuration)

        let download = Task { try await engine.download(options, events: { reporter.handle($0) }) }
        let signals = SignalForwarder { download.cancel() }
        let outcome = await download.result
        signals.stop()
        try? await engine.shutdown()
        switch outcome {
        case .success:
            return
        case .failure(let error):
            let failure = error as? HaulError ?? HaulError(.network, String(describing: error))
            reporter.failed(failure, exitCode: ExitStatus.code(for: failure.kind))
            throw ExitCode(ExitStatus.code(for: failure.kind))
        }
    }

    /// The URLs from the arguments and `-i`.
    func collectURLs() throws -> [String] {
        var all = urls
        if let inputFile {
            let text: String
            if inputFile == "-" {
                text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                guard let data = FileManager.default.contents(atPath: inputFile) else {
                    throw InputError("cannot read the URL list \(inputFile)")
                }
                text = String(decoding: data, as: UTF8.self)
            }
            all += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        guard !all.isEmpty else { throw InputError("give at least one URL (or -i FILE)") }
        guard (1...64).contains(jobs) else { throw InputError("-j must be between 1 and 64") }
        if all.count > 1, output != nil { throw InputError("-o names one file; use --dir DIR with several URLs") }
        if all.count > 1, continuePartial { throw InputError("--continue works with one URL and -o") }
        return all
    }

    /// Checks every input before any network or file activity.
    func makeOptions(url: String) throws -> DownloadOptions {
        let parsedURL = try UserInput.url(url)
        if output != nil, directory != nil { throw InputError("use either -o PATH or --dir DIR, not both") }
        if quiet, json { throw InputError("use either --quiet or --json, not both") }
        if continuePartial, output == nil { throw InputError("--continue needs -o PATH: the partial file to continue") }
        if continuePartial, overwrite { throw InputError("use either --continue or --overwrite, not both") }
        guard retries >= 0, retries <= 1000 else { throw InputError("--retries must be between 0 and 1000") }
        if let segments, !(1...32).contains(segments) { throw InputError("--segments must be between 1 and 32") }
        guard (1...64).contains(maxConnectionsPerHost) else { throw InputError("--max-connections-per-host must be between 1 and 64") }
        for (name, value) in [("--retry-wait", retryWait), ("--stall-timeout", stallTimeout), ("--connect-timeout", connectTimeout)] {
            guard value.isFinite, value >= 0, value <= 86_400 else { throw InputError("\(name) must be a number of seconds between 0 and 86400") }
        }
        guard stallTimeout > 0, connectTimeout > 0 else { throw InputError("timeouts must be more than 0 seconds") }
        let destination: DownloadOptions.Destination
        if let output {
            guard !output.isEmpty else { throw InputError("-o needs a path") }
            destination = .file(absolutePath(output))
        } else {
            destination = .directory(absolutePath(directory ?? "."))
        }
        var options = DownloadOptions(url: parsedURL, destination: destination)
        options.overwrite = overwrite
        options.continuePartial = continuePartial
        options.checksum = try checksum.map { try Checksum(parsing: $0) }
        options.headers = HTTPFields(try headers.map { try UserInput.header($0) })
        options.rateLimit = try limitRate.map { try UserInput.byteCount($0) }
        options.segments = segments
        options.maxConnectionsPerHost = maxConnectionsPerHost
        if let minSegmentSize { options.minSegmentSize = try UserInput.byteCount(minSegmentSize) }
        options.allowInsecureRedirects = allowInsecureRedirects
        options.retry = RetryPolicy(maxRetries: retries, baseDelay: .milliseconds(Int64(retryWait * 1000)))
        return options
    }
}
