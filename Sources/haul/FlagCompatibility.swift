/// The flags users bring from curl, wget and aria2c to `haul get` and `haul add`, read before the parser sees the
/// arguments: a flag whose meaning is already Haul's default (`-L`: Haul always follows redirects) is dropped, a
/// spelling of a Haul flag that the parser cannot take (`--check-certificate=false`, curl's `-fsSL` clusters) is
/// rewritten, and a flag Haul cannot honour is refused in one line naming what to use instead. Every other
/// spelling is an ordinary option of the commands (docs/compatibility.md lists them all, and why a letter that
/// means different things in those tools means what it does in Haul).
enum FlagCompatibility {
    /// What becomes of the arguments.
    enum Outcome: Equatable {
        /// Parse these.
        case arguments([String])
        /// Refused: the line to print.
        case refused(String)
    }

    /// The subcommands whose flags are read here.
    static let commands: Set<String> = ["get", "add"]

    /// Options of `get` and `add` that take a value: the argument after them is a value, never read as a flag.
    static let valueOptions: Set<String> = [
        "-o", "--output", "--out", "-d", "-P", "--dir", "--output-dir", "--directory-prefix", "-C", "--continue-at",
        "--checksum", "-H", "--header", "-A", "--user-agent", "-e", "--referer", "-b", "--cookie", "--load-cookies",
        "--retries", "--retry", "--tries", "--max-tries", "--retry-wait", "--limit-rate", "-s", "--segments", "--split",
        "--min-segment-size", "--min-split-size", "-x", "--max-connections-per-host", "--max-connection-per-server",
        "-u", "--user", "--netrc-file", "-i", "--input-file", "-j", "--jobs", "--stall-timeout", "--connect-timeout",
        "-T", "--timeout", "--max-time", "--on-complete", "--proxy", "--all-proxy", "--noproxy", "--cacert", "--capath",
        "--cert", "--key", "--priority", "--id", "--socket", "--session", "--max-redirs", "--max-redirect",
        "--ca-certificate", "--ca-directory", "--certificate", "--private-key", "--read-timeout", "--max-concurrent-downloads",
        "--parallel-max", "--file-allocation", "--summary-interval", "--console-log-level",
    ]

    /// Flags whose meaning is Haul's default: dropped.
    static let defaults: Set<String> = [
        "-L", "--location", "-R", "--remote-time", "-f", "--fail", "-S", "--show-error", "-J", "--remote-header-name",
        "--remote-name-all", "--create-dirs", "-Z", "--parallel", "-#", "--progress-bar", "--http1.1", "-nv", "--no-verbose",
        "--check-certificate", "--check-certificate=true", "--auto-file-renaming", "--auto-file-renaming=true",
        "--continue=false", "--allow-overwrite=false", "--content-disposition", "--http2",
        // wget's bar is what haul draws on a terminal, and always draws there unless -q (wget's --show-progress).
        "--progress=bar", "--progress=bar:noscroll", "--show-progress",
        // wget makes folders only when it crawls or is told to (-x); haul never makes them from the URL.
        "-nd", "--no-directories", "-nH", "--no-host-directories",
        // haul reads no netrc file unless --netrc asks (wget and aria2c read ~/.netrc by default).
        "--no-netrc", "--no-netrc=true",
        // aria2c's booleans, spelled out at their default.
        "--remote-time=true", "--quiet=false", "--conditional-get=false",
        // curl's way of sending a proxy's login, which is haul's only one.
        "--proxy-basic",
        // wget follows only https links when it crawls; haul does not crawl (and never follows https to http).
        "--https-only",
        // aria2c's default.
        "--check-integrity=false",
    ]

    /// aria2c's options whose meaning is only its own console and disk housekeeping, with nothing to change in what is
    /// downloaded or where: dropped with their value (`--file-allocation=none` or `--file-allocation none`). Scripts
    /// written for aria2c carry them.
    static let ignoredWithValue: Set<String> = ["--file-allocation", "--summary-interval", "--console-log-level"]

    /// Spellings rewritten to Haul's.
    static let rewrites: [String: String] = [
        "--check-certificate=false": "--insecure", "--allow-overwrite": "--overwrite", "--allow-overwrite=true": "--overwrite",
        "--continue=true": "--continue", "-nc": "--no-clobber",
        // aria2c's booleans: `--quiet=true` is `-q`, `--conditional-get` is wget's `-N`, `--remote-time=false` keeps
        // the time the file was written.
        "--quiet=true": "--quiet", "--conditional-get": "-N", "--conditional-get=true": "-N", "--remote-time=false": "--no-remote-time",
    ]

