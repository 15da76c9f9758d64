import ArgumentParser
import Foundation
import HaulKit
import PropertyBased
import Testing
@testable import haul

/// The typed option values (sizes, rates, counts, seconds, checksums) and the commands' `validate()`, in-process:
/// every spelling accepted before is accepted, and a refusal is the one line a person sees, naming the option.
@Suite struct TypedArgumentsTests {
    /// The line `haul` prints (after `haul: error: `) for `arguments` given to `Command`, or nil when they parse.
    static func refusal<Command: ParsableCommand>(_ command: Command.Type, _ arguments: [String]) -> String? {
        do {
            _ = try UsageError.parsing { try Command.parse(arguments) }
            return nil
        } catch let error as UsageError {
            return error.line
        } catch {
            return "not a usage error: \(error)"
        }
    }

    static func get(_ arguments: [String]) throws -> GetCommand {
        try UsageError.parsing { try GetCommand.parse(["http://127.0.0.1:9/f"] + arguments) }
    }

    // MARK: Sizes and rates

    /// curl's, wget's and aria2c's spellings of a size or rate (K = 1024), with what they mean.
    static let spellings: [(String, Int64)] = [
        ("65536", 65_536), ("500K", 500 * 1024), ("500k", 500 * 1024), ("2M", 2 << 20), ("2m", 2 << 20), ("1.5M", 3 << 19),
        ("2MiB", 2 << 20), ("2mib", 2 << 20), ("2MB", 2 << 20), ("1G", 1 << 30), ("1g", 1 << 30), ("1T", 1 << 40),
        ("2M/s", 2 << 20), ("2MiB/s", 2 << 20), ("500KB/s", 500 * 1024), ("100B", 100), ("100b/s", 100), ("0.5K", 512),
        (" 2M ", 2 << 20), ("1.5", 1),
    ]

    @Test(arguments: spellings)
    func everySizeAndRateSpellingIsAccepted(_ text: String, _ bytes: Int64) throws {
        #expect(try ByteCount(parsing: text).bytes == bytes)
        #expect(try ByteRate(parsing: text).bytesPerSecond == bytes)
        #expect(ByteRate(argument: text) == ByteRate(bytesPerSecond: bytes))
        let command = try Self.get(["--limit-rate", text, "--min-segment-size", text])
        #expect(command.file.limitRate == bytes)
        #expect(command.file.minSegmentSize?.bytes == bytes)
    }

    @Test(arguments: ["fast", "-1", "0", "", "1.2.3", "1e3", "inf", "10X", "K", "9999999T", "2 M"])
    func aSizeOrRateThatIsNoneIsRefusedWithTheParsersWords(_ text: String) throws {
        #expect(ByteRate(argument: text) == nil)
        #expect(ByteCount(argument: text) == nil)
        var expected = ""
        do { _ = try UserInput.byteCount(text) } catch { expected = error.message }
        #expect(!expected.isEmpty)
        if text == "0" {
            // As in curl, wget and aria2c: no limit.
            #expect(try Self.get(["--limit-rate", text]).file.limitRate == nil)
        } else {
            #expect(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f", "--limit-rate", text]) == "--limit-rate: \(expected)")
        }
        // Named as typed: aria2c's spelling of the option.
        #expect(Self.refusal(AddCommand.self, ["http://127.0.0.1:9/f", "--min-split-size", text]) == "--min-split-size: \(expected)")
    }

    /// A session name the daemon would refuse is refused before anything is sent, in one line naming the option.
    @Test(arguments: ["..", ".hidden", "a/b", "", String(repeating: "s", count: 101)])
    func aSessionNameTheDaemonWouldRefuseIsRefusedHere(_ name: String) {
        let refusal = Self.refusal(AddCommand.self, ["http://127.0.0.1:9/f", "--session", name, "--no-autostart"])
        #expect(refusal?.hasPrefix("--session: session identifier") == true, "\(String(describing: refusal))")
        #expect(refusal?.contains("not starting with '.'") == true)
    }

