import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct DaemonWireFormatTests {
    @Test func tasksAndEventsRoundTrip() throws {
        let task = TaskSnapshot(
            id: "t1", url: "https://example.com/a.iso", state: .failed, priority: 2, bytes: 10, total: 20,
            bytesPerSecond: nil, filePath: "/d/a.iso", error: HaulError(.httpStatus, "HTTP 404"))
        #expect(DaemonProtocol.decodeTask(DaemonProtocol.encode(task)) == task)
        let events: [SessionEvent] = [
            .added(task), .stateChanged(id: "t1", from: .running, to: .paused),
            .progress(id: "t1", DownloadProgress(bytes: 5, total: nil, bytesPerSecond: 2.5, secondsRemaining: 3)),
            .finished(task), .failed(task), .allFinished,
        ]
        for event in events {
            let decoded = try #require(DaemonProtocol.decodeEvent(DaemonProtocol.encode(event, sequence: 9)))
            #expect(decoded.event == event)
            #expect(decoded.sequence == 9)
        }
        #expect(DaemonProtocol.decodeEvent(["type": "bogus"]) == nil)
        #expect(DaemonProtocol.decodeTask(["id": "x"]) == nil)

        // A typed reason crosses as `error.failure` and comes back.
        var typed = task
        typed.error = HaulError(.httpStatus, "https://example.com/a.iso answered 404", reason: .httpStatus(404, url: "https://example.com/a.iso"))
        let encoded = DaemonProtocol.encode(typed)
        #expect(encoded["error"]?["failure"]?["httpStatus"]?["_0"]?.intValue == 404)
        #expect(DaemonProtocol.decodeTask(encoded)?.error?.reason == .httpStatus(404, url: "https://example.com/a.iso"))
    }

    /// One vocabulary: a single download's events (`haul get URL --json`) have the session's shapes.
    @Test func aSingleDownloadsEventsHaveTheSessionsShapes() throws {
        let url = "https://user:secret@example.com/a.iso"
        let progress = DownloadProgress(bytes: 5, total: 10, bytesPerSecond: 2, secondsRemaining: 2.5)
        let single = EventJSON.download(.progress(progress), id: "d1", url: url)
        let session = EventJSON.session(.progress(id: "d1", progress))
        #expect(single == session, "no segments: the same object")
        #expect(Set(single.objectValue?.keys.map { $0 } ?? []) == ["type", "id", "bytes", "total", "bytesPerSecond", "secondsRemaining"])

        let result = DownloadResult(path: "/d/a.iso", bytes: 10, fetchedBytes: 4, checksum: nil, alreadyComplete: false)
        let finished = EventJSON.download(.finished(result), id: "d1", url: url)
        let decoded = try #require(DaemonProtocol.decodeEvent(finished))
        guard case .finished(let task) = decoded.event else { Issue.record("not a finished event: \(finished)"); return }
        #expect(task.id == "d1" && task.filePath == "/d/a.iso" && task.bytes == 10 && task.state == .finished)
        #expect(!task.url.contains("secret"), "credentials are hidden: \(task.url)")
        #expect(finished["fetchedBytes"]?.intValue == 4)

        let failure = HaulError(.checksum, "mismatch", reason: .checksumMismatch(path: "/d/a.iso", expected: "sha256:aa", actual: "sha256:bb", alreadyAtPath: false))
        let failed = EventJSON.downloadFailed(failure, id: "d1", url: url, path: nil, bytes: 3, exitCode: 6)
        guard case .failed(let failedTask)? = DaemonProtocol.decodeEvent(failed)?.event else { Issue.record("\(failed)"); return }
        #expect(failedTask.error?.reason == failure.reason && failedTask.bytes == 3)
        #expect(failed["exitCode"]?.intValue == 6)

        for event: DownloadEvent in [
            .started(url: url, path: "/d/a.iso", resumedFrom: 0, total: nil), .retrying(retry: 1, maxRetries: 5, delay: .seconds(1), reason: "reset"),
            .restarted(reason: "changed"), .singleConnection(reason: "no ranges"), .waitingForConnection(host: "example.com"),
        ] {
            let object = EventJSON.download(event, id: "d1", url: url)
            #expect(object["id"]?.stringValue == "d1", "\(object)")
            #expect(object["type"]?.stringValue?.contains("_") == false, "camelCase types: \(object)")
            #expect(!object.serialized.contains("secret"))
        }
        let redacted = EventJSON.session(.added(TaskSnapshot(
            id: "t", url: url, state: .waiting, priority: 0, bytes: 0, total: nil, bytesPerSecond: nil, filePath: nil, error: nil)), redacting: true)
        #expect(!redacted.serialized.contains("secret"))
    }

    @Test func additionsAreCheckedMemberByMember() throws {
        var request = DownloadRequest(url: try UserInput.url("https://example.com/a"), destination: .file("/tmp/a"))
        request.headers = ["X-Token": "1"]
        request.checksum = try Checksum(parsing: "sha256:" + String(repeating: "ab", count: 32))
        request.segments = 4
        request.priority = -1
        request.id = "mine"
        request.overwrite = true
        request.rateLimit = 1000
        request.maxRetries = 2
        request.retryWait = 0.5
        request.minSegmentSize = 4096
        request.maxConnectionsPerHost = 3
        request.allowInsecureRedirects = true
        request.proxies = ProxyChoice(
            explicit: try ProxyEndpoint(parsing: "http://u:p%40@proxy:3128"), noProxy: "localhost", environment: ["https_proxy": "s:1"])
        request.tls = TLSTrust(caFile: "/ca.pem", caDirectory: "/certs", insecure: true, clientCertificate: "/c.pem", clientKey: "/k.pem")
        request.credentials = Credentials(user: "me", password: "p:w")
        request.keepsRemoteTime = false
        request.completionCommand = "notify-send \"$HAUL_TASK_PATH\""
        request.proxyTunnel = true
        request.ipFamily = .v6
        request.timestamping = true
        request.cookies = [
            Cookie(domain: "example.com", includesSubdomains: true, path: "/a", secure: true, expires: 4_102_444_800, name: "sid", value: "v=1"),
            Cookie(domain: "example.com", includesSubdomains: false, path: "/", secure: false, expires: 0, name: "n", value: ""),
        ]
        let decoded = try DaemonProtocol.decodeRequest(Params(try #require(DaemonProtocol.encode(request).objectValue)))
        #expect(decoded.url == request.url && decoded.destination == request.destination && decoded.headers == request.headers)
        #expect(decoded.checksum == request.checksum && decoded.segments == 4 && decoded.priority == -1 && decoded.id == "mine")
        #expect(decoded.spec == request.spec)
        // The one JSON shape: Codable reads and writes what the protocol carries.
        let viaCodable = try JSONDecoder().decode(DownloadSpec.self, from: JSONEncoder().encode(request.spec))
        #expect(viaCodable == request.spec)

        let bad: [([String: JSONValue], String)] = [
            ([:], "\"url\" is required"),
            (["url": "ftp://x/y"], "\"url\""),
            (["url": "https://x/y", "path": "relative"], "absolute"),
            (["url": "https://x/y", "path": "/a", "directory": "/b"], "not both"),
            (["url": "https://x/y", "segments": 0], "\"segments\" must be between 1 and 64"),
            (["url": "https://x/y", "checksum": "nope"], "\"checksum\""),
            (["url": "https://x/y", "options": ["proxy": ["url": "ftp://p"]]], "\"proxy.url\""),
            (["url": "https://x/y", "options": ["tls": ["clientKey": "/k"]]], "--key needs --cert"),
            (["url": "https://x/y", "options": ["tls": ["caFile": "ca.pem"]]], "absolute"),
            (["url": "https://x/y", "options": ["credentials": ["password": "x"]]], "\"user\""),
            (["url": "https://x/y", "options": ["ipFamily": "v5"]], "\"options.ipFamily\""),
            (["url": "https://x/y", "options": ["cookies": [["domain": "x", "name": "a", "value": "b\r\nX: y"]]]], "\"cookies\" holds a cookie that cannot be sent"),
            (["url": "https://x/y", "directory": "/d", "options": ["timestamping": true]], "timestamping"),
            (["url": "https://x/y", "headers": [["name": "Bad Name", "value": "v"]]], "invalid header"),
            (["url": "https://x/y", "id": ""], "\"id\""),
            (["url": "https://x/y", "options": ["retries": -1]], "retries"),
            (["url": "https://x/y", "options": ["overwrite": true, "continue": true]], "not both"),
            (["url": "https://x/y", "directory": "/d", "options": ["continue": true]], "continue needs"),
            (["url": "https://x/y", "options": ["rateLimit": "fast"]], "\"rateLimit\""),
            (["url": "https://x/y", "options": ["completionCommand": ""]], "completion command"),
            (["url": "https://x/y", "options": ["completionCommand": 1]], "\"completionCommand\""),
        ]
        for (members, fragment) in bad {
            do {
                _ = try DaemonProtocol.decodeRequest(Params(members))
                Issue.record("accepted \(members)")
            } catch {
                #expect(error.code == -32602 && error.message.contains(fragment), "\(members): \(error.message)")
            }
        }
    }

    @Test func theServersTimeIsKeptUnlessATaskSaysOtherwise() throws {
        let url = try UserInput.url("https://example.com/a")
        var spec = DownloadSpec(url: url, destination: .file("/tmp/a"))
        #expect(DownloadOptions(spec).keepsRemoteTime)
        // The default travels as nothing at all: a task stored by an older haul means the same.
        #expect(DaemonProtocol.encode(DownloadRequest(spec))["options"] == nil)
        #expect(spec.json == ["url": "https://example.com/a", "path": "/tmp/a"])
        spec.keepsRemoteTime = false
        let request = DownloadRequest(spec)
        #expect(DaemonProtocol.encode(request)["options"]?["remoteTime"] == .bool(false))
        let decoded = try DaemonProtocol.decodeRequest(Params(try #require(DaemonProtocol.encode(request).objectValue)))
        #expect(!DownloadOptions(decoded.spec).keepsRemoteTime)
    }

    @Test func configurationsRoundTripAndRejectNonsense() throws {
        var configuration = SessionConfiguration()
        configuration.maxConcurrentDownloads = 7
        configuration.rateLimit = 1000
        configuration.completionCommand = "echo done"
        configuration.defaultDirectory = "/downloads"
        configuration.defaultHeaders = ["A": "b"]
        configuration.resumeRunningTasksOnRelaunch = false
        configuration.stallTimeout = .seconds(12)
        configuration.fleetMaxConnectionsPerHost = 4
        var copy = SessionConfiguration()
        try DaemonProtocol.apply(Params(try #require(DaemonProtocol.encode(configuration).objectValue)), to: &copy)
        #expect(DaemonProtocol.encode(copy) == DaemonProtocol.encode(configuration))

        for members: [String: JSONValue] in [
            ["maxConcurrentDownloads": -1], ["maxConcurrentDownloads": 1_001], ["maxDownloadsPerHost": 0], ["rateLimit": 0], ["defaultDirectory": "rel"],
            ["stallTimeout": 0], ["progressInterval": "fast"], ["fleetMaxConnectionsPerHost": 0], ["fleetMaxConnectionsPerHost": 10_001],
        ] {
            var target = SessionConfiguration()
            #expect(throws: RPCError.self, "\(members)") { try DaemonProtocol.apply(Params(members), to: &target) }
        }
        var unchanged = SessionConfiguration()
        try DaemonProtocol.apply(Params(["rateLimit": nil]), to: &unchanged)
        #expect(unchanged.rateLimit == nil, "null clears the limit")
        unchanged.fleetMaxConnectionsPerHost = 3
        try DaemonProtocol.apply(Params(["fleetMaxConnectionsPerHost": nil]), to: &unchanged)
        #expect(unchanged.fleetMaxConnectionsPerHost == nil, "null clears the fleet-wide limit")
    }

    @Test func aTasksNodeIsSentOnlyInAFleet() throws {
        let alone = TaskSnapshot(id: "t", url: "https://x/y", state: .running, bytes: 1)
        #expect(DaemonProtocol.encode(alone)["node"] == nil, "one machine's task JSON is as it was")
        var fleet = alone
        fleet.node = "n1"
        #expect(DaemonProtocol.encode(fleet)["node"] == .string("n1"))
        #expect(DaemonProtocol.decodeTask(DaemonProtocol.encode(fleet)) == fleet)
        let node = FleetNode(
            name: "n1", host: "h", pid: 42, alive: true, stopped: false, secondsSinceSeen: 1.5,
            leases: [FleetLease(session: "s", taskID: "t", url: "https://user:secret@x/y", bytes: 5, total: 9, secondsLeft: 20)])
        let wire = DaemonProtocol.encode(node)
        #expect(!wire.serialized.contains("secret"), "a lease's URL is sent without its credentials")
        let back = try #require(DaemonProtocol.decodeNode(wire))
        #expect(back.name == "n1" && back.pid == 42 && back.alive && back.leases.first?.taskID == "t" && back.leases.first?.total == 9)
    }

    @Test func socketLocationFollowsTheDocumentedOrder() {
        let home = HaulHome(path: "/h")
        #expect(DaemonLocation(explicit: "/x/s.sock", environment: ["HAUL_SOCKET": "/y"], home: home).socketPath == "/x/s.sock")
        #expect(DaemonLocation(explicit: nil, environment: ["HAUL_SOCKET": "/y/s", "XDG_RUNTIME_DIR": "/run/u"], home: home).socketPath == "/y/s")
        #expect(DaemonLocation(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/run/u"], home: home).socketPath == "/run/u/haul/daemon.sock")
        #expect(DaemonLocation(explicit: nil, environment: ["XDG_RUNTIME_DIR": "relative"], home: home).socketPath == "/h/run/daemon.sock")
        let location = DaemonLocation(socketPath: "/run/u/haul/daemon.sock")
        #expect(location.directory == "/run/u/haul" && location.lockPath == "/run/u/haul/daemon.sock.lock")
        #expect(location.pidPath == "/run/u/haul/daemon.sock.pid")
    }
}
