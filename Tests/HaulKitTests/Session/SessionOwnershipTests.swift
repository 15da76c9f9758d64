import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// Sessions follow the destination-identity rule: a task for a re-signed URL of the same file continues the
/// bytes an earlier task left at that destination; a task for another file there fails and leaves them alone.
@Suite struct SessionOwnershipTests {
    func interruptedTask(_ server: TestServer, _ sandbox: Sandbox, body: [UInt8]) async throws -> DownloadSession {
        var dropping = Resource(body: body, etag: "\"same\"")
        dropping.faults.dropAfterBytes = 400_000
        dropping.faults.dropOnRequests = .max
        server.serve("/obj", dropping)
        var configuration = sessionConfiguration(sandbox)
        configuration.retry = RetryPolicy(maxRetries: 0, baseDelay: .milliseconds(10), maxDelay: .milliseconds(10))
        let session = try await DownloadSession(identifier: "owners", configuration: configuration)
        let first = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/obj")), destination: .file(sandbox.path("f"))))
        try await waitFor("the first task to fail with bytes held") {
            try await session.tasks().first { $0.id == first.id }?.state == .failed
        }
        #expect(sandbox.exists("f.haul-part"))
        return session
    }

    @Test func aReSignedURLTaskContinuesTheBytesHeld() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(1 << 20, seed: 140)
            let session = try await interruptedTask(server, sandbox, body: body)
            server.serve("/obj", Resource(body: body, etag: "\"same\""))
            let resigned = try UserInput.url(server.url("/obj") + "?signature=new")
            let second = try await session.add(DownloadRequest(url: resigned, destination: .file(sandbox.path("f"))))
            try await waitFor("the re-signed task to finish") {
                try await session.tasks().first { $0.id == second.id }?.state == .finished
            }
            await session.close()
            #expect(sandbox.contents("f") == body)
            let resumed = server.requests("/obj").filter { $0.uri.contains("signature=new") }
            #expect(resumed.first?.header("Range") != nil, "the re-signed URL started over")
        }
    }

    @Test func aTaskForAnotherFileAtTheSameDestinationFailsAndLeavesTheBytes() async throws {
        try await withHarness { server, _, sandbox in
            let body = TestData.bytes(1 << 20, seed: 141)
            let session = try await interruptedTask(server, sandbox, body: body)
            guard let held = sandbox.contents("f.haul-part") else {
                await session.close()
                Issue.record("the first task left no partial file")
                return
            }
            server.serve("/other", Resource(body: TestData.bytes(1 << 20, seed: 142), etag: "\"other\""))
            let second = try await session.add(DownloadRequest(url: try UserInput.url(server.url("/other")), destination: .file(sandbox.path("f"))))
            try await waitFor("the other file's task to fail") {
                try await session.tasks().first { $0.id == second.id }?.state == .failed
            }
            let failed = try await session.tasks().first { $0.id == second.id }
            await session.close()
            #expect(failed?.error?.kind == .usage)
            #expect(failed?.error?.message.contains(server.url("/obj")) == true, "\(failed?.error?.message ?? "")")
            #expect(sandbox.contents("f.haul-part") == held)
            #expect(!sandbox.exists("f"))
        }
    }
}
