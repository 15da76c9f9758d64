import Crypto
import Foundation
import HaulTestSupport

/// Runs `body` with a fresh in-process `TestServer`, shut down afterwards (also when `body` throws).
func withTestServer<T>(_ body: (TestServer) async throws -> T) async throws -> T {
    let server = try await TestServer.start()
    do {
        let result = try await body(server)
        try? await server.shutdown()
        return result
    } catch {
        try? await server.shutdown()
        throw error
    }
}

/// nil when the file at `path` holds exactly `expected`; otherwise what differs (short, never the bytes).
func contentMismatch(_ path: String, expected: [UInt8]) -> String? {
    guard let actual = readBytes(path) else { return "\(path) does not exist" }
    // memcmp: a generic element-wise == on tens of MiB is slow in a debug build and would hog a test thread.
    let equal = actual.count == expected.count && actual.withUnsafeBytes { a in
        expected.withUnsafeBytes { b in a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
    }
    if equal { return nil }
    let common = min(actual.count, expected.count)
    let first = (0..<common).first { actual[$0] != expected[$0] } ?? common
    return "\(path) has \(actual.count) bytes, expected \(expected.count); first difference at byte \(first)"
}

func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

/// The first byte a resume of `held` bytes asks for: the last bytes held again (up to 64 KiB), compared before
/// anything is appended, whatever the validators say.
func resumeStart(_ held: Int) -> Int { held - min(held, 65536) }
