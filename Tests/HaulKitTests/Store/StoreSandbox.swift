import Foundation
@testable import HaulCore
@testable import HaulKit

/// A fresh folder for one store test, removed when the test ends.
final class StoreSandbox {
    let root: String

    init() {
        root = NSTemporaryDirectory() + "haul-store-test-" + UUID().uuidString
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// The path of a store file inside a nested folder that does not exist yet.
    var storePath: String { root + "/sessions/s1/tasks.sqlite" }

    func newTask(_ n: Int, id: String? = nil, priority: Int = 0) -> DownloadRequest {
        let spec = DownloadSpec(url: URL(string: "https://example.com/files/\(n).bin")!, destination: .directory(root + "/downloads"))
        return DownloadRequest(spec, priority: priority, id: id)
    }

    func writeFile(_ path: String, _ bytes: [UInt8]) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw CocoaError(.fileWriteUnknown)
        }
    }

    /// The HaulError a call throws, or `nil` when it succeeds or throws something else.
    static func thrown<T>(_ body: () throws -> T) -> HaulError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? HaulError
        }
    }
}