    /// Letters of curl's clusters (`-fsSL`, `-LO`): the default ones are dropped, `s` is curl's silent.
    static let clusterDefaults: Set<Character> = ["f", "S", "L", "R", "J", "#", "Z"]
    static let clusterFlags: Set<Character> = ["s", "O", "k", "v", "q", "c", "N", "4", "6"]

    private static let crawling = "haul fetches the URLs it is given and does not crawl links; list them in a file and pass -i FILE"
    private static let credentialsTogether = "give the user and password together: -u USER:PASSWORD (or --netrc)"
    private static let cookieJar = "haul writes no cookie jar (curl's -c FILE, wget's --save-cookies); its -c is --continue, as in wget and aria2c. Cookies a redirect sets go with that download's next hops"
    private static let writeOut = "haul has no --write-out (curl's -w FORMAT); --json prints one JSON object per event on stdout instead: the file's path and bytes when it is saved, the error and its HTTP status when it fails"
    private static let wgetCommands = "haul's -e is curl's --referer, and wget's -e COMMAND is not read: for http_proxy= or https_proxy= use --proxy URL (or the environment variable), and robots=off needs nothing (haul does not crawl)"

    private static let proxyPerScheme = "haul takes one proxy for every URL: --proxy URL, its user and password in it (http://user:password@host:port); the http_proxy and https_proxy variables set one for each scheme"
    private static let proxyLogin = "put the user and password in the proxy's URL: --proxy http://user:password@host:port"
    private static let proxyTLS = "haul reaches its proxy without TLS (http:// and socks5:// proxies), so the proxy's own certificate options do not apply; drop it"
    private static let socks4 = "haul speaks SOCKS5, not SOCKS4: --proxy socks5://HOST:PORT (socks5h:// to let the proxy resolve names)"
    private static let proxyAuth = "haul sends a proxy's user and password with Basic only (curl's default); drop it"

