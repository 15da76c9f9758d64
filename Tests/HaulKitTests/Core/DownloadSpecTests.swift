import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite("DownloadSpec: one description of a download")
struct DownloadSpecTests {
    let url = URL(string: "https://example.com/a.iso")!

    @Test func everyValueIsCheckedAndTheMessageNamesIt() {
        var spec = DownloadSpec(url: url, destination: .file("/d/a.iso"))
        #expect(throws: Never.self) { try spec.validate() }
        let cases: [(WritableKeyPath<DownloadSpec, Int?>, Int, String)] = [
            (\.segments, 0, "segments"), (\.segments, 65, "segments"), (\.maxRetries, -1, "retries"),
            (\.maxRetries, 1001, "retries"), (\.maxConnectionsPerHost, 0, "connections per host"),
        ]
        for (member, value, fragment) in cases {
            var bad = spec
            bad[keyPath: member] = value
            #expect(throws: InputError.self) { try bad.validate() }
            do { try bad.validate() } catch { #expect(error.message.contains(fragment), "\(error.message)") }
        }
        spec.rateLimit = 0
        #expect(throws: InputError.self) { try spec.validate() }
        spec.rateLimit = nil
        spec.retryWait = .infinity
        #expect(throws: InputError.self) { try spec.validate() }
        spec.retryWait = nil
        spec.completionCommand = ""
        #expect(throws: InputError.self) { try spec.validate() }
        spec.completionCommand = nil
        spec.overwrite = true
        spec.continuePartial = true
        #expect(throws: InputError("use either continuePartial or overwrite, not both")) { try spec.validate() }
        spec.overwrite = false
        spec.destination = .directory("/d")
        #expect(throws: InputError.self) { try spec.validate() }
    }

    /// Headers from any source (the protocol, the dashboard) are checked as `-H` checks them: none of those Haul
    /// sends itself, no field name that is not a token, no control character.
    @Test func headersAreCheckedWhereverTheSpecComesFrom() {
        for (name, value) in [("Range", "bytes=0-"), ("if-range", "\"x\""), ("Connection", "close"), ("Content-Length", "1"),
                              ("Bad Name", "v"), ("X-A", "a\u{1}b")] {
            var spec = DownloadSpec(url: url, destination: .file("/d/a.iso"))
            spec.headers = HTTPFields([HTTPFields.Field(name: name, value: value)])
            #expect(throws: InputError.self, "\(name)") { try spec.validate() }
        }
        var fine = DownloadSpec(url: url, destination: .file("/d/a.iso"))
        fine.headers = HTTPFields([HTTPFields.Field(name: "X-Token", value: "abc"), HTTPFields.Field(name: "Referer", value: "https://r/")])
        #expect(throws: Never.self) { try fine.validate() }
    }

    @Test func anchoringMakesPathsAbsoluteAndFillsTheDefaultFolder() {
        let absolute = { (path: String) in path.hasPrefix("/") ? path : "/work/" + path }
        var spec = DownloadSpec(url: url)
        #expect(spec.anchored(defaultDirectory: "downloads", absolute).destination == .directory("/work/downloads"))
        spec.destination = .file("a.iso")
        spec.tls = TLSTrust(caFile: "ca.pem", clientCertificate: "/c.pem", clientKey: "k.pem")
        let anchored = spec.anchored(defaultDirectory: "downloads", absolute)
        #expect(anchored.destination == .file("/work/a.iso"))
        #expect(anchored.tls == TLSTrust(caFile: "/work/ca.pem", clientCertificate: "/c.pem", clientKey: "/work/k.pem"))
        spec.destination = .standardOutput
        #expect(spec.anchored(defaultDirectory: "downloads", absolute).destination == .standardOutput)
    }

    /// The one merge: what the spec says wins, else the session's defaults, else the engine's.
    @Test func mergingWithDefaultsLetsTheSpecWin() {
        var defaults = DownloadDefaults()
        defaults.directory = "/downloads"
        defaults.headers = ["Accept": "*/*", "X-Session": "s"]
        defaults.retry = RetryPolicy(maxRetries: 9, baseDelay: .seconds(3))
        defaults.progressInterval = .milliseconds(100)

        let plain = DownloadOptions(DownloadSpec(url: url), defaults: defaults)
        #expect(plain.destination == .directory("/downloads"))
        #expect(plain.headers.fields == [HTTPFields.Field(name: "Accept", value: "*/*"), HTTPFields.Field(name: "X-Session", value: "s")])
        #expect(plain.retry.maxRetries == 9 && plain.retry.baseDelay == .seconds(3))
        #expect(plain.keepsRemoteTime && !plain.overwrite && plain.maxConnectionsPerHost == 8 && plain.minSegmentSize == 1 << 20)
        #expect(plain.progressInterval == .milliseconds(100))

        var spec = DownloadSpec(url: url, destination: .file("/d/a.iso"))
        spec.headers = ["accept": "text/html"]
        spec.maxRetries = 1
        spec.retryWait = 0.5
        spec.keepsRemoteTime = false
        spec.maxConnectionsPerHost = 2
        spec.minSegmentSize = 4096
        spec.overwrite = true
        spec.segments = 3
        spec.rateLimit = 1000
        spec.credentials = Credentials(user: "u", password: "p")
        let merged = DownloadOptions(spec, defaults: defaults)
        #expect(merged.destination == .file("/d/a.iso"))
        #expect(merged.headers.fields == [HTTPFields.Field(name: "X-Session", value: "s"), HTTPFields.Field(name: "accept", value: "text/html")])
        #expect(merged.retry.maxRetries == 1 && merged.retry.baseDelay == .milliseconds(500) && merged.retry.maxDelay == defaults.retry.maxDelay)
        #expect(!merged.keepsRemoteTime && merged.overwrite && merged.segments == 3 && merged.rateLimit == 1000)
        #expect(merged.maxConnectionsPerHost == 2 && merged.minSegmentSize == 4096 && merged.credentials == spec.credentials)
    }

    @Test func theJSONShapeRoundTripsThroughCodable() throws {
        var spec = DownloadSpec(url: url, destination: .directory("/d"))
        #expect(String(decoding: try JSONEncoder().encode(spec), as: UTF8.self).contains("options") == false)
        spec.headers = ["X-A": "1"]
        spec.checksum = try Checksum(parsing: "md5:" + String(repeating: "0", count: 32))
        spec.maxRetries = 0
        spec.proxies = ProxyChoice(explicit: try ProxyEndpoint(parsing: "http://proxy:3128"))
        let data = try JSONEncoder().encode(spec)
        #expect(try JSONDecoder().decode(DownloadSpec.self, from: data) == spec)
        #expect(SpecColumn.decode(String(decoding: data, as: UTF8.self)) == spec)
        #expect(throws: (any Error).self) { try JSONDecoder().decode(DownloadSpec.self, from: Data(#"{"url":"ftp://x/y"}"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(DownloadSpec.self, from: Data("[1]".utf8)) }
    }
}

@Suite("DownloadSpec: confined below a folder")
struct ConfinedSpecTests {
    let url = URL(string: "https://example.com/a.iso")!

