import Foundation
import HaulKit
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension DaemonNeighbourTests {
    /// Issue 10, a task that kills the daemon: a task that was running when two daemons in a row died without it
    /// getting further is failed instead of being resumed a third time. The deaths are `kill -9` of daemon
    /// subprocesses while a download waits for bytes that do not come; a SIGTERM in between is an orderly stop, and a
    /// run that saved progress is one that got somewhere: neither counts.
    @Suite(.serialized) struct DaemonCrashLoopTests {
        static let message = "the daemon stopped twice while running this task without getting further; it was not resumed a third time (resume it to try again)"

        /// Serves `body` at `rate`, or (`stalled`) its head and then nothing: the download makes no progress.
        func serve(_ server: TestServer, _ path: String, _ body: [UInt8], rate: Int?, stalled: Bool = false) {
            var resource = Resource(body: body, etag: "\"crash-v1\"")
            resource.faults.throttleBytesPerSecond = rate
            if stalled { resource.faults.stallAfterBytes = 0 }
            server.serve(path, resource)
        }

        /// The task as `haul ls --json` shows it.
        func task(_ box: Sandbox, _ id: String) async throws -> [String: Any]? {
            let result = try await box.run(["ls", "--json", "--no-autostart"])
            #expect(result.exitCode == 0, "ls: \(result.stderr)")
            return try result.jsonEvents().first { $0["id"] as? String == id }
        }

        /// Waits until the daemon has (re)started the download: the server has seen its `count`-th request for it.
        func waitForRequest(_ server: TestServer, _ path: String, count: Int, _ daemon: HaulRun) async throws {
            try await eventually("request \(count) for \(path)", timeout: .seconds(30)) {
                guard daemon.isRunning else { throw HarnessError("the daemon died: \(daemon.stderrSoFar())") }
                return server.requests(path).count >= count
            }
        }

        func kill9(_ daemon: HaulRun) async throws {
            daemon.signal(SIGKILL)
            let killed = try await daemon.wait(timeout: .seconds(10))
            #expect(killed.signalled && killed.exitCode == SIGKILL)
        }

        @Test func aTaskRunningWhenTwoDaemonsInARowDiedIsFailedNotResumedAThirdTime() async throws {
            try await withTestServer { server in
                // Its head, then no byte: every daemon dies with the download where it was.
                let source = TestData.bytes(2 << 20, seed: 601)
                serve(server, "/crash.bin", source, rate: nil, stalled: true)
                try await Sandbox.with { box in
                    let first = try await startDaemon(box)
                    let added = try await box.run(["add", server.url("/crash.bin"), "-o", "crash.bin", "--segments", "1", "--no-autostart"])
                    let id = try #require(added.stdoutLines.first, "add: \(added.stderr)")
                    try await waitForRequest(server, "/crash.bin", count: 1, first)
                    #expect(try await task(box, id)?["state"] as? String == "running")
                    try await kill9(first)

                    let second = try await startDaemon(box)
                    try await waitForRequest(server, "/crash.bin", count: 2, second)
                    #expect(try await task(box, id)?["state"] as? String == "running", "the first death alone resumes the task")
                    try await kill9(second)

                    let third = try await startDaemon(box)
                    let failed = try await box.run(["wait", id, "--no-autostart"])
                    #expect(failed.exitCode == 7, "wait: \(failed)")
                    #expect(failed.stderr.contains(Self.message), "stderr: \(failed.stderr)")
                    let shown = try await task(box, id)
                    #expect(shown?["state"] as? String == "failed", "\(String(describing: shown))")
                    #expect((shown?["error"] as? [String: Any])?["message"] as? String == Self.message)
                    #expect((shown?["error"] as? [String: Any])?["kind"] as? String == "server")
                    #expect(server.requests("/crash.bin").count == 2, "not resumed a third time: \(server.requests("/crash.bin").count) requests")
                    #expect(third.isRunning, "the third daemon runs: \(third.stderrSoFar())")

                    // A person may try again: then it is downloaded (at full speed now).
                    serve(server, "/crash.bin", source, rate: nil)
                    #expect(try await box.run(["resume", id, "--no-autostart"]).exitCode == 0)
                    let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                    #expect(waited.exitCode == 0, "wait after resume: \(waited.stderr)")
                    #expect(contentMismatch(box.path("crash.bin"), expected: source) == nil)
                }
            }
        }

        /// Two deaths in a row, but the download saved progress in between (a slow, healthy download killed twice):
        /// it is resumed again, and finishes.
        @Test func progressBetweenTwoDeathsStartsTheCountAgain() async throws {
            try await withTestServer { server in
                let source = TestData.bytes(2 << 20, seed: 603)
                serve(server, "/moving.bin", source, rate: 64 << 10)
                try await Sandbox.with { box in
                    let first = try await startDaemon(box)
                    let added = try await box.run(["add", server.url("/moving.bin"), "-o", "moving.bin", "--segments", "1", "--no-autostart"])
                    let id = try #require(added.stdoutLines.first, "add: \(added.stderr)")
                    try await waitForRequest(server, "/moving.bin", count: 1, first)
                    try await kill9(first)
                    let second = try await startDaemon(box)
                    try await waitForRequest(server, "/moving.bin", count: 2, second)
                    // The second run gets somewhere: its progress is saved (bytes past where the first stopped).
                    let before = (try await task(box, id)?["bytes"] as? Int) ?? 0
                    try await eventuallyAsync("progress saved", timeout: .seconds(60), step: .milliseconds(200)) {
                        ((try await task(box, id)?["bytes"] as? Int) ?? 0) > before + 4 * 65_536
                    }
                    try await kill9(second)
                    serve(server, "/moving.bin", source, rate: nil)
                    _ = try await startDaemon(box)
                    let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                    #expect(waited.exitCode == 0, "wait: \(waited.stderr)")
                    #expect(contentMismatch(box.path("moving.bin"), expected: source) == nil)
                }
            }
        }

        @Test func anOrderlyStopBetweenTwoDeathsStartsTheCountAgain() async throws {
            try await withTestServer { server in
                let source = TestData.bytes(2 << 20, seed: 602)
                serve(server, "/steady.bin", source, rate: nil, stalled: true)
                try await Sandbox.with { box in
                    let first = try await startDaemon(box)
                    let added = try await box.run(["add", server.url("/steady.bin"), "-o", "steady.bin", "--segments", "1", "--no-autostart"])
                    let id = try #require(added.stdoutLines.first, "add: \(added.stderr)")
                    try await waitForRequest(server, "/steady.bin", count: 1, first)
                    try await kill9(first)

                    let second = try await startDaemon(box)
                    try await waitForRequest(server, "/steady.bin", count: 2, second)
                    second.signal(SIGTERM)
                    let stopped = try await second.wait(timeout: .seconds(10))
                    #expect(stopped.exitCode == 0 && !stopped.signalled, "SIGTERM: \(stopped.stderr)")

                    let third = try await startDaemon(box)
                    try await waitForRequest(server, "/steady.bin", count: 3, third)
                    try await kill9(third)

                    // One death since the orderly stop: the task resumes.
                    serve(server, "/steady.bin", source, rate: nil)
                    _ = try await startDaemon(box)
                    let waited = try await box.run(["wait", id, "--no-autostart"], timeout: .seconds(60))
                    #expect(waited.exitCode == 0, "wait: \(waited.stderr)")
                    #expect(contentMismatch(box.path("steady.bin"), expected: source) == nil)
                    #expect(server.requests("/steady.bin").count == 4)
                }
            }
        }
    }
}