    /// Flags Haul cannot honour, with what to use instead.
    static let refusals: [String: String] = [
        // aria2c's and curl's proxy flags: what --proxy and its URL say instead.
        "--http-proxy": proxyPerScheme, "--https-proxy": proxyPerScheme,
        "--http-proxy-user": proxyLogin, "--http-proxy-passwd": proxyLogin, "--https-proxy-user": proxyLogin, "--https-proxy-passwd": proxyLogin,
        "--all-proxy-user": proxyLogin, "--all-proxy-passwd": proxyLogin,
        "--proxy-method": "haul tunnels https:// URLs through an HTTP proxy with CONNECT and sends it http:// ones as absolute-form GETs, as curl does; --proxytunnel tunnels those too",
        "--socks5": "use --proxy socks5://HOST:PORT (curl's --socks5)",
        "--socks5-hostname": "use --proxy socks5h://HOST:PORT: the proxy resolves the host's name (curl's --socks5-hostname)",
        "--socks4": socks4, "--socks4a": socks4,
        "--proxy-cacert": proxyTLS, "--proxy-capath": proxyTLS, "--proxy-insecure": proxyTLS, "--proxy-cert": proxyTLS, "--proxy-key": proxyTLS,
        "--proxy-anyauth": proxyAuth, "--proxy-digest": proxyAuth, "--proxy-ntlm": proxyAuth, "--proxy-negotiate": proxyAuth,
        "-X": "haul downloads with GET only (-X GET is accepted); use curl for other methods",
        "--request": "haul downloads with GET only (--request GET is accepted); use curl for other methods",
        "--data": "haul sends no request body (it downloads with GET); use curl to send data",
        "--data-binary": "haul sends no request body (it downloads with GET); use curl to send data",
        "--data-raw": "haul sends no request body (it downloads with GET); use curl to send data",
        "--data-urlencode": "haul sends no request body (it downloads with GET); use curl to send data",
        "-F": "haul sends no request body (it downloads with GET); use curl to post a form",
        "--form": "haul sends no request body (it downloads with GET); use curl to post a form",
        "-I": "haul downloads files; to see a server's answers use -v (each response is logged), or curl -I",
        "--head": "haul downloads files; to see a server's answers use -v (each response is logged), or curl -I",
        "-r": "haul downloads whole files: it neither fetches part of one (curl's -r/--range) nor crawls links (wget's -r/--recursive); list the URLs in a file and pass -i FILE",
        "--range": "haul downloads whole files (resuming and splitting them itself); use curl -r for part of a file",
        "--recursive": crawling,
        "-m": "-m is --max-time in curl, --mirror in wget and --max-tries in aria2c; spell it out: --max-time SECONDS or --tries N (haul does not mirror sites)", "--mirror": crawling, "--page-requisites": crawling, "-np": crawling,
        "--no-parent": crawling, "-l": crawling, "--level": crawling, "--convert-links": crawling,
        "-p": "-p is --proxytunnel in curl and --page-requisites in wget; spell out --proxytunnel (haul does not crawl pages)",
        "--compressed": "haul saves the bytes exactly as the server sends them and asks for no compression (Accept-Encoding: identity); decompress the file afterwards",
        "-z": "use -N (--timestamping): haul asks with If-Modified-Since the local file's time",
        "--time-cond": "use -N (--timestamping): haul asks with If-Modified-Since the local file's time",
        "-Y": "use --stall-timeout SECONDS: a transfer that brings no data for that long is retried",
        "--speed-limit": "use --stall-timeout SECONDS: a transfer that brings no data for that long is retried",
        "-y": "use --stall-timeout SECONDS: a transfer that brings no data for that long is retried",
        "--speed-time": "use --stall-timeout SECONDS: a transfer that brings no data for that long is retried",
        "--retry-delay": "use --retry-wait SECONDS (haul doubles the wait after each retry)",
        "--retry-max-time": "use --max-time SECONDS",
        "--proxy-user": "put the user and password in the proxy's URL: --proxy http://user:password@host:port",
        "-U": "-U is --proxy-user in curl and --user-agent in wget and aria2c; spell it out: --user-agent TEXT (or -A), or put the proxy's user in --proxy http://user:password@host:port",
        "-t": "-t is --tries in wget and --timeout in aria2c; spell it out: --tries N or --timeout SECONDS",
        "-w": "haul does not pause between downloads; -j 1 fetches one at a time",
        "--wait": "haul does not pause between downloads; -j 1 fetches one at a time",
        "--random-wait": "haul does not pause between downloads; -j 1 fetches one at a time",
        "--background": "use haul add: the haul daemon downloads in the background",
        "-K": "haul reads no configuration file; put the flags in a shell alias or function",
        "--config": "haul reads no configuration file; put the flags in a shell alias or function",
        "--http2-prior-knowledge": "haul speaks HTTP/2 only over TLS, offered by ALPN (several files from one host share a connection); drop it",
        "--http3": "haul speaks HTTP/1.1 and HTTP/2 (offered by ALPN over TLS); drop it",
        "--password": credentialsTogether, "--http-user": credentialsTogether, "--http-password": credentialsTogether,
        "--proxy-password": "put the user and password in the proxy's URL: --proxy http://user:password@host:port",
        "--execute": wgetCommands, "--cookie-jar": cookieJar, "--save-cookies": cookieJar,
        "--no-proxy": "use --noproxy '*' to reach every host directly, or --noproxy HOST,… for some",
        "--max-download-limit": "use --limit-rate RATE",
        "--max-overall-download-limit": "use --limit-rate RATE (with several URLs it caps them all together)",
        "--write-out": writeOut,
        "--fail-with-body": "haul already fails on an HTTP error (exit 4, the status in one line), as with curl's --fail, but never saves the error's body; drop it (curl --fail-with-body keeps the body)",
        "--retry-all-errors": "haul retries network errors, stalls, 5xx, 408 and 429 (--retries N); any other 4xx answer is final, as asking again gets the same answer; drop it",
        "--retry-connrefused": "haul get retries a refused connection only twice at once, so that a wrong address shows quickly; to wait for a server that is starting, repeat the command (until haul get …; do sleep 1; done) or queue it with haul add, whose downloads retry it with backoff",
        "--progress": "haul draws its progress line on a terminal only, and elsewhere prints a line when a file starts and when it is saved; drop it (-q for errors only, --json for progress events)",
        "--max-filesize": "haul has no size limit for a download; drop it, or use curl --max-filesize",
        "-n": "-n is --netrc in curl and --no-netrc in aria2c; spell it out: --netrc to take the login from ~/.netrc (haul reads it only when asked)",
        "--waitretry": "use --retry-wait SECONDS: the wait before the first retry, doubled after each (wget's --waitretry is the longest wait, growing a second at a time)",
        "--dns-timeout": "haul has no timeout for the name lookup alone; --connect-timeout SECONDS bounds the lookup and the connection together",
        "--location-trusted": "haul sends -u's user and password only to the URL's own origin, never after a redirect to another; give the URL the redirect leads to, with -u USER:PASSWORD",
        "--spider": "haul downloads files; to see whether a URL answers use curl -I, or haul get -v (each response is logged)",
        "--trust-server-names": "haul names a file from the server's Content-Disposition, else from the URL given, as wget does without --trust-server-names; give -o NAME to choose the name",
        "-V": "-V is --version in curl and wget and --check-integrity in aria2c; haul --version prints the version, and -c continues a file, checking its last bytes against the server's (with --checksum ALG:HEX, the whole file when it is finished)",
        "--check-integrity": "haul checks what it continues against the server's bytes (with -c, the last 64 KiB of a file given), and with --checksum ALG:HEX or a server's Repr-Digest the whole file it finishes; drop it",
    ]