    /// Any number of K, M, G or T in any of the suffixes the tools write, in any letter case, is that many bytes.
    @Test func everyUnitAndSuffixMeansItsBytes() async {
        let suffixes = ["", "b", "ib", "/s", "b/s", "ib/s"]
        await propertyCheck(input: Gen.int(in: 1...100_000), Gen.int(in: 0...4), Gen.element(of: suffixes), Gen.bool) { number, power, suffix, upper in
            let unit = power == 0 ? "" : String(Array("kmgt")[power - 1])
            // `ib` belongs after a unit letter ("2MiB"); alone it is not a spelling any tool writes.
            let tail = power == 0 && (suffix ?? "").hasPrefix("i") ? "" : suffix ?? ""
            let text = "\(number)" + (upper ? (unit + tail).uppercased() : unit + tail)
            let expected = Int64(number) << (10 * power)
            #expect((try? ByteRate(parsing: text).bytesPerSecond) == expected, "\(text)")
        }
    }

    /// A size as haul prints it (`ByteFormat`: "1.5 MiB") reads back, without its space, as that size to the
    /// printed rounding.
    @Test func aPrintedSizeReadsBackAsItsSize() async {
        await propertyCheck(input: Gen.int(in: 0...50), Gen.int(in: 1...1_023)) { shift, factor in
            let bytes = Int64(factor) << shift
            let printed = ByteFormat.string(bytes)
            let read = try? ByteCount(parsing: printed.replacingOccurrences(of: " ", with: "")).bytes
            let unit = Int64(1) << (10 * (printed.hasSuffix(" B") ? 0 : ["KiB", "MiB", "GiB", "TiB"].firstIndex { printed.hasSuffix($0) }.map { $0 + 1 } ?? 0))
            #expect(read.map { abs($0 - bytes) <= unit / 20 + 1 } == true, "\(bytes) printed \(printed) read \(String(describing: read))")
        }
    }

    // MARK: Counts

    @Test func aria2cLettersTakeNumbersAndSayWhereCurlsMeaningIs() throws {
        let command = try Self.get(["-x", "4", "-s", "2"])
        #expect(command.file.connectionsPerHost == 4 && command.file.segments?.value == 2)
        let long = try Self.get(["--max-connection-per-server", "3", "--split", "5"])
        #expect(long.file.connectionsPerHost == 3 && long.file.segments?.value == 5)
        #expect(try Self.get([]).file.connectionsPerHost == FileOptions.defaultConnectionsPerHost)

        let silent = try #require(Self.refusal(GetCommand.self, ["-s", "http://127.0.0.1:9/f"]))
        #expect(silent.hasPrefix("-s/--segments takes a number") && silent.contains("use -q"), "\(silent)")
        let proxy = try #require(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f", "-x", "http://me:hunter2@proxy.example:3128"]))
        #expect(proxy.contains("--proxy HOST:PORT") && !proxy.contains("hunter2"), "\(proxy)")
    }

    @Test(arguments: [
        (["--segments", "0"], "--segments must be between 1 and 64"), (["-s", "65"], "--segments must be between 1 and 64"),
        (["-x", "0"], "--max-connections-per-host must be between 1 and 64"), (["--max-connections-per-host", "-1"], "--max-connections-per-host must be between 1 and 64"),
        (["--retries", "1001"], "--retries must be between 0 and 1000"), (["--retries", "-1"], "--retries must be between 0 and 1000"),
        (["--retry", "-2"], "--retry must be between 0 and 1000"), (["--tries", "1002"], "--tries must be between 0 and 1000"),
        (["--tries", "-1"], "--tries must be 0 (as many as haul allows) or more"), (["--tries", "2", "--retry", "3"], "give one of --retries, --retry and --tries"),
        (["--retry-wait", "-1"], "--retry-wait must be a number of seconds between 0 and 86400"),
        (["--retry-wait", "86401"], "--retry-wait must be a number of seconds between 0 and 86400"),
        (["-j", "0"], "-j must be between 1 and 64"), (["--jobs", "65"], "-j must be between 1 and 64"),
        (["--stall-timeout", "-0.5"], "--stall-timeout must be 0 (no limit) or a number of seconds up to 86400"),
        (["-T", "-1"], "-T/--timeout must be 0 (no limit) or a number of seconds up to 86400"),
        (["--max-time", "90000"], "--max-time must be 0 (no limit) or a number of seconds up to 86400"),
        (["--connect-timeout", "nan"], "--connect-timeout: \"nan\" is not a number of seconds (e.g. 30 or 0.5)"),
        (["-C", "100"], "-C 100: haul does not start at a given offset; use -C - (or --continue) to continue the -o file from its end"),
        (["-c", "--overwrite"], "use either --continue or --overwrite, not both"), (["-N", "-c"], "use either -N (--timestamping) or --continue, not both"),
        (["--quiet", "--json"], "use either --quiet or --json, not both"),
        (["--checksum", "sha256:xyz"], "--checksum: sha256 checksum must be 64 hex digits, got \"xyz\""),
    ])
    func aValueOutOfItsRangeIsOneLineNamingTheOption(_ arguments: [String], _ line: String) {
        #expect(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f"] + arguments) == line)
    }

