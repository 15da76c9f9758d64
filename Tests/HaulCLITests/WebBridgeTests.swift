#if os(Linux)
import Foundation
import HaulTestSupport
import HaulWeb
import Testing

/// What the dashboard does through its bridge, against a real daemon: live segment maps on the event stream, removing
/// a task with its file, and `haul web` starting the listener by itself. (The session's settings and a paused
/// download's segment map through the bridge are HaulWebTests', in-process.)
@Suite(.serialized) struct WebBridgeTests {
    func result(_ reply: WebReply) -> [String: Any]? { reply.json?["result"] as? [String: Any] }
    func errorCode(_ reply: WebReply) -> Int? { ((reply.json?["error"] as? [String: Any])?["code"] as? NSNumber)?.intValue }

    @Test func aThrottledSegmentedDownloadsMapIsPushedWhileItRuns() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(4 << 20, seed: 1_415)
            var resource = Resource(body: body, etag: "\"s\"")
            resource.faults.throttleBytesPerSecond = 1 << 20
            server.serve("/slow.bin", resource)
            try await WebDashboardHarness.with { web in
                let login = try await web.login()
                let stream = try web.openEventStream(as: login)
                defer { stream.close() }
                let destination = web.sandbox.path("slow.bin")
                let id = try web.add(server.url("/slow.bin"), to: destination, segments: 4, options: ["minSegmentSize": 65_536], as: login)
                // Two different maps while it runs, then the end.
                let events = try stream.read(timeout: .seconds(90)) { reply in
                    Self.segmentMaps(reply.body, id: id).count >= 2 && Set(Self.segmentMaps(reply.body, id: id).map(\.done)).count >= 2
                }
                let maps = Self.segmentMaps(events.body, id: id)
                for map in maps {
                    #expect(map.total == body.count)
                    #expect(map.done.count <= 256 && map.active.count <= 256)
                    let covered = (map.done + map.active).sorted { $0[0] < $1[0] }
                    #expect(covered.first?[0] == 0 && covered.last?[1] == body.count, "done and active cover the file: \(map)")
                }
                let live = try web.rpc("tasks.segments", ["session": "default", "id": id], as: login)
                #expect(result(live)?["active"] != nil, "\(live)")
                _ = try stream.read(timeout: .seconds(90)) { $0.body.contains("\"type\":\"finished\"") }
                #expect(contentMismatch(destination, expected: body) == nil)
                // Removing it with its file: the file goes.
                let removed = try web.rpc("tasks.remove", ["session": "default", "ids": [id], "deleteFile": true], as: login)
                #expect(result(removed) != nil, "\(removed)")
                try await eventually("the file is deleted") { !fileExists(destination) }
                #expect(try web.tasksOverSocket().isEmpty)
            }
        }
    }

    /// The `segments` events of task `id` in an event stream's text.
    static func segmentMaps(_ text: String, id: String) -> [(total: Int?, done: [[Int]], active: [[Int]])] {
        text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("data: "), line.contains("\"type\":\"segments\""),
                  let object = (try? JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8))) as? [String: Any],
                  object["id"] as? String == id else { return nil }
            func ranges(_ key: String) -> [[Int]] { (object[key] as? [[NSNumber]])?.map { $0.map(\.intValue) } ?? [] }
            return ((object["total"] as? NSNumber)?.intValue, ranges("done"), ranges("active"))
        }
    }

    @Test func haulWebStartsTheDashboardOnTheAskedPortAndKeepsIt() async throws {
        try await Sandbox.with { sandbox in
            let daemon = try await DaemonHarness.start(sandbox)
            let socket = DaemonHarness.socket(sandbox)
            let port = try Self.freePort()
            let first = try await sandbox.run(["web", "--socket", socket, "--port", String(port)])
            #expect(first.exitCode == 0 && first.stdoutLines.count == 1, "\(first.stdout) \(first.stderr)")
            #expect(first.stdout.hasPrefix("http://127.0.0.1:\(port)/login?token="), "\(first.stdout)")
            let second = try await sandbox.run(["web", "--socket", socket])
            #expect(second.stdout.hasPrefix("http://127.0.0.1:\(port)/login?token=") && second.stdout != first.stdout, "a fresh token each time")
            let moved = try await sandbox.run(["web", "--socket", socket, "--port", String(port == 65_535 ? port - 1 : port + 1)])
            #expect(moved.exitCode == 2 && moved.stdout.isEmpty && moved.stderrLines.count == 1, "\(moved.stderr)")
            let remote = try await sandbox.run(["web", "--socket", socket, "--host", "0.0.0.0"])
            #expect(remote.exitCode == 2 && remote.stderrLines.count == 1, "\(remote.stderr)")
            let page = try WebHTTP.call(port, "GET", "/")
            #expect(page.status == 200)
            try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
        }
    }

    @Test func thePageIsInsideTheBinaryAndABusyPortIsOneLine() async throws {
        let assets = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/HaulWeb/Assets").standardized.path
        // The one list of the page's files is the folder's: nothing in it is left unserved (or served from nowhere).
        let files = try FileManager.default.contentsOfDirectory(atPath: assets).filter { !$0.hasPrefix(".") }
        #expect(Set(files) == Set(WebAssets.all.map(\.name)), "Sources/HaulWeb/Assets and WebAssets.all list the same files")
        #expect(WebAssets.all.count == Set(WebAssets.all.map(\.name)).count, "each file once")
        try await WebDashboardHarness.with { web in
            for asset in WebAssets.all {
                let served = try WebHTTP.call(web.port, "GET", asset.path)
                let file = try String(contentsOfFile: assets + "/" + asset.name, encoding: .utf8)
                #expect(served.status == 200 && served.body == file, "\(asset.name) is served as built in")
                #expect(served.header("Content-Type") == asset.contentType, "\(asset.name): \(served)")
            }
            let page = try WebHTTP.call(web.port, "GET", "/")
            let index = try String(contentsOfFile: assets + "/index.html", encoding: .utf8)
            #expect(page.status == 200 && page.body == index)
            // Everything the page loads — its stylesheet, its entry module and every module imported from there — is
            // on the list and served as JavaScript (a module of another type is refused by the browser).
            var toLoad = Self.references(inPage: page.body), loaded: Set<String> = []
            #expect(toLoad.contains("/app.mjs") && toLoad.contains("/app.css"), "\(toLoad)")
            while let path = toLoad.popLast() {
                guard loaded.insert(path).inserted else { continue }
                #expect(WebAssets.paths.contains(path), "\(path) is loaded by the page but not on WebAssets.all")
                let served = try WebHTTP.call(web.port, "GET", path)
                #expect(served.status == 200, "\(path): \(served.status)")
                guard WebAssets.isScript(path) else { continue }
                #expect(served.header("Content-Type")?.hasPrefix("text/javascript") == true, "\(path)")
                toLoad += Self.imports(inModule: served.body)
            }
            let modules = Set(WebAssets.all.map(\.path).filter(WebAssets.isScript))
            #expect(modules.isSubset(of: loaded), "scripts no page loads: \(modules.subtracting(loaded).sorted())")
            // Another daemon asked for the same port says so in one line (besides its log), and exits 2.
            let sandbox = web.sandbox
            let socket = sandbox.root + "/other/daemon.sock"
            try FileManager.default.createDirectory(atPath: sandbox.root + "/other", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let busy = try await sandbox.run(["daemon", "--socket", socket, "--web", "127.0.0.1:\(web.port)"], timeout: .seconds(20))
            let errors = busy.stderrLines.filter { $0.hasPrefix("haul daemon: error:") }
            #expect(busy.exitCode == 2 && errors.count == 1 && errors.first?.contains("could not listen") == true, "\(busy.exitCode): \(busy.stderr)")
            #expect(!RawSocketClient.canConnect(socket), "it did not stay")
        }
    }

    /// The paths of the page's `src="/…"` and `href="/…"`.
    static func references(inPage html: String) -> [String] {
        let pattern = /(?:src|href)="(\/[^"]*)"/
        return html.matches(of: pattern).map { String($0.output.1) }
    }

    /// The modules a module imports (`import … from './x.mjs'`, over lines or not), as paths from the site's root.
    static func imports(inModule source: String) -> [String] {
        let pattern = /^import\b[^'";]*['"]\.\/([^'"]+)['"]/.anchorsMatchLineEndings()
        return source.matches(of: pattern).map { "/" + String($0.output.1) }
    }

    @Test func sigtermStopsTheDaemonWithinTwoSecondsWhileAStreamIsOpen() async throws {
        try await Sandbox.with { sandbox in
            let daemon = try await DaemonHarness.start(sandbox, ["--web", "127.0.0.1:0"])
            let link = try await WebDashboardHarness.loginLink(sandbox, socket: DaemonHarness.socket(sandbox))
            let port = try #require(URLComponents(string: link)?.port)
            let web = WebDashboardHarness(sandbox: sandbox, daemon: daemon, socket: DaemonHarness.socket(sandbox), port: port)
            let login = try await web.login()
            let stream = try WebHTTP(port: port)
            defer { stream.close() }
            try stream.send("GET", "/api/events?session=default", headers: login.headers)
            _ = try stream.read { $0.body.contains(": ready") }
            try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
            // The stream ended with the daemon.
            _ = try stream.readAll(timeout: .seconds(5))
        }
    }

    /// SIGTERM while browsers keep connecting to the dashboard: a connection accepted as the listener closes is closed
    /// too (SwiftNIO traps on a wrapped connection nobody finished). Three rounds, four threads each, connecting and
    /// hanging up until the daemon is gone (at most 20 s and 50,000 connections per thread).
    @Test func sigtermWhileBrowsersKeepConnectingExitsCleanly() async throws {
        try await Sandbox.with { sandbox in
            for round in 0..<3 {
                let daemon = try await DaemonHarness.start(sandbox, ["--web", "127.0.0.1:0"])
                let link = try await WebDashboardHarness.loginLink(sandbox, socket: DaemonHarness.socket(sandbox))
                let port = try #require(URLComponents(string: link)?.port)
                let result = try await sigtermWhileClientsConnect(daemon, round: round) {
                    guard let connection = try? WebHTTP(port: port) else { return false }
                    connection.close()
                    return true
                }
                #expect(result.exitCode == 0 && !result.signalled, "round \(round), SIGTERM: exit \(result.exitCode): \(result.stderr.suffix(2_000))")
                #expect(!result.stderr.contains("Fatal error"), "round \(round): \(result.stderr.suffix(2_000))")
            }
        }
    }

    /// A port nothing listens on now (bound to 0, read, closed).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw HarnessError("could not find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
#endif
