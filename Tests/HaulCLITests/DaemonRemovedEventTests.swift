import Foundation
import HaulKit
import HaulTestSupport
import Synchronization
import Testing

/// The `removed` event: a task removed by another client (`haul rm`, another process) is announced to every
/// client of its session, on the wire and in HaulKit's event streams.
@Suite struct DaemonRemovedEventTests {
    @Test func aTaskRemovedByHaulRmIsAnnouncedToABackgroundSessionAndToHaulWatch() async throws {
        try await withTestServer { server in
            // A download that surely still runs (and reports progress) when it is removed: 4 MiB at 16 KiB/s.
            var resource = Resource(body: TestData.bytes(4 << 20, seed: 611), etag: "\"removed\"")
            resource.faults.throttleBytesPerSecond = 16 << 10
            server.serve("/slow.bin", resource)
            server.serve("/kept.bin", Resource(body: TestData.bytes(1_000, seed: 612)))
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                var configuration = SessionConfiguration.background(
                    DaemonEndpoint(socketPath: box.home + "/run/daemon.sock", autostart: false))
                configuration.home = HaulHome(path: box.home)
                let app = try await DownloadSession(identifier: "default", configuration: configuration)
                let slow = try await app.add(DownloadRequest(
                    url: try #require(URL(string: server.url("/slow.bin"))), destination: .file(box.path("slow.bin"))))
                let kept = try await app.add(DownloadRequest(
                    url: try #require(URL(string: server.url("/kept.bin"))), destination: .file(box.path("kept.bin"))))
                let seen = Mutex<[SessionEvent]>([])
                let events = await app.events()
                let reader = Task { for await event in events { seen.withLock { $0.append(event) } } }
                // `haul watch --json` on the task, from another process, while it is removed.
                let watcher = try box.start(["watch", "--json", slow.id, "--no-autostart"])
                // Its progress events reach `haul watch`: it has subscribed.
                try await eventually("haul watch writes the slow task's progress", timeout: .seconds(60)) {
                    watcher.stdoutSoFar().contains("\"type\":\"progress\"")
                }

                let removed = try await box.run(["rm", String(slow.id.prefix(8)), "--no-autostart"])
                #expect(removed.exitCode == 0, "\(removed.stderr)")
                try await eventually("the background session hears of the removal") {
                    seen.withLock { $0.contains(.removed(id: slow.id)) }
                }
                #expect(try await app.task(slow.id) == nil)
                #expect(try await app.task(kept.id) != nil, "only the task named is removed")
                #expect(!seen.withLock { $0.contains(.removed(id: kept.id)) })
                // The event on the wire, as `haul watch --json` writes the protocol's events; watch ends as `haul wait`
                // does for a removed task (1).
                let watched = try await watcher.wait(timeout: .seconds(30))
                #expect(watched.exitCode == 1, "watch: \(watched.stderr)")
                let removal = try watched.jsonEvents().filter { $0["type"] as? String == "removed" }
                #expect(removal.count == 1 && removal.first?["id"] as? String == slow.id, "\(watched.stdout)")
                reader.cancel()
                await app.close()
            }
        }
    }
}