    /// 0 is no limit, as curl's `-m 0` and `--connect-timeout 0` and wget's `-T 0` are: accepted, and no deadline.
    @Test(arguments: [
        (["-T", "0"], true, true), (["--timeout=0"], true, true), (["--stall-timeout", "0"], true, false),
        (["--connect-timeout", "0"], false, true), (["--max-time", "0"], false, false),
    ])
    func aZeroTimeoutIsNoLimit(_ arguments: [String], _ noStallLimit: Bool, _ noConnectLimit: Bool) throws {
        let command = try Self.get(arguments)
        #expect(command.maxTime == nil)
        #expect(command.stallTimeout == (noStallLimit ? Seconds.noLimit : Seconds(30)))
        #expect(command.connectTimeout == (noConnectLimit ? Seconds.noLimit : Seconds(30)))
        #expect(try Self.get(["--max-time", "2.5"]).maxTime == Seconds(2.5))
    }

    /// The ranges are the spec's: whatever the CLI accepts, the spec it makes accepts, and the bounds are the same.
    @Test func theCLIsRangesAreTheSpecs() throws {
        for segments in [DownloadSpec.segmentRange.lowerBound, DownloadSpec.segmentRange.upperBound] {
            #expect(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f", "-s", String(segments)]) == nil)
            #expect(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f", "-s", String(segments + (segments == 1 ? -1 : 1))]) != nil)
        }
        for hosts in [DownloadSpec.connectionsPerHostRange.lowerBound, DownloadSpec.connectionsPerHostRange.upperBound] {
            #expect(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f", "-x", String(hosts)]) == nil)
        }
        let most = try Self.get(["--tries", "0", "-x", "64", "-s", "64", "--retry-wait", "86400", "--limit-rate", "1"])
        #expect(most.file.retryCount == DownloadSpec.retryRange.upperBound)
        let spec = try most.file.makeSpec(entry: InputList.Entry(url: "http://127.0.0.1:9/f", line: 0), cookies: GivenCookies())
        try spec.validate()
        #expect(spec.maxRetries == 1000 && spec.segments == 64 && spec.maxConnectionsPerHost == 64 && spec.retryWait == 86_400 && spec.rateLimit == 1)
    }

    @Test func retriesTriesAndSecondsMeanWhatTheyDid() throws {
        #expect(try Self.get([]).file.retryCount == 5)
        #expect(try Self.get(["--retry", "2"]).file.retryCount == 2)
        #expect(try Self.get(["--tries", "3"]).file.retryCount == 2)
        #expect(try Self.get(["--max-tries", "1"]).file.retryCount == 0)
        let timed = try Self.get(["-T", "20", "--stall-timeout", "7.5", "--retry-wait", "0.05"])
        #expect(timed.stallTimeout.duration == .milliseconds(7_500) && timed.connectTimeout.duration == .seconds(20))
        #expect(timed.file.retryWait.duration == .milliseconds(50))
        let checked = try Self.get(["--checksum=sha-256=" + String(repeating: "AB", count: 32)])
        #expect(checked.file.checksum == Checksum(algorithm: .sha256, hex: String(repeating: "ab", count: 32)))
    }

