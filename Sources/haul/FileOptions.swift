import ArgumentParser
import Foundation
import HaulKit
import NIOConcurrencyHelpers

/// The URLs of `haul get` and `haul add`: arguments, and `-i FILE` (one per line, `-` for stdin; aria2c's indented
/// per-URL options `out=`, `dir=`, `checksum=`, `header=` apply to the URL above them).
struct URLList: ParsableArguments {
    @Argument(help: "The http:// or https:// URLs to download (one without a scheme is http://, as in curl and wget).")
    var urls: [String] = []

    @Option(name: [.customShort("i"), .customLong("input-file")], help: "Read URLs from a file, one per line ('-' for stdin); blank lines and lines starting with # are skipped; indented lines out=NAME, dir=FOLDER, checksum=ALG=HEX, header=NAME: VALUE apply to the URL above (as in aria2c).")
    var inputFile: String?

    /// `-i` values that mean this process's standard input (like `-` in curl and wget).
    static let standardInputNames: Set<String> = ["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]

    /// Every URL given, in order, with the options its list lines give it; at least one. A list is read as it
    /// arrives, off the concurrency threads, and refused at its first line that is not a URL or an option, or over its
    /// limits (``URLListScanner``).
    func collect() async throws -> [InputList.Entry] {
        var all = urls.map { InputList.Entry(url: $0, line: 0) }
        if let inputFile {
            let standardInput = Self.standardInputNames.contains(inputFile)
            let name = standardInput ? "the URL list on standard input" : "the URL list \(inputFile)"
            let listed: [InputList.Entry]
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
    /// `optional` (curl's `--netrc-optional`): a file that does not exist holds no login, and is no error.
    static func load(_ path: String, optional: Bool = false) async throws {
        guard read.withLockedValue({ $0[path] }) == nil else { return }
        let contents: NamedFileReader.Contents
        do {
            if optional {
                guard let found = try await NamedFileReader.readIfPresent(path, as: .netrc) else {
                    read.withLockedValue { $0[path] = "" }
                    return
                }
                contents = found
            } else {
                contents = try await NamedFileReader.read(path, as: .netrc)
            }
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
        // An empty file (or /dev/null, read as empty) holds no password: no advice about its mode.
        guard contents.bytes.isEmpty || contents.permissions & 0o077 == 0 else {
            throw InputError("\(path) can be read by other users, so its passwords are not used; run chmod 600 \(path)")
        }
        return String(decoding: contents.bytes, as: UTF8.self)
    }
}

/// The options that describe one file's download, shared by `haul get` and `haul add`. Where curl, wget or aria2c
/// users type another spelling for the same thing, it is accepted too (docs/compatibility.md).
struct FileOptions: ParsableArguments {
    @Option(name: [.short, .long, .customLong("out")], help: "Save to this path (relative to --dir when both are given, as aria2c's -d and -o).")
    var output: String?

    @Flag(name: [.customShort("O"), .customLong("remote-name")], help: "Save under the server's name (the default; as curl -O).")
    var remoteName = false

    @Option(name: [.customShort("d"), .customShort("P"), .customLong("dir"), .customLong("output-dir"), .customLong("directory-prefix")],
            help: "Save into this folder under the name the server suggests (default: the current folder; -d as in aria2c, -P as in wget, --output-dir as in curl).")
    var directory: String?

    @Flag(help: "Replace an existing file at the -o path once the new one is complete.")
    var overwrite = false

    @Flag(name: [.customShort("c"), .customLong("continue")], help: "Continue a partial file at the -o path that another program left, after checking it matches the server's.")
    var continuePartial = false

    @Option(name: [.customShort("C"), .customLong("continue-at")], help: ArgumentHelp("The same as --continue (curl's -C -).", valueName: "-"))
    var continueAt: String?

    @Flag(name: [.customShort("N"), .customLong("timestamping")], help: "When the file exists, fetch it again only if the server's copy is newer (If-Modified-Since its time, as wget -N); an unchanged file is left as it is.")
    var timestamping = false

    @Flag(name: .customLong("no-clobber"), help: "When the file already exists (or anything has its name), leave it and fetch nothing, as wget -nc (also -nc); without -o the file is named from the URL.")
    var noClobber = false

    @Option(help: "Verify the download: md5, sha1, sha256 or sha512, as ALG:HEX (or aria2c's sha-256=HEX).")
    var checksum: Checksum?

    @Option(name: [.customShort("H"), .customLong("header")], help: "An extra request header, 'Name: value' (repeatable); sent only to the URL's own origin.")
    var headers: [String] = []

    @Option(name: [.customShort("A"), .customLong("user-agent")], help: "The User-Agent header (default: haul/VERSION).")
    var userAgent: String?

    @Option(name: [.customShort("e"), .customLong("referer")], help: "The Referer header; sent only to the URL's own origin.")
    var referer: String?

    @Option(name: [.customShort("b"), .customLong("cookie")], help: ArgumentHelp("Send cookies: a Netscape cookie file, or NAME=VALUE[; NAME=VALUE] for the URL's host (as curl -b); each only where its domain, path and secure flag match, and never after a redirect to another origin (repeatable).", valueName: "file|name=value"))
    var cookie: [String] = []

    @Option(name: .customLong("load-cookies"), help: ArgumentHelp("Send the cookies of this Netscape cookie file (as wget and aria2c --load-cookies).", valueName: "file"))
    var loadCookies: String?

    @Option(parsing: .unconditional, help: "Retries after network errors, 5xx, 408 and 429 (spent by attempts that bring no bytes past the best offset so far).")
    var retries = 5

    @Option(name: .customLong("retry"), parsing: .unconditional, help: "The same as --retries (curl's spelling).")
    var retry: Int?

    @Option(name: [.customLong("tries"), .customLong("max-tries")], parsing: .unconditional, help: "Attempts in all, 0 for the most haul allows (wget's --tries, aria2c's --max-tries): --retries N-1.")
    var tries: Int?

    @Option(name: .customLong("retry-wait"), parsing: .unconditional, help: "Seconds before the first retry; doubles each time, with jitter.")
    var retryWait = Seconds(1)

    @Option(name: .customLong("limit-rate"), parsing: .unconditional, help: "Maximum speed, e.g. 500K, 2M (bytes per second; K = 1024); 0 for none, as in curl, wget and aria2c.")
    var limitRateOption: RateLimitChange?

    /// `--limit-rate` in bytes per second; `nil` without a limit (none given, or `0`).
    var limitRate: Int64? {
        if case .limit(let rate)? = limitRateOption { return rate.bytesPerSecond }
        return nil
    }

    @Option(name: [.customShort("s"), .customLong("segments"), .customLong("split")], parsing: .unconditional, help: "Connections for one file, 1-64 (default: up to 8 for large files, 1 for small ones; -s as in aria2c).")
    var segments: SegmentCount?

    @Option(name: [.customLong("min-segment-size"), .customLong("min-split-size")], parsing: .unconditional, help: "Never split a range below this size, e.g. 1M (default 1M).")
    var minSegmentSize: ByteCount?

    @Option(name: [.customShort("x"), .customLong("max-connections-per-host"), .customLong("max-connection-per-server")], parsing: .unconditional,
            help: "At most this many connections to one host, 1-64 (default 8; -x as in aria2c).")
    var maxConnections: HostConnectionCount?

    @Flag(name: .customLong("allow-insecure-redirects"), help: "Follow redirects from https to plain http.")
    var allowInsecureRedirects = false

    @Option(name: [.customLong("max-redirs"), .customLong("max-redirect")], parsing: .unconditional,
            help: "Follow at most this many redirects, 0 for none (default 10; curl's --max-redirs, wget's --max-redirect).")
    var maxRedirects: Int?

    @Flag(name: .customLong("no-remote-time"), help: "Leave the finished file's time as it was written, not the server's Last-Modified.")
    var noRemoteTime = false

    @Option(name: [.customShort("u"), .customLong("user")], help: "USER:PASSWORD for Basic authentication to the URL's own origin (never sent after a redirect to another).")
    var user: String?

    @Flag(help: "Take the user and password for the URL's host from ~/.netrc (which must not be readable by others).")
    var netrc = false

    @Flag(name: .customLong("netrc-optional"), help: "Like --netrc, but no ~/.netrc (or --netrc-file) is no error: the URL goes without a login (as curl --netrc-optional).")
    var netrcOptional = false

    @Option(name: .customLong("netrc-file"), help: "Like --netrc, from this file.")
    var netrcFile: String?

    /// `-o` values that mean this process's standard output (like curl's `-o -`).
    static let standardOutputNames: Set<String> = ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]

    /// The netrc file `--netrc` or `--netrc-file` names, if any.
    var netrcPath: String? {
        guard netrc || netrcOptional || netrcFile != nil else { return nil }
        return netrcFile ?? ((ProcessInfo.processInfo.environment["HOME"] ?? "") + "/.netrc")
    }

    /// Reads the netrc file (once, off the concurrency threads), before any spec is made.
    func loadNetrc() async throws {
        guard user == nil, let path = netrcPath else { return }
        try await NetrcFiles.load(path, optional: netrcOptional && !netrc)
    }


    /// `-u`, else the URL's own `user:password@` (left to the engine), else the netrc entry for the host: for a URL
    /// that names only its user (`https://me@host/`), that user's entry, as curl's and wget's `--netrc` read it.
    func credentials(for url: URL) throws -> Credentials? {
        if let user { return try Credentials(parsing: user) }
        guard let path = netrcPath, let host = url.host else { return nil }
        guard let given = Credentials(userinfoOf: url) else { return Netrc.credentials(for: host, in: try NetrcFiles.text(path)) }
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        guard components?.password == nil else { return nil }
        return Netrc.credentials(for: host, login: given.user, in: try NetrcFiles.text(path))
    }

    /// The netrc file's logins of every host (`machine` entries), for the hosts a redirect leads to: each gets its
    /// own, as curl `--netrc -L`, wget and aria2c send it. None with `-u` (which reads no netrc file).
    func redirectLogins() throws -> [String: Credentials]? {
        guard user == nil, let path = netrcPath else { return nil }
        let logins = Netrc.logins(in: try NetrcFiles.text(path))
        return logins.isEmpty ? nil : logins
    }

    /// -o and --checksum are about one file (--continue is not: with several URLs it continues the file each names,
    /// as wget -c -i and aria2c -c -i do); with `-O` (curl's) and more than one argument, one without
    /// a scheme was probably meant as wget's `-O FILE` (alone, it is a URL without a scheme, as curl takes it).
    func checkCount(_ urls: Int, remoteName: Bool, arguments: [String]) throws {
        if remoteName, arguments.count > 1, let name = arguments.first(where: { !$0.contains("://") }) {
            throw InputError("-O saves under the server's name (as curl -O); to name the file \"\(name.prefix(60))\" use -o (wget's -O FILE is haul's -o FILE)")
        }
        if urls > 1, checksum != nil { throw InputError("--checksum checks one file; give one URL (or checksum= lines in an -i list)") }
        if urls > 1, output != nil { throw InputError("-o names one file; use --dir DIR with several URLs (or out= lines in an -i list)") }
    }

    /// `--continue`, or curl's `-C -`.
    var continuesPartial: Bool { continuePartial || continueAt == "-" }

    /// What these flags say of how each file is downloaded; a flag left at its default says nothing (the session's
    /// or the engine's default applies). Checked by ``validate()``; a flag's meaning for one URL (headers,
    /// cookies, the destination) is ``makeSpec(entry:cookies:)``'s.
    var settings: DownloadSettings {
        var settings = DownloadSettings()
        if overwrite { settings.overwrite = true }
        if continuesPartial { settings.continuePartial = true }
        if timestamping { settings.timestamping = true }
        if noClobber { settings.noClobber = true }
        settings.rateLimit = limitRate
        if connectionsPerHost != Self.defaultConnectionsPerHost { settings.maxConnectionsPerHost = connectionsPerHost }
        settings.minSegmentSize = minSegmentSize?.bytes
        if allowInsecureRedirects { settings.allowInsecureRedirects = true }
        settings.maxRedirects = maxRedirects
        if noRemoteTime { settings.keepsRemoteTime = false }
        let engine = RetryPolicy()
        if retryCount != engine.maxRetries { settings.maxRetries = retryCount }
        if retryWait.duration != engine.baseDelay { settings.retryWait = retryWait.value }
        return settings
    }
}
