import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// An engine renews its HTTP client after `originsPerClient` origins, so that a list over many hosts does not keep a
/// connection pool per host for the engine's life; a request still running on a retired client is never cut off.
@Suite struct ClientGenerationsIntegrationTests {
    @Test func aDownloadRunningOnARetiredClientEndsExactAndTheClientIsThenShutDown() async throws {
        let servers = [try await TestServer.start(), try await TestServer.start(), try await TestServer.start()]
        let sandbox = try Sandbox()
        var configuration = TransferEngine.Configuration()
        configuration.connectTimeout = .seconds(5)
        configuration.originsPerClient = 1
        let engine = TransferEngine(home: sandbox.home, configuration: configuration)
        defer { sandbox.remove() }

        // A slow download from the first origin (300 KB at 60 KB/s: about 5 s), then one from each other origin:
        // each of those starts a new client, and the first one's client is retired while it runs.
        let slow = TestData.bytes(300_000, seed: 71)
        var paced = Resource(body: slow, etag: "\"slow\"")
        paced.faults.throttleBytesPerSecond = 60_000
        servers[0].serve("/slow", paced)
        let slowDownload = Task { try await engine.download(try testOptions(servers[0].url("/slow"), .file(sandbox.path("slow")))) }
        try await waitFor("the slow request") { servers[0].requests("/slow").count >= 1 }

        for (index, server) in servers.enumerated().dropFirst() {
            let body = TestData.bytes(20_000, seed: UInt64(80 + index))
            server.serve("/small", Resource(body: body, etag: "\"s\(index)\""))
            let result = try await engine.download(try testOptions(server.url("/small"), .file(sandbox.path("small\(index)"))))
            #expect(result.bytes == Int64(body.count))
            #expect(sandbox.contents("small\(index)") == body)
        }
        // The second origin's client served no request any more: shut down. The first one's is kept while its
        // download runs (when it is still running now), and the third is current.
        try await waitFor("the second client shut down") { engine.clients.all.count <= 2 }

        let result = try await slowDownload.value
        #expect(result.bytes == Int64(slow.count))
        #expect(sandbox.contents("slow") == slow)
        // One request: the retired client was not shut down under it (a cut request would have been retried).
        #expect(servers[0].requests("/slow").count == 1)
        try await waitFor("only the current client left") { engine.clients.all.count == 1 }

        // A later download from the first origin starts a new client (one origin each), and the last one is shut down.
        let again = TestData.bytes(10_000, seed: 90)
        servers[0].serve("/again", Resource(body: again, etag: "\"again\""))
        _ = try await engine.download(try testOptions(servers[0].url("/again"), .file(sandbox.path("again"))))
        #expect(sandbox.contents("again") == again)
        try await waitFor("again only the current client left") { engine.clients.all.count == 1 }

        try await engine.shutdown()
        for server in servers { try await server.shutdown() }
    }
}
