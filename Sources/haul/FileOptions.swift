import ArgumentParser
import Foundation
import HaulKit
import NIOConcurrencyHelpers

/// The URLs of `haul get` and `haul add`: arguments, and `-i FILE` (one per line, `-` for stdin).
struct URLList: ParsableArguments {
    @Argument(help: "The http:// or https:// URLs to download.")
    var urls: [String] = []

    @Option(name: [.customShort("i"), .customLong("input-file")], help: "Read URLs from a file, one per line ('-' for stdin); blank lines and lines starting with # are skipped.")
    var inputFile: String?

    /// `-i` values that mean this process's standard input (like `-` in curl and wget).
    static let standardInputNames: Set<String> = ["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]

    /// Every URL given, in order; at least one. A list is read as it arrives, off the concurrency threads, and
    /// refused at its first line that is not a URL, or over its limits (``URLListScanner``).
    func collect() async throws -> [String] {
        var all = urls
        if let inputFile {
            let standardInput = Self.standardInputNames.contains(inputFile)
            let name = standardInput ? "the URL list on standard input" : "the URL list \(inputFile)"
            let listed: [String]
            do {
                listed = try await URLListReader.read(standardInput ? nil : inputFile, name: name)
            } catch let error as HaulError {
                throw InputError(error.message)
            }
            if listed.isEmpty, urls.isEmpty { throw InputError("\(name) is empty") }
            all += listed
        }
        guard !all.isEmpty else { throw InputError("give at least one URL (or -i FILE)") }
        return all
    }
}

/// The netrc files read by this process, each once (a batch of thousands of URLs asks for each URL's host).
enum NetrcFiles {
    private static let read = NIOLockedValueBox<[String: String]>([:])

    /// Reads `path` (bounded, non-blocking, regular, private) off the concurrency threads, unless already read.
    static func load(_ path: String) async throws {
        guard read.withLockedValue({ $0[path] }) == nil else { return }
        let contents: NamedFileReader.Contents
        do {
            contents = try await NamedFileReader.read(path, as: .netrc)
        } catch let error as HaulError {
            throw InputError(error.message)
        }
        let text = try checked(contents, path)
        read.withLockedValue { $0[path] = text }
    }

    /// The text of `path`: as read by ``load(_:)``, else read now.
    static func text(_ path: String) throws -> String {
        if let text = read.withLockedValue({ $0[path] }) { return text }
        let contents: NamedFileReader.Contents
        do {
            contents = try NamedFileReader.readNow(path, as: .netrc)
        } catch {
            throw InputError(error.message)
        }
        let text = try checked(contents, path)
        read.withLockedValue { $0[path] = text }
        return text
    }

