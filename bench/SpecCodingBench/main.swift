// Issue 28 asked whether a download spec's JSON should be synthesized `Codable` rather than written by hand, unless the
// synthesized coding costs more than 2% of a 3,000-file batch. Measured then (bench/README.md), it did not, and the
// hand-written JSON went: a spec's `Codable` (its settings' synthesized) is the one coding. This measures it as it is
// used, per spec: a session store's column (Foundation's JSONEncoder and JSONDecoder, `SpecColumn`) and the protocol's
// path (HaulKit's JSON parser, `JSONValueDecoder`, `JSONValueEncoder`).
//
// Usage: swift build -c release --product haul-spec-coding-bench && .build/release/haul-spec-coding-bench [count]
import Foundation
import HaulCore
import HaulKit

let count = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 20_000
guard let address = URL(string: "http://127.0.0.1:8080/tiny/12345.bin") else { fatalError("the bench's URL") }
let plain = DownloadSpec(url: address, destination: .directory("/home/user/data/downloads"))
var rich = plain
rich.headers.append("Referer", "https://example.com/page")
rich.headers.append("Accept", "*/*")
rich.checksum = try Checksum(parsing: "sha256:" + String(repeating: "ab", count: 32))
rich.maxRetries = 3
rich.rateLimit = 1 << 20
rich.keepsRemoteTime = false

func measure(_ name: String, _ body: () throws -> Void) rethrows {
    try body()    // warm up
    let clock = ContinuousClock()
    let start = clock.now
    for _ in 0..<count { try body() }
    let elapsed = clock.now - start
    let micros = Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12
    print("  \(name): \(String(format: "%.1f", micros / Double(count))) µs")
}

print("# \(count) specs each, \(ProcessInfo.processInfo.processorCount) cores")
for (name, spec) in [("plain (URL and folder)", plain), ("rich (headers, checksum, options)", rich)] {
    let text = SpecColumn.encode(spec)
    let wire = Array(spec.json.serialized.utf8)
    print("\n## \(name): \(text.utf8.count) bytes")
    guard SpecColumn.decode(text) == spec,
          let parsed = JSONValue.parse(wire), try JSONValueDecoder.decode(DownloadSpec.self, from: parsed) == spec else {
        fatalError("a path reads another spec than it wrote")
    }
    measure("store column, read") { _ = SpecColumn.decode(text) }
    measure("store column, write") { _ = SpecColumn.encode(spec) }
    try measure("protocol, read") {
        guard let value = JSONValue.parse(wire) else { return }
        _ = try JSONValueDecoder.decode(DownloadSpec.self, from: value)
    }
    measure("protocol, write") { _ = spec.json.serialized }
}
