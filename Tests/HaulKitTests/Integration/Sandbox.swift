import Foundation
import HaulTestSupport
import Testing
@testable import HaulCore
@testable import HaulKit

/// A fresh folder for one test's downloads and HAUL_HOME, removed afterwards.
struct Sandbox {
    let root: String
    var home: HaulHome { HaulHome(path: root + "/home") }

    init() throws {
        root = NSTemporaryDirectory() + "haul-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root + "/files", withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { root + "/files/" + name }
    var files: String { root + "/files" }

    func contents(_ name: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path(name)).map { Array($0) }
    }

    func write(_ bytes: [UInt8], to name: String) {
        FileManager.default.createFile(atPath: path(name), contents: Data(bytes))
    }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path(name)) }

    func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: files)) ?? []).sorted()
    }

    func records() -> [TransferRecord] {
        let directory = home.transfersPath
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".json") }.compactMap {
            FileManager.default.contents(atPath: directory + "/" + $0).flatMap { try? JSONDecoder().decode(TransferRecord.self, from: $0) }
        }
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

/// Collects a download's events from any thread.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [DownloadEvent] = []
    private var onEvent: (@Sendable (DownloadEvent) -> Void)?

    init(onEvent: (@Sendable (DownloadEvent) -> Void)? = nil) { self.onEvent = onEvent }

    func append(_ event: DownloadEvent) {
        lock.lock()
        storage.append(event)
        let hook = onEvent
        lock.unlock()
        hook?(event)
    }

    var events: [DownloadEvent] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }

    /// Every segment of every progress report so far, in order.
    var segments: [Segment] {
        events.flatMap { if case .progress(let progress) = $0 { return progress.segments ?? [] } else { return [] } }
    }

    var restarts: [String] { events.compactMap { if case .restarted(let why) = $0 { return why } else { return nil } } }
    var retries: [(Int, Duration, String)] {
        events.compactMap { if case .retrying(let n, _, let d, let why) = $0 { return (n, d, why) } else { return nil } }
    }
}

/// Runs `body` with a started test server, an engine and a sandbox, tearing all down afterwards.
func withHarness(
    stallTimeout: Duration = .seconds(10),
    _ body: (TestServer, TransferEngine, Sandbox) async throws -> Void
) async throws {
    let server = try await TestServer.start()
    let sandbox = try Sandbox()
    var configuration = TransferEngine.Configuration()
    configuration.stallTimeout = stallTimeout
    configuration.connectTimeout = .seconds(5)
    let engine = TransferEngine(home: sandbox.home, configuration: configuration)
    do {
        try await body(server, engine, sandbox)
    } catch {
        try? await engine.shutdown()
        try? await server.shutdown()
        sandbox.remove()
        throw error
    }
    try await engine.shutdown()
    try await server.shutdown()
    sandbox.remove()
}

/// Options for tests: quick retries, frequent checkpoints.
func testOptions(_ url: String, _ destination: DownloadOptions.Destination, retries: Int = 5) throws -> DownloadOptions {
    var options = DownloadOptions(url: try UserInput.url(url), destination: destination)
    options.retry = RetryPolicy(maxRetries: retries, baseDelay: .milliseconds(10), maxDelay: .milliseconds(200))
    options.checkpointBytes = 64 * 1024
    options.checkpointInterval = .milliseconds(50)
    return options
}

/// Expects `body` to throw a ``HaulError`` of `kind` and returns it.
@discardableResult
func expectHaulError(_ kind: HaulError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async -> HaulError? {
    do {
        try await body()
        Issue.record("expected a \(kind) error, but it succeeded", sourceLocation: sourceLocation)
    } catch let error as HaulError {
        #expect(error.kind == kind, "\(error.message)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected HaulError(\(kind)), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The `Range` a resume of `offset` held bytes asks for: the last bytes held again (up to 64 KiB), compared before
/// anything is appended, whatever the validators.
func resumeRange(from offset: some BinaryInteger) -> String {
    let held = Int64(offset)
    return "bytes=\(held - min(held, ResumePolicy.overlapLength))-"
}