    /// curl's `-X`/`--request` with the method a download uses anyway: dropped with it (`-X GET`, `--request=GET`,
    /// `-XGET`, as copied curl commands carry it); any other method is refused (``refusals``).
    static func isGetRequest(_ token: String, next: String?) -> (matches: Bool, takesNext: Bool) {
        if token == "-X" || token == "--request" { return (next?.uppercased() == "GET", true) }
        let upper = token.uppercased()
        return (upper == "-XGET" || upper == "--REQUEST=GET", false)
    }

    /// wget's `--no-cache`: ask every cache on the way for a fresh answer, with the headers wget sends.
    static let noCacheHeaders = ["-H", "Cache-Control: no-cache", "-H", "Pragma: no-cache"]

    /// Spellings refused whole (a value of aria2c's boolean options), named as typed: none holds a secret.
    static let tokenRefusals: [String: String] = [
        "--auto-file-renaming=false": "haul renames only a file it names itself (without -o); give -o NAME, and a file already there is refused unless --overwrite (or kept, fetching nothing, with -nc)",
    ]

    /// Reads `arguments` (the command line without the program's name).
    static func rewrite(_ given: [String]) -> Outcome {
        guard let command = given.first, commands.contains(command) else { return .arguments(given) }
        let arguments = detachingValues(given)
        var result = [command]
        var index = 1
        var outputs = 0
        while index < arguments.count {
            let token = arguments[index]
            index += 1
            if token == "--" {
                result += arguments[(index - 1)...]
                break
            }
            // The parser keeps the last of several -o; curl pairs each with a URL of its own. Neither silently.
            if isOutputOption(token) {
                outputs += 1
                if outputs == 2 {
                    return .refused("-o is given more than once; haul gets one file per -o: give one -o, or several URLs with --dir DIR (or an -i list with out= lines)")
                }
            }
            if token == "-c", index < arguments.count, !arguments[index].hasPrefix("-"), !arguments[index].contains("://"),
               positionalCount(arguments) > 1 {
                // curl's `-c jar.txt URL`: a file name where haul's `-c` (a flag) is followed by a URL or an option. A
                // word without a scheme that is the command's only one is its URL (`-c example.com/f`, as wget reads it).
                return .refused("-c FILE: \(cookieJar)")
            }
            // curl's `-w '%{http_code}'` (--write-out), not wget's `-w SECONDS` (--wait): told by its format.
            if token.hasPrefix("-w"), !token.hasPrefix("--"),
               let format = token.count > 2 ? String(token.dropFirst(2)) : index < arguments.count ? arguments[index] : nil,
               format.contains("%") || format.contains("\\") {
                return .refused("-w FORMAT: \(writeOut)")
            }
            let name = token.split(separator: "=", maxSplits: 1).first.map(String.init) ?? token
            let get = isGetRequest(token, next: index < arguments.count ? arguments[index] : nil)
            if get.matches {
                if get.takesNext { index += 1 }
                continue
            }
            if token == "--no-cache" {
                result += noCacheHeaders
                continue
            }
            if ignoredWithValue.contains(name) {
                // `--file-allocation none`: its value goes too.
                if name == token { index += 1 }
                continue
            }
            if valueOptions.contains(token) {
                if token == "-e", index < arguments.count, isWgetCommand(arguments[index]) {
                    // Never sent as a Referer: `-e http_proxy=http://user:password@…` would hand the proxy's
                    // password to the server, and skip the proxy.
                    return .refused("-e: \(wgetCommands)")
                }
                if token == "--proxy" || token == "--all-proxy", index < arguments.count, arguments[index].isEmpty {
                    // curl's `--proxy ""`: no proxy, whatever the environment says.
                    result += ["--noproxy", "*"]
                    index += 1
                    continue
                }
                result.append(token)
                if index < arguments.count {
                    result.append(arguments[index])
                    index += 1
                }
                continue
            }
            if defaults.contains(token) { continue }
            if let replacement = rewrites[token] {
                result.append(replacement)
                continue
            }
            if token == "--proxy=" || token == "--all-proxy=" {
                result += ["--noproxy", "*"]
                continue
            }
            if token == "--auto-file-renaming=false", arguments.contains(where: isOutputOption) {
                // -o NAME renames nothing: a file already there is refused, as aria2c refuses it.
                continue
            }
            if let message = tokenRefusals[token] {
                return .refused("\(token): \(message)")
            }
            if let message = refusals[name], token.hasPrefix("-") {
                return .refused("\(name): \(message)")
            }
            if let expanded = expandCluster(token) {
                result += expanded
                continue
            }
            result.append(token)
        }
        return .arguments(result)
    }

