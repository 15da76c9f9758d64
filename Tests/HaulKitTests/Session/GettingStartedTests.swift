import Crypto
import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// The DocC Getting Started article's in-process snippets, as printed there (each between markers), run in order
/// against the test server; the article must show each block as it is here.
@Suite struct GettingStartedTests {
    @Test func theArticlesSnippetsRunAndTheArticleShowsThem() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(150_000, seed: 91)
            server.serve("/big.iso", Resource(body: body, etag: "\"g\""))
            server.serve("/more.iso", Resource(body: [4, 5, 6]))
            let bigURL = server.url("/big.iso")
            let bigSum = "sha256:" + SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
            let downloads = sandbox.files
            let printed = Printed()
            func print(_ items: Any...) { printed.append(items.map { "\($0)" }.joined(separator: " ")) }

            // DOCC-BEGIN
            var configuration = SessionConfiguration()
            configuration.maxConcurrentDownloads = 3
            configuration.defaultDirectory = downloads
            // DOCC-END
            configuration.home = sandbox.home
            // DOCC-BEGIN
            let session = try await DownloadSession(identifier: "my-app", configuration: configuration)
            // DOCC-END
            // DOCC-BEGIN
            var request = DownloadRequest(url: try UserInput.url(bigURL))
            request.id = "big-iso"          // optional; adding the same id again returns the existing task
            request.priority = 10           // higher runs first, then first in first out
            request.checksum = try Checksum(parsing: bigSum)
            let task = try await session.add(request)
            // DOCC-END
            // DOCC-BEGIN
            let file = try await session.result(for: task.id)
            // DOCC-END
            #expect(file.path == sandbox.path("big.iso"))
            #expect(sandbox.contents("big.iso") == body)

            // result(for:)'s own stream is gone before the article's loop subscribes.
            try await waitFor("result's stream to close") { await session.subscriberCount == 0 }
            let observer = Task {
                // DOCC-BEGIN
                for await event in await session.events() {
                    switch event {
                    case .finished(let task): print("saved", task.filePath ?? "")
                    case .failed(let task): print("failed:", task.error?.message ?? "")
                    case .allFinished: print("done")
                    default: break
                    }
                }
                // DOCC-END
            }
            // The stream exists before the next task is added (the article says to make it first).
            try await waitFor("the observer to subscribe") { await session.subscriberCount == 1 }
            _ = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/more.iso"))))
            try await waitFor("the observer to see the queue drain") { printed.lines.contains("done") }
            await session.close()
            await observer.value
            #expect(printed.lines.contains("saved \(sandbox.path("more.iso"))"), "\(printed.lines)")

            try expectArticleShowsSnippets(replacing: [
                "downloads": "\"/data/downloads\"", "bigURL": "\"https://example.com/big.iso\"", "bigSum": "\"sha256:…\"",
            ])
        }
    }

    /// Every block between the markers of this file, its variables written as the article writes them, is in the
    /// article verbatim.
    func expectArticleShowsSnippets(replacing names: [String: String]) throws {
        let source = try String(contentsOfFile: #filePath, encoding: .utf8).components(separatedBy: "\n")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let article = try String(contentsOfFile: root.appendingPathComponent("Sources/HaulKit/HaulKit.docc/GettingStarted.md").path, encoding: .utf8)
        var blocks = 0
        var index = 0
        while index < source.count {
            guard source[index].hasSuffix("// DOCC-" + "BEGIN") else { index += 1; continue }
            let indent = source[index].prefix { $0 == " " }.count
            var lines: [String] = []
            index += 1
            while index < source.count, !source[index].hasSuffix("// DOCC-" + "END") {
                lines.append(String(source[index].dropFirst(indent)))
                index += 1
            }
            var block = lines.joined(separator: "\n")
            for (name, literal) in names {
                block = block.replacingOccurrences(of: "\\b\(name)\\b", with: literal, options: .regularExpression)
            }
            #expect(article.contains(block), "GettingStarted.md must show:\n\(block)")
            blocks += 1
        }
        #expect(blocks == 5)
    }
}

/// What the snippets print, collected.
private final class Printed: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    var lines: [String] { lock.withLock { storage } }
    func append(_ line: String) { lock.withLock { storage.append(line) } }
}
