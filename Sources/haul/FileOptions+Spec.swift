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
                given.jar += CookieJar.withoutPublicSuffixDomains(
                    try CookieJar.parse(String(decoding: contents.bytes, as: UTF8.self)), publicSuffixes: SystemPublicSuffixes.list)
            } catch {
                throw InputError("\(option) \(value): \(error.message)")
            }
        }
        return given
    }

    /// The flags' own checks, before anything runs (ArgumentParser calls it after parsing): the ranges are the
    /// spec's (``DownloadSpec/segmentRange`` and the others), and flags that contradict each other are refused.
    func validate() throws {
        if let continueAt, continueAt != "-" {
            throw InputError("-C \(continueAt.prefix(20)): haul does not start at a given offset; use -C - (or --continue) to continue the -o file from its end")
        }
        if continuesPartial, overwrite { throw InputError("use either --continue or --overwrite, not both") }
        if timestamping, continuesPartial { throw InputError("use either -N (--timestamping) or --continue, not both") }
        if timestamping, overwrite { throw InputError("use either -N (--timestamping) or --overwrite, not both") }
        if noClobber, overwrite || continuesPartial || timestamping {
            let other = overwrite ? "--overwrite" : continuesPartial ? "--continue" : "-N (--timestamping)"
            throw InputError("use either -nc (--no-clobber), which keeps an existing file, or \(other), not both")
        }
        if noClobber, checksum != nil {
            throw InputError("use either -nc (--no-clobber), which keeps an existing file unchecked, or --checksum, not both")
        }
        let given = [retry.map { ("--retry", $0) }, tries.map { ("--tries", $0) }].compactMap { $0 }
        if given.count > 1 { throw InputError("give one of --retries, --retry and --tries") }
        if let tries, tries < 0 { throw InputError("--tries must be 0 (as many as haul allows) or more") }
        let retries = DownloadSpec.retryRange
        guard retries.contains(retryCount) else {
            throw InputError("\(given.first?.0 ?? "--retries") must be between \(retries.lowerBound) and \(retries.upperBound)")
        }
        let waits = DownloadSpec.retryWaitRange
        guard waits.contains(retryWait.value) else {
            throw InputError("--retry-wait must be a number of seconds between \(Int(waits.lowerBound)) and \(Int(waits.upperBound))")
        }
        let segmentRange = DownloadSpec.segmentRange
        if let segments, !segmentRange.contains(segments.value) {
            throw InputError("--segments must be between \(segmentRange.lowerBound) and \(segmentRange.upperBound)")
        }
        let redirects = DownloadSettings.redirectRange
        if let maxRedirects, !redirects.contains(maxRedirects) {
            throw InputError("--max-redirs must be between \(redirects.lowerBound) and \(redirects.upperBound) (0 follows no redirect)")
        }
        let hostRange = DownloadSpec.connectionsPerHostRange
        guard hostRange.contains(connectionsPerHost) else {
            throw InputError("--max-connections-per-host must be between \(hostRange.lowerBound) and \(hostRange.upperBound)")
        }
    }

    /// `--retries`, or curl's `--retry`, or wget's `--tries` (attempts: one more than retries; 0 for no limit,
    /// which haul caps at its most). Checked by ``validate()``.
    var retryCount: Int {
        if let retry { return retry }
        if let tries { return tries == 0 ? DownloadSpec.retryRange.upperBound : tries - 1 }
        return retries
    }

    /// The connections to one host haul opens unless `-x` says otherwise.
    static let defaultConnectionsPerHost = TransferEngine.Configuration().maxConnectionsPerHost

    /// `-x`/`--max-connections-per-host` (aria2c's `-x`), else the default. Checked by ``validate()``.
    var connectionsPerHost: Int { maxConnections?.value ?? Self.defaultConnectionsPerHost }

    /// The spec of another URL of the same command: `template` (what ``makeSpec(entry:cookies:)`` made for the first
    /// URL) with this URL and what depends on it. Building each of thousands of specs whole was most of the wait
    /// before a batch's first download.
    func makeSpec(entry: InputList.Entry, like template: DownloadSpec, cookies: GivenCookies) throws -> DownloadSpec {
        let parsedURL = try UserInput.typedURL(entry.url)
        var spec = template
        spec.url = parsedURL
        (spec.headers, spec.omittedHeaders) = try requestHeaders(for: parsedURL, extra: entry.headers)
        let sent = try cookies.cookies(for: parsedURL)
        spec.cookies = sent.isEmpty ? nil : sent
        spec.destination = try destination(for: parsedURL, entry: entry)
        spec.confinedTo = confinement(for: entry)
        spec.checksum = try entry.checksum.map { try Checksum(parsing: $0) } ?? checksum
        return spec
    }

    /// The -H headers (and an -i line's `header=`), -A and -e, and the credentials for `url` as an Authorization
    /// header unless -H gives one; and the names of the headers left out, by curl's rules (`-H 'Name:'`, `-A ''`):
    /// a header -A, -e or the credentials would make is not made then either.
    private func requestHeaders(for url: URL, extra: [String] = []) throws -> (fields: HTTPFields, omitted: [String]?) {
        var (fields, omitted) = try UserInput.headers(headers + extra)
        if userAgent == "", !omitted.contains("user-agent") { omitted.append("user-agent") }
        func mayAdd(_ name: String) -> Bool { !fields.contains(name) && !omitted.contains(name) }
        if let userAgent, !userAgent.isEmpty, mayAdd("user-agent") {
            fields.append("User-Agent", try UserInput.header("User-Agent: " + userAgent).value)
        }
        if let referer, mayAdd("referer") {
            // curl's `;auto` (update it on redirects) has no meaning here: the referer goes to the URL's origin only.
            let value = referer.hasSuffix(";auto") ? String(referer.dropLast(5)) : referer
            // `-e ''` sends none, as curl.
            if !value.isEmpty { fields.append("Referer", try UserInput.header("Referer: " + value).value) }
        }
        if mayAdd("authorization"), let credentials = try credentials(for: url) {
            // As a header it travels with the task to the daemon; it is sent to the URL's origin only.
            fields.append("Authorization", credentials.authorization)
        }
        return (fields, omitted.isEmpty ? nil : omitted)
    }

    /// Where `url` is saved: -o (under --dir when relative), standard output, or the folder; with -N or --continue
    /// a file named as the server's URL names it, which -N compares and --continue continues (as wget -N, wget -c
    /// and curl -C - -O name it).
    private func destination(for url: URL, entry: InputList.Entry) throws -> DownloadSpec.Destination {
        // A list's dir= and out= stay inside the folder the command saves to (--dir, else the current one) and name
        // nothing hidden there: a list written by someone else cannot place a file anywhere else (`dir=/home/me/
        // .local/bin`, `out=../../x`, `out=.ssh/authorized_keys`). aria2c takes any dir=; here the command line, not
        // the list, says where files may go (ListedPath).
        if let listed = entry.directory, let refusal = ListedPath.refusal(directory: listed) { throw InputError(refusal) }
        if let listed = entry.output, let refusal = ListedPath.refusal(output: listed) { throw InputError(refusal) }
        let folder = entry.directory.map { listed in (directory ?? ".") + "/" + listed } ?? directory
        if let output = entry.output ?? output {
            guard !output.isEmpty else { throw InputError("-o needs a path") }
            if FileOptions.standardOutputNames.contains(output), entry.output == nil { return .standardOutput }
            // curl fails writing to such a name (exit 23), wget says it is a directory: a name ending in "/" is a
            // folder, never a file named like it.
            if output.hasSuffix("/") {
                let name = entry.output == nil ? "-o \(output)" : "out=\(output)"
                throw InputError("\(name) names a folder; save into it with --dir \(output.dropLast().isEmpty ? "/" : String(output.dropLast())), or name the file: \(name)NAME")
            }
            if let folder {
                guard !output.hasPrefix("/") else {
                    throw InputError("\(output) is an absolute path: give -o without --dir, or a name relative to the folder")
                }
                return .file(absolutePath(folder + "/" + output))
            }
            return .file(absolutePath(output))
        }
        if timestamping || continuesPartial || noClobber || overwrite {
            // wget -N compares, wget -c continues, wget -nc keeps, and --overwrite replaces (curl -O does), the file
            // the URL names: not a numbered copy beside it.
            return .file(absolutePath((folder ?? ".") + "/" + FileNaming.suggestedName(contentDisposition: nil, url: url)))
        }
        return .directory(absolutePath(folder ?? "."))
    }

    /// The folder a list's `dir=` or `out=` must keep `entry`'s file below, reached without following a symbolic
    /// link (``DownloadSpec/confinedTo``): the command's folder (`--dir`, else the current one), when the list names
    /// the file's folder or name; `nil` when the command line alone says where it goes.
    func confinement(for entry: InputList.Entry) -> String? {
        guard entry.directory != nil || entry.output != nil else { return nil }
        return absolutePath(directory ?? ".")
    }

    /// The download these flags describe for `entry`: the one place the CLI makes a ``DownloadSpec``. Checks every
    /// value before any network or file activity; a flag left at its default leaves the spec's member unset.
    func makeSpec(entry: InputList.Entry, cookies: GivenCookies) throws -> DownloadSpec {
        // `haul get urls.txt`: a word without a scheme that names a file here is the list it holds, not a host.
        var isFolder: ObjCBool = false
        if entry.line == 0, !UserInput.hasScheme(entry.url), !UserInput.looksLikePath(entry.url),
           FileManager.default.fileExists(atPath: entry.url, isDirectory: &isFolder),
           !isFolder.boolValue {
            throw InputError("\(entry.url) is a file here, not a URL; to download the URLs it lists, use -i \(entry.url) (or http://\(entry.url) for a server of that name)")
        }
        let parsedURL = try UserInput.typedURL(entry.url)
        let destination = try destination(for: parsedURL, entry: entry)
        if timestamping, destination == .standardOutput { throw InputError("-N compares a file; it cannot write to standard output") }
        if continuesPartial, destination == .standardOutput { throw InputError("--continue needs a file; standard output cannot be resumed") }
        var spec = DownloadSpec(url: parsedURL, destination: destination)
        spec.confinedTo = confinement(for: entry)
        spec.settings = settings
        spec.checksum = try entry.checksum.map { try Checksum(parsing: $0) } ?? checksum
        (spec.headers, spec.omittedHeaders) = try requestHeaders(for: parsedURL, extra: entry.headers)
        let sent = try cookies.cookies(for: parsedURL)
        spec.cookies = sent.isEmpty ? nil : sent
        // For the hosts a redirect leads to (the same for every URL of the command: ``makeSpec(entry:like:cookies:)``
        // keeps them): the jar's lines where their domain matches, the netrc file's login of their own host.
        spec.settings.jarCookies = cookies.jar.isEmpty ? nil : cookies.jar
        spec.settings.hostLogins = try redirectLogins()
        spec.segments = segments?.value
        // Standard output has no name to keep.
        if destination == .standardOutput { spec.noClobber = nil }
        return spec
    }
}