    /// Whether `token` is `-o` (`--output`, `--out`, with its value or without).
    static func isOutputOption(_ token: String) -> Bool {
        ["-o", "--output", "--out"].contains(token) || token.hasPrefix("--output=") || token.hasPrefix("--out=")
    }

    /// Short options that take a value, which curl, wget and aria2c users also attach to the letter: `-x16`, `-j2`,
    /// `-ofile`, `-P/dir`, `-C-`, `-erobots=off`.
    static let attachableValueLetters: Set<Character> = ["o", "d", "P", "C", "H", "A", "e", "b", "s", "x", "u", "i", "j", "T"]

    /// `arguments` with each value attached to its letter given as a word of its own (`-x16` → `-x 16`), and wget's
    /// `-O-` (the file to standard output) as Haul's `-o -` (Haul's `-O` is curl's: the server's name). A value
    /// of an option, and everything after `--`, is left as it is.
    static func detachingValues(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var index = 0
        while index < arguments.count {
            let token = arguments[index]
            index += 1
            if token == "--" {
                result += arguments[(index - 1)...]
                break
            }
            if valueOptions.contains(token) {
                result.append(token)
                if index < arguments.count {
                    result.append(arguments[index])
                    index += 1
                }
                continue
            }
            if token.hasPrefix("-"), !token.hasPrefix("--"), token.count > 2, token.hasSuffix("O-"),
               token.dropFirst().dropLast(2).allSatisfy({ clusterFlags.contains($0) || clusterDefaults.contains($0) }) {
                // wget's `-O-`, also in a cluster: `-qO-`.
                result += token.dropFirst().dropLast(2).filter { !clusterDefaults.contains($0) }.map { $0 == "s" ? "--silent" : "-\($0)" }
                result += ["-o", "-"]
                continue
            }
            let isKnown = defaults.contains(token) || rewrites[token] != nil || refusals[token] != nil || expandCluster(token) != nil
            if !isKnown, token.hasPrefix("-"), !token.hasPrefix("--"), token.count > 2, let letter = token.dropFirst().first,
               attachableValueLetters.contains(letter) {
                result += ["-\(letter)", String(token.dropFirst(2))]
                continue
            }
            result.append(token)
        }
        return result
    }

    /// How many of `arguments` (the command's name first, values detached) are neither options nor their values.
    static func positionalCount(_ arguments: [String]) -> Int {
        var count = 0
        var index = 1
        while index < arguments.count {
            let token = arguments[index]
            index += 1
            if token == "--" { return count + arguments.count - index }
            if valueOptions.contains(token) {
                index += 1
            } else if !token.hasPrefix("-") || token == "-" {
                count += 1
            }
        }
        return count
    }

    /// Whether `value`, given to `-e`, is one of wget's `-e NAME=VALUE` commands rather than curl's Referer URL.
    static func isWgetCommand(_ value: String) -> Bool {
        guard let equals = value.firstIndex(of: "=") else { return false }
        let name = value[..<equals].filter { $0 != " " && $0 != "\t" }
        return !name.isEmpty && name.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "_" || $0 == "-" }
    }

    /// `-fsSL` as curl users write it: a cluster of single letters with at least one of the defaults, each of the
    /// others a flag of Haul's (`s` being curl's `--silent`). `nil` for any other token.
    static func expandCluster(_ token: String) -> [String]? {
        guard token.hasPrefix("-"), !token.hasPrefix("--"), token.count >= 3, !token.contains("=") else { return nil }
        // curl's `-o FILE` may end a cluster (`-fsSLo FILE`, `-so FILE`): the next word is its value.
        let output = token.hasSuffix("o")
        let letters = output ? token.dropFirst().dropLast() : token.dropFirst()
        guard letters.allSatisfy({ clusterDefaults.contains($0) || clusterFlags.contains($0) }),
              output || letters.contains(where: { clusterDefaults.contains($0) }) else { return nil }
        return letters.compactMap { letter in
            if clusterDefaults.contains(letter) { return nil }
            return letter == "s" ? "--silent" : "-\(letter)"
        } + (output ? ["-o"] : [])
    }
}