    @Test func aProxyIsReadOnceAndItsRefusalHidesThePassword() throws {
        let command = try Self.get(["--proxy", "socks5h://me:pw@127.0.0.1:1080", "--noproxy", "localhost"])
        #expect(command.connection.proxy == (try ProxyEndpoint(parsing: "socks5h://me:pw@127.0.0.1:1080")))
        let refused = try #require(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f", "--all-proxy", "http://me:hunter2@proxy.example:99999"]))
        #expect(refused.hasPrefix("--all-proxy: ") && !refused.contains("hunter2"), "\(refused)")
        #expect(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f", "-4", "-6"]) == "use either -4 or -6, not both")
        #expect(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f", "--key", "k.pem"]) == "--key needs --cert: the certificate the key belongs to")
    }

    // MARK: Other commands

    @Test func sessionSetTakesARateOrNoneAndACountOrNone() throws {
        for word in ["none", "0", "off", "unlimited", "NONE"] {
            let command = try UsageError.parsing { try SessionSetCommand.parse(["--limit-rate", word]) }
            #expect(command.changes["rateLimit"] == JSONValue.null, "\(word)")
        }
        let limited = try UsageError.parsing { try SessionSetCommand.parse(["--limit-rate", "2M", "--fleet-max-per-host", "4", "--max-concurrent", "0"]) }
        #expect(limited.changes["rateLimit"] == JSONValue(Int64(2 << 20)))
        #expect(limited.changes["fleetMaxConnectionsPerHost"] == JSONValue(4))
        #expect(limited.changes["maxConcurrentDownloads"] == JSONValue(0))
        let unlimited = try UsageError.parsing { try SessionSetCommand.parse(["--fleet-max-per-host", "None"]) }
        #expect(unlimited.changes["fleetMaxConnectionsPerHost"] == JSONValue.null)

        #expect(Self.refusal(SessionSetCommand.self, ["--limit-rate", "-5"]) == "--limit-rate: \"-5\" is not a size or rate (e.g. 500K, 2M, 1.5G)")
        #expect(Self.refusal(SessionSetCommand.self, ["--fleet-max-per-host", "0"]) == "--fleet-max-per-host must be between 1 and 10000, or none")
        #expect(Self.refusal(SessionSetCommand.self, ["--fleet-max-per-host", "many"]) == "--fleet-max-per-host: \"many\" is neither a number nor none")
        #expect(Self.refusal(SessionSetCommand.self, ["--max-concurrent", "1001"]) == "--max-concurrent must be between 0 and 1000")
        #expect(Self.refusal(SessionSetCommand.self, [])?.hasPrefix("nothing to change") == true)
    }

    @Test func theDaemonsSecondsAndAddress() throws {
        let daemon = try UsageError.parsing { try DaemonCommand.parse(["--lease", "8", "--idle-exit", "600", "--web", "7711"]) }
        #expect(daemon.lease.duration == .seconds(8) && daemon.limits.idleExit == .seconds(600))
        #expect(daemon.web == ListenAddress(host: "127.0.0.1", port: 7711))
        #expect(try UsageError.parsing { try DaemonCommand.parse(["--web", "[::1]:8080"]) }.web == ListenAddress(host: "::1", port: 8080))
        #expect(Self.refusal(DaemonCommand.self, ["--lease", "1"]) == "--lease must be between 3 and 3600 seconds")
        #expect(Self.refusal(DaemonCommand.self, ["--idle-exit", "-1"]) == "--idle-exit must be between 0 (never) and 31536000 seconds")
        #expect(Self.refusal(DaemonCommand.self, ["--web", "localhost"]) == "--web takes [HOST:]PORT, e.g. 7711 or 127.0.0.1:7711")
        #expect(Self.refusal(WebCommand.self, ["--port", "0"]) == "--port must be between 1 and 65535")
        #expect(Self.refusal(AddCommand.self, ["http://127.0.0.1:9/f", "--priority", "-1000000001"]) == "--priority must be between -1000000000 and 1000000000")
    }

    /// What ArgumentParser finds itself is one line too, saying where the help is; a secret in it is not shown.
    @Test func theParsersOwnErrorsAreOneLine() throws {
        let unknown = try #require(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f", "--frobnicate"]))
        #expect(unknown.contains("--frobnicate") && unknown.contains("--help") && !unknown.contains("\n"), "\(unknown)")
        let count = try #require(Self.refusal(GetCommand.self, ["http://127.0.0.1:9/f", "--retries", "http://me:hunter2@x/"]))
        #expect(count.contains("--retries") && !count.contains("hunter2") && !count.contains("\n"), "\(count)")
    }
}