    private static func checked(_ contents: NamedFileReader.Contents, _ path: String) throws -> String {
        guard contents.permissions & 0o077 == 0 else {
            throw InputError("\(path) can be read by other users, so its passwords are not used; run chmod 600 \(path)")
        }
        return String(decoding: contents.bytes, as: UTF8.self)
    }
}

/// The options that describe one file's download, shared by `haul get` and `haul add`.
struct FileOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: "Save to this path.")
    var output: String?

    @Option(name: [.customShort("d"), .customShort("P"), .customLong("dir")], help: "Save into this folder under the name the server suggests (default: the current folder; -d as in aria2c, -P as in wget).")
    var directory: String?

    @Flag(help: "Replace an existing file at the -o path once the new one is complete.")
    var overwrite = false

    @Flag(name: [.customShort("c"), .customLong("continue")], help: "Continue a partial file at the -o path that another program left, after checking it matches the server's.")
    var continuePartial = false

    @Option(help: "Verify the download: md5, sha1, sha256 or sha512, as ALG:HEX.")
    var checksum: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "An extra request header, 'Name: value' (repeatable); sent only to the URL's own origin.")
    var headers: [String] = []

    @Option(parsing: .unconditional, help: "Retries after network errors, 5xx, 408 and 429 (spent by attempts that bring no bytes past the best offset so far).")
    var retries = 5

    @Option(name: .customLong("retry-wait"), parsing: .unconditional, help: "Seconds before the first retry; doubles each time, with jitter.")
    var retryWait = 1.0

    @Option(name: .customLong("limit-rate"), parsing: .unconditional, help: "Maximum speed, e.g. 500K, 2M (bytes per second; K = 1024).")
    var limitRate: String?

    @Option(parsing: .unconditional, help: "Connections for one file, 1-32 (default: up to 8 for large files, 1 for small ones).")
    var segments: Int?

    @Option(name: .customLong("min-segment-size"), parsing: .unconditional, help: "Never split a range below this size, e.g. 1M (default 1M).")
    var minSegmentSize: String?

    @Option(name: .customLong("max-connections-per-host"), parsing: .unconditional, help: "At most this many connections to one host.")
    var maxConnectionsPerHost = 8

    @Flag(name: .customLong("allow-insecure-redirects"), help: "Follow redirects from https to plain http.")
    var allowInsecureRedirects = false

    @Flag(name: .customLong("no-remote-time"), help: "Leave the finished file's time as it was written, not the server's Last-Modified.")
    var noRemoteTime = false

    @Option(name: [.customShort("u"), .customLong("user")], help: "USER:PASSWORD for Basic authentication to the URL's own origin (never sent after a redirect to another).")
    var user: String?

    @Flag(help: "Take the user and password for the URL's host from ~/.netrc (which must not be readable by others).")
    var netrc = false

    @Option(name: .customLong("netrc-file"), help: "Like --netrc, from this file.")
    var netrcFile: String?

    /// `-o` values that mean this process's standard output (like curl's `-o -`).
    static let standardOutputNames: Set<String> = ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]

    /// The netrc file `--netrc` or `--netrc-file` names, if any.
    var netrcPath: String? {
        guard netrc || netrcFile != nil else { return nil }
        return netrcFile ?? ((ProcessInfo.processInfo.environment["HOME"] ?? "") + "/.netrc")
    }

    /// Reads the netrc file (once, off the concurrency threads), before any spec is made.
    func loadNetrc() async throws {
        guard user == nil, let path = netrcPath else { return }
        try await NetrcFiles.load(path)
    }

    /// `-u`, else the URL's own `user:password@` (left to the engine), else the netrc entry for the host.
    func credentials(for url: URL) throws -> Credentials? {
        if let user { return try Credentials(parsing: user) }
        guard let path = netrcPath, Credentials(userinfoOf: url) == nil, let host = url.host else { return nil }
        return Netrc.credentials(for: host, in: try NetrcFiles.text(path))
    }

    /// A size or rate given to `option`; the error names the option.
    static func byteCount(_ text: String, _ option: String) throws -> Int64 {
        do {
            return try UserInput.byteCount(text)
        } catch {
            throw InputError("\(option): \(error.message)")
        }
    }

    /// The spec of another URL of the same command: `template` (what ``makeSpec(url:)`` made for the first URL) with
    /// this URL and the headers that depend on it. Building each of thousands of specs whole was most of the wait
    /// before a batch's first download.
    func makeSpec(url: String, like template: DownloadSpec) throws -> DownloadSpec {
        let parsedURL = try UserInput.url(url)
        var spec = template
        spec.url = parsedURL
        spec.headers = try requestHeaders(for: parsedURL)
        return spec
    }

    /// The -H headers, and the credentials for `url` as an Authorization header unless -H gives one.
    private func requestHeaders(for url: URL) throws -> HTTPFields {
        var fields = HTTPFields(try headers.map { try UserInput.header($0) })
        if let credentials = try credentials(for: url), !fields.contains("authorization") {
            // As a header it travels with the task to the daemon; it is sent to the URL's origin only.
            fields.append("Authorization", credentials.authorization)
        }
        return fields
    }

    /// -o, --continue and --checksum are about one file.
    func checkCount(_ urls: Int) throws {
        if urls > 1, checksum != nil { throw InputError("--checksum checks one file; give one URL") }
        if urls > 1, output != nil { throw InputError("-o names one file; use --dir DIR with several URLs") }
        if urls > 1, continuePartial { throw InputError("--continue works with one URL and -o") }
    }

    /// The download these flags describe for `url`: the one place the CLI makes a ``DownloadSpec``. Checks every
    /// value before any network or file activity; a flag left at its default leaves the spec's member unset.
    func makeSpec(url: String) throws -> DownloadSpec {
        let parsedURL = try UserInput.url(url)
        if output != nil, directory != nil { throw InputError("use either -o PATH or --dir DIR, not both") }
        if continuePartial, output == nil { throw InputError("--continue needs -o PATH: the partial file to continue") }
        if continuePartial, overwrite { throw InputError("use either --continue or --overwrite, not both") }
        guard retries >= 0, retries <= 1000 else { throw InputError("--retries must be between 0 and 1000") }
        if let segments, !(1...32).contains(segments) { throw InputError("--segments must be between 1 and 32") }
        guard (1...64).contains(maxConnectionsPerHost) else { throw InputError("--max-connections-per-host must be between 1 and 64") }
        guard retryWait.isFinite, retryWait >= 0, retryWait <= 86_400 else {
            throw InputError("--retry-wait must be a number of seconds between 0 and 86400")
        }
        let destination: DownloadSpec.Destination
        if let output {
            guard !output.isEmpty else { throw InputError("-o needs a path") }
            if FileOptions.standardOutputNames.contains(output) {
                if continuePartial { throw InputError("--continue needs a file; standard output cannot be resumed") }
                destination = .standardOutput
            } else {
                destination = .file(absolutePath(output))
            }
        } else {
            destination = .directory(absolutePath(directory ?? "."))
        }
        var spec = DownloadSpec(url: parsedURL, destination: destination)
        spec.overwrite = overwrite
        spec.continuePartial = continuePartial
        spec.checksum = try checksum.map { try Checksum(parsing: $0) }
        spec.headers = try requestHeaders(for: parsedURL)
        spec.rateLimit = try limitRate.map { try Self.byteCount($0, "--limit-rate") }
        spec.segments = segments
        let defaults = DownloadOptions(url: parsedURL, destination: destination)
        if maxConnectionsPerHost != defaults.maxConnectionsPerHost { spec.maxConnectionsPerHost = maxConnectionsPerHost }
        if let minSegmentSize { spec.minSegmentSize = try Self.byteCount(minSegmentSize, "--min-segment-size") }
        spec.allowInsecureRedirects = allowInsecureRedirects
        if noRemoteTime { spec.keepsRemoteTime = false }
        if retries != defaults.retry.maxRetries { spec.maxRetries = retries }
        if Duration.milliseconds(Int64(retryWait * 1000)) != defaults.retry.baseDelay { spec.retryWait = retryWait }
        return spec
    }
}
