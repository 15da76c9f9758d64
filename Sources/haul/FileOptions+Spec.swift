import ArgumentParser
import Foundation
import HaulKit

/// The cookies given by `-b`/`--load-cookies`, read once per command: a jar's cookies, and `NAME=VALUE` pairs
/// (made for each URL's host).
struct GivenCookies {
    var jar: [Cookie] = []
    var pairs: [String] = []

    /// The cookies a download of `url` carries: those of the jar that may go to its host, and the pairs for it.
    func cookies(for url: URL) throws -> [Cookie] {
        guard let host = url.host else { return [] }
        var cookies = CookieJar.relevant(jar, to: host)
        for pair in pairs { cookies += try CookieJar.parsePairs(pair, host: host) }
        return cookies
    }
}

extension FileOptions {
    /// Reads `-b FILE` and `--load-cookies FILE` (Netscape jars); `-b NAME=VALUE` (any `-b` with a `=`, as curl
    /// decides) is kept as pairs. A file's errors name its line, never a cookie's value.
    func givenCookies() throws -> GivenCookies {
        var given = GivenCookies()
        for (option, value) in cookie.map({ ("-b", $0) }) + (loadCookies.map { [("--load-cookies", $0)] } ?? []) {
            if option == "-b", value.contains("=") {
                given.pairs.append(value)
                continue
            }
            let contents: NamedFileReader.Contents
            do {
                contents = try NamedFileReader.readNow(value, as: .cookieJar)
            } catch {
                throw InputError(error.message)
            }
            do {
                given.jar += try CookieJar.parse(String(decoding: contents.bytes, as: UTF8.self))
            } catch {
                throw InputError("\(option) \(value): \(error.message)")
            }
        }
        return given
    }

    /// `--retries`, or curl's `--retry`, or wget's `--tries` (attempts: one more than retries; 0 for no limit,
    /// which haul caps at its most).
    func retryCount() throws -> Int {
        let given = [retry.map { ("--retry", $0) }, tries.map { ("--tries", $0 == 0 ? 1000 : $0 - 1) }].compactMap { $0 }
        if given.count > 1 { throw InputError("give one of --retries, --retry and --tries") }
        if let tries, tries < 0 { throw InputError("--tries must be 0 (as many as haul allows) or more") }
        let count = given.first?.1 ?? retries
        guard (0...1000).contains(count) else { throw InputError("\(given.first?.0 ?? "--retries") must be between 0 and 1000") }
        return count
    }

    /// `-s`/`--segments`: a number of connections (aria2c's `-s`); curl's `-s` (silent) is `-q` here.
    func segmentCount() throws -> Int? {
        guard let segments else { return nil }
        guard let count = Int(segments) else {
            throw InputError("-s/--segments takes a number of connections for one file (aria2c's -s), not \"\(segments.prefix(40))\"; for curl's -s (silent) use -q")
        }
        let range = DownloadSpec.segmentRange
        guard range.contains(count) else { throw InputError("--segments must be between \(range.lowerBound) and \(range.upperBound)") }
        return count
    }

