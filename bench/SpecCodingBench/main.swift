// Issue 28 asks whether a download spec's JSON should be synthesized `Codable` rather than written by hand, unless the
// synthesized coding costs more than 2% of a 3,000-file batch. This measures both on the texts a session stores:
// the hand-written path (HaulKit's JSON parser and `DownloadSpec(json:)`, `spec.json.serialized`) against a mirror of
// the same JSON shape whose `Codable` is synthesized, read and written by Foundation's JSONDecoder and JSONEncoder
// (and made into a `DownloadSpec` and validated, as the hand-written path does).
//
// Usage: swift build -c release --product haul-spec-coding-bench && .build/release/haul-spec-coding-bench [count]
import Foundation
import HaulCore
import HaulKit

struct SynthesizedSpec: Codable {
    struct Header: Codable { var name: String; var value: String }
    struct Proxy: Codable { var url: String?; var noProxy: String?; var environment: [String: String]? }
    struct Trust: Codable {
        var caFile: String?; var caDirectory: String?; var insecure: Bool?; var clientCertificate: String?; var clientKey: String?
    }
    struct Login: Codable { var user: String; var password: String }
    struct CookieMembers: Codable {
        var domain: String; var subdomains: Bool; var path: String; var secure: Bool; var expires: Int64; var name: String; var value: String
    }
    struct Options: Codable {
        var overwrite: Bool?; var `continue`: Bool?; var rateLimit: Int64?; var retries: Int?; var retryWait: Double?
        var minSegmentSize: Int64?; var maxConnectionsPerHost: Int?; var allowInsecureRedirects: Bool?; var remoteTime: Bool?
        var completionCommand: String?; var proxy: Proxy?; var tls: Trust?; var proxyTunnel: Bool?; var ipFamily: String?
        var timestamping: Bool?; var cookies: [CookieMembers]?; var credentials: Login?
    }
    var url: URL
    var path: String?
    var directory: String?
    var headers: [Header]?
    var checksum: String?
    var segments: Int?
    var options: Options?

    var spec: DownloadSpec {
        get throws {
            var spec = DownloadSpec(url: url, destination: path.map { .file($0) } ?? directory.map { .directory($0) })
            for header in headers ?? [] { spec.headers.append(header.name, header.value) }
            if let checksum { spec.checksum = try Checksum(parsing: checksum) }
            spec.segments = segments
            if let options {
                spec.overwrite = options.overwrite ?? false
                spec.continuePartial = options.continue ?? false
                spec.rateLimit = options.rateLimit
                spec.maxRetries = options.retries
                spec.retryWait = options.retryWait
                spec.minSegmentSize = options.minSegmentSize
                spec.maxConnectionsPerHost = options.maxConnectionsPerHost
                spec.allowInsecureRedirects = options.allowInsecureRedirects ?? false
                spec.keepsRemoteTime = options.remoteTime
                spec.completionCommand = options.completionCommand
                spec.proxyTunnel = options.proxyTunnel ?? false
                spec.timestamping = options.timestamping ?? false
            }
            try spec.validate()
            return spec
        }
    }
}

let count = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 20_000
var plain = DownloadSpec(url: URL(string: "http://127.0.0.1:8080/tiny/12345.bin")!, destination: .directory("/home/user/data/downloads"))
var rich = plain
rich.headers.append("Referer", "https://example.com/page")
rich.headers.append("Accept", "*/*")
rich.checksum = try Checksum(parsing: "sha256:" + String(repeating: "ab", count: 32))
rich.maxRetries = 3
rich.rateLimit = 1 << 20
rich.keepsRemoteTime = false
rich.timestamping = false

func measure(_ name: String, _ body: () throws -> Void) rethrows -> Double {
    try body()    // warm up
    let clock = ContinuousClock()
    let start = clock.now
    for _ in 0..<count { try body() }
    let elapsed = clock.now - start
    let micros = Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12
    let each = micros / Double(count)
    print("  \(name): \(String(format: "%.1f", each)) µs")
    return each
}

print("# \(count) specs each, \(ProcessInfo.processInfo.processorCount) cores")
for (name, spec) in [("plain (URL and folder)", plain), ("rich (headers, checksum, options)", rich)] {
    let text = SpecColumn.encode(spec)
    let data = Data(text.utf8)
    print("\n## \(name): \(text.utf8.count) bytes")
    let decoder = JSONDecoder()
    let encoder = JSONEncoder()
    let mirror = try decoder.decode(SynthesizedSpec.self, from: data)
    guard try mirror.spec == spec, DownloadSpec.parse(text) == spec else { fatalError("the two paths read different specs") }
    let handRead = measure("read, hand-written") { _ = DownloadSpec.parse(text) }
    let synthesizedRead = try measure("read, synthesized Codable") { _ = try decoder.decode(SynthesizedSpec.self, from: data).spec }
    let handWrite = measure("write, hand-written") { _ = SpecColumn.encode(spec) }
    let synthesizedWrite = try measure("write, synthesized Codable") { _ = try encoder.encode(mirror) }
    print("  synthesized − hand-written per file (one write, one read): \(String(format: "%.1f", synthesizedRead + synthesizedWrite - handRead - handWrite)) µs")
}