    /// A list's dir=/out= travels with the spec (to the daemon, into a session's store); a spec stored before it
    /// existed reads as unconfined.
    @Test func theConfiningFolderRoundTripsAndOldSpecsReadWithout() throws {
        var spec = DownloadSpec(url: url, destination: .file("/d/sub/a.iso"))
        spec.confinedTo = "/d"
        let data = try JSONEncoder().encode(spec)
        #expect(String(decoding: data, as: UTF8.self).contains(#""confinedTo":"\/d""#) || String(decoding: data, as: UTF8.self).contains(#""confinedTo":"/d""#))
        #expect(try JSONDecoder().decode(DownloadSpec.self, from: data) == spec)
        #expect(SpecColumn.decode(String(decoding: data, as: UTF8.self)) == spec)
        let old = try JSONDecoder().decode(DownloadSpec.self, from: Data(#"{"url":"https://example.com/a.iso","path":"/d/sub/a.iso"}"#.utf8))
        #expect(old.confinedTo == nil && old.destination == .file("/d/sub/a.iso"))
        #expect(DownloadOptions(spec).confinedTo == "/d" && DownloadOptions(old).confinedTo == nil)
    }

    @Test func theDestinationMustLieBelowTheConfiningFolder() {
        for (destination, root) in [(DownloadSpec.Destination.file("/d/a.iso"), "/d"), (.file("/d/x/y/a.iso"), "/d"), (.directory("/d"), "/d"),
                                    (.directory("/d/x"), "/d/")] {
            var spec = DownloadSpec(url: url, destination: destination)
            spec.confinedTo = root
            #expect(throws: Never.self, "\(destination) below \(root)") { try spec.validate() }
        }
        for (destination, root) in [(DownloadSpec.Destination.file("/e/a.iso"), "/d"), (.file("/d/../e/a.iso"), "/d"), (.file("/dx/a.iso"), "/d"),
                                    (.directory("/"), "/d"), (.standardOutput, "/d"), (.file("/d/a"), "/d\u{0}")] {
            var spec = DownloadSpec(url: url, destination: destination)
            spec.confinedTo = root
            #expect(throws: InputError.self, "\(destination) below \(root)") { try spec.validate() }
        }
    }

    @Test func anchoringMakesTheConfiningFolderAbsolute() {
        var spec = DownloadSpec(url: url, destination: .file("dl/sub/a.iso"))
        spec.confinedTo = "dl"
        let anchored = spec.anchored(defaultDirectory: ".") { $0.hasPrefix("/") ? $0 : "/work/" + $0 }
        #expect(anchored.confinedTo == "/work/dl" && anchored.destination == .file("/work/dl/sub/a.iso"))
    }
}

@Suite("Paths with a NUL byte, and who may set a command")
struct NULPathAndCommandTests {
    let url = URL(string: "https://example.com/a.iso")!

    @Test func aPathWithANULByteIsRefused() {
        for destination: DownloadSpec.Destination in [.file("/d/a\u{0}b"), .directory("/d\u{0}/x")] {
            let spec = DownloadSpec(url: url, destination: destination)
            #expect(throws: InputError.self) { try spec.validate() }
        }
        var spec = DownloadSpec(url: url, destination: .file("/d/a"))
        spec.tls = TLSTrust(caFile: "/ca\u{0}.pem")
        #expect(throws: InputError("the path of --cacert has a NUL byte in it")) { try spec.validate() }
    }

    @Test func onlyTheOwnerOrAnAllowedDashboardSetsCommands() {
        #expect(DaemonCaller.owner.commandRefusal(setsCommand: true) == nil)
        #expect(DaemonCaller.dashboard(commandsAllowed: true).commandRefusal(setsCommand: true) == nil)
        #expect(DaemonCaller.dashboard(commandsAllowed: false).commandRefusal(setsCommand: false) == nil)
        let refusal = DaemonCaller.dashboard(commandsAllowed: false).commandRefusal(setsCommand: true)
        #expect(refusal?.contains("--web-allow-commands") == true, "\(refusal ?? "")")
    }
}