    /// `-x`/`--max-connections-per-host` (aria2c's `-x`); curl's `-x` (a proxy) is `--proxy` here.
    func connectionsPerHost() throws -> Int {
        guard let maxConnections else { return 8 }
        guard let count = Int(maxConnections) else {
            throw InputError("-x takes a number of connections per host (aria2c's -x), not \"\(Redaction.url(String(maxConnections.prefix(60))))\"; for a proxy (curl's -x) use --proxy HOST:PORT")
        }
        let range = DownloadSpec.connectionsPerHostRange
        guard range.contains(count) else {
            throw InputError("--max-connections-per-host must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return count
    }

    /// The spec of another URL of the same command: `template` (what ``makeSpec(entry:cookies:)`` made for the first
    /// URL) with this URL and what depends on it. Building each of thousands of specs whole was most of the wait
    /// before a batch's first download.
    func makeSpec(entry: InputList.Entry, like template: DownloadSpec, cookies: GivenCookies) throws -> DownloadSpec {
        let parsedURL = try UserInput.url(entry.url)
        var spec = template
        spec.url = parsedURL
        spec.headers = try requestHeaders(for: parsedURL, extra: entry.headers)
        spec.cookies = try cookies.cookies(for: parsedURL)
        spec.destination = try destination(for: parsedURL, entry: entry)
        spec.checksum = try (entry.checksum ?? checksum).map { try Checksum(parsing: $0) }
        return spec
    }

    /// The -H headers (and an -i line's `header=`), -A and -e, and the credentials for `url` as an Authorization
    /// header unless -H gives one.
    private func requestHeaders(for url: URL, extra: [String] = []) throws -> HTTPFields {
        var fields = HTTPFields(try (headers + extra).map { try UserInput.header($0) })
        if let userAgent, !fields.contains("user-agent") { fields.append("User-Agent", try UserInput.header("User-Agent: " + userAgent).value) }
        if let referer, !fields.contains("referer") {
            // curl's `;auto` (update it on redirects) has no meaning here: the referer goes to the URL's origin only.
            let value = referer.hasSuffix(";auto") ? String(referer.dropLast(5)) : referer
            fields.append("Referer", try UserInput.header("Referer: " + value).value)
        }
        if let credentials = try credentials(for: url), !fields.contains("authorization") {
            // As a header it travels with the task to the daemon; it is sent to the URL's origin only.
            fields.append("Authorization", credentials.authorization)
        }
        return fields
    }

    /// Where `url` is saved: -o (under --dir when relative), standard output, or the folder; with -N a file
    /// named as the server's URL names it, which -N compares.
    private func destination(for url: URL, entry: InputList.Entry) throws -> DownloadSpec.Destination {
        let folder = entry.directory ?? directory
        if let output = entry.output ?? output {
            guard !output.isEmpty else { throw InputError("-o needs a path") }
            if FileOptions.standardOutputNames.contains(output), entry.output == nil { return .standardOutput }
            if let folder {
                guard !output.hasPrefix("/") else {
                    throw InputError("\(output) is an absolute path: give -o without --dir, or a name relative to the folder")
                }
                return .file(absolutePath(folder + "/" + output))
            }
            return .file(absolutePath(output))
        }
        if timestamping {
            // wget -N compares the file the URL names.
            return .file(absolutePath((folder ?? ".") + "/" + FileNaming.suggestedName(contentDisposition: nil, finalURL: url)))
        }
        return .directory(absolutePath(folder ?? "."))
    }

    /// The download these flags describe for `entry`: the one place the CLI makes a ``DownloadSpec``. Checks every
    /// value before any network or file activity; a flag left at its default leaves the spec's member unset.
    func makeSpec(entry: InputList.Entry, cookies: GivenCookies) throws -> DownloadSpec {
        let parsedURL = try UserInput.url(entry.url)
        if let continueAt, continueAt != "-" {
            throw InputError("-C \(continueAt.prefix(20)): haul does not start at a given offset; use -C - (or --continue) to continue the -o file from its end")
        }
        if continuesPartial, output == nil, entry.output == nil {
            throw InputError("--continue (-C -) needs -o PATH: the partial file to continue (haul resumes its own interrupted downloads without it)")
        }
        if continuesPartial, overwrite { throw InputError("use either --continue or --overwrite, not both") }
        if timestamping, continuesPartial { throw InputError("use either -N (--timestamping) or --continue, not both") }
        if timestamping, overwrite { throw InputError("use either -N (--timestamping) or --overwrite, not both") }
        let retryCount = try retryCount()
        let segments = try segmentCount()
        let connectionsPerHost = try connectionsPerHost()
        guard retryWait.isFinite, retryWait >= 0, retryWait <= 86_400 else {
            throw InputError("--retry-wait must be a number of seconds between 0 and 86400")
        }
        let destination = try destination(for: parsedURL, entry: entry)
        if timestamping, destination == .standardOutput { throw InputError("-N compares a file; it cannot write to standard output") }
        if continuesPartial, destination == .standardOutput { throw InputError("--continue needs a file; standard output cannot be resumed") }
        var spec = DownloadSpec(url: parsedURL, destination: destination)
        spec.overwrite = overwrite
        spec.continuePartial = continuesPartial
        spec.timestamping = timestamping
        spec.checksum = try (entry.checksum ?? checksum).map { try Checksum(parsing: $0) }
        spec.headers = try requestHeaders(for: parsedURL, extra: entry.headers)
        spec.cookies = try cookies.cookies(for: parsedURL)
        spec.rateLimit = try limitRate.map { try Self.byteCount($0, "--limit-rate") }
        spec.segments = segments
        let defaults = DownloadOptions(url: parsedURL, destination: destination)
        if connectionsPerHost != defaults.maxConnectionsPerHost { spec.maxConnectionsPerHost = connectionsPerHost }
        if let minSegmentSize { spec.minSegmentSize = try Self.byteCount(minSegmentSize, "--min-segment-size") }
        spec.allowInsecureRedirects = allowInsecureRedirects
        if noRemoteTime { spec.keepsRemoteTime = false }
        if retryCount != defaults.retry.maxRetries { spec.maxRetries = retryCount }
        if Duration.milliseconds(Int64(retryWait * 1000)) != defaults.retry.baseDelay { spec.retryWait = retryWait }
        return spec
    }
}
