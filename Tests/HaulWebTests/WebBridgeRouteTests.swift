import Foundation
import HaulKit
import Testing
@testable import HaulWeb

/// What the dashboard's bridge passes on to the daemon's service, in-process at the HTTP level: a session's settings
/// shown without secrets, completion commands refused unless the daemon allows them, and answers too large for one
/// message. (A download through the bridge, segment maps on the event stream and `haul web` starting the listener are
/// WebBridgeTests' in HaulCLITests: they need the listener.)
@Suite struct WebBridgeRouteTests {
    @Test func theSessionsSpeedLimitAndConcurrencyChangeAndShowWithoutSecrets() async throws {
        try await InProcessWeb.with { web in
            let login = try await web.login()
            let open = await web.rpc("session.open", ["session": "default", "configuration": ["defaultHeaders": [["name": "Authorization", "value": "Bearer s3cret"]]]],
                                     as: login)
            #expect(open.result != nil, "\(open)")
            for bad: JSONValue in [0, -5, "fast", .number(1.5)] {
                let reply = await web.rpc("session.setRateLimit", ["session": "default", "bytesPerSecond": bad], as: login)
                #expect(reply.errorCode == -32602, "\(bad): \(reply)")
            }
            let missing = await web.rpc("session.setRateLimit", ["session": "default"], as: login)
            #expect(missing.errorCode == -32602, "\(missing)")
            let set = await web.rpc("session.setRateLimit", ["session": "default", "bytesPerSecond": 500_000], as: login)
            #expect(set.result != nil, "\(set)")
            let concurrency = await web.rpc("session.setMaxConcurrentDownloads", ["session": "default", "count": 2], as: login)
            #expect(concurrency.result != nil, "\(concurrency)")
            let shown = await web.rpc("session.configuration", ["session": "default"], as: login)
            let configuration = try #require(shown.result, "\(shown)")
            #expect(configuration["rateLimit"] == 500_000 && configuration["maxConcurrentDownloads"] == 2, "\(configuration)")
            #expect(!shown.body.contains("s3cret"), "a default header's value is never shown: \(shown.body)")
            #expect(shown.body.contains("Authorization"), "its name is")
            #expect(configuration["store"]?.stringValue == web.home.path + "/sessions/default/tasks.sqlite", "where its tasks are: \(configuration)")
            let none = await web.rpc("session.setRateLimit", ["session": "default", "bytesPerSecond": nil], as: login)
            #expect(none.result != nil, "\(none)")
            let after = await web.rpc("session.configuration", ["session": "default"], as: login)
            #expect(after.result?["rateLimit"] == .null, "\(after)")
            let other = await web.rpc("session.configuration", ["session": "nope"], as: login)
            #expect(other.errorCode == -32001, "a session that does not exist: \(other)")
            #expect(!web.sessionFolders.contains("nope"), "and it is not created")
            let me = await web.request("GET", "/api/me", headers: login.headers)
            #expect(me.json?["sessions"] == ["default"], "the page lists the sessions that exist: \(me)")
        }
    }

    @Test func aDashboardCredentialCannotSetACommandUnlessTheDaemonAllowsIt() async throws {
        try await InProcessWeb.with { web in
            let login = try await web.login()
            let key = try WebSecrets.apiKeyCreatingIfNeeded(home: web.home)
            let command: JSONValue = .string("touch " + web.work + "/ran")
            let task: JSONValue = ["url": "http://127.0.0.1:1/x", "path": .string(web.work + "/x"), "options": ["completionCommand": command]]
            let calls: [(String, JSONValue)] = [
                ("tasks.add", ["session": "default", "tasks": [task]]),
                ("session.open", ["session": "default", "configuration": ["completionCommand": command]]),
            ]
            for (method, params) in calls {
                for credential in ["cookie", "API key"] {
                    let reply = credential == "cookie"
                        ? await web.rpc(method, params, as: login)
                        : await web.rpc(method, params, as: nil, extra: [("Authorization", "Bearer " + key)])
                    #expect(reply.errorCode == -32001, "\(method) with the \(credential): \(reply)")
                    #expect(reply.json?["error"]?["message"]?.stringValue?.contains("--web-allow-commands") == true, "\(reply)")
                }
            }
            #expect(try await web.tasks().isEmpty, "nothing was added")
            #expect(!web.sessionFolders.contains("default"), "no session was created")
            // Clearing a command, or setting anything else, is fine.
            let cleared = await web.rpc("session.open", ["session": "default", "configuration": ["completionCommand": nil, "maxConcurrentDownloads": 2]],
                                        as: login)
            #expect(cleared.result != nil, "\(cleared)")
            // The owner (the Unix socket) sets it.
            let owner = try await web.call("session.open", ["session": "default", "configuration": ["completionCommand": command]])
            #expect(owner["result"] != nil, "\(owner)")
            #expect(!FileManager.default.fileExists(atPath: web.work + "/ran"))
        }
        // With --web-allow-commands, the dashboard may.
        var configuration = WebConfiguration()
        configuration.allowCommands = true
        try await InProcessWeb.with(configuration) { web in
            let login = try await web.login()
            let set = await web.rpc("session.open", ["session": "default", "configuration": ["completionCommand": "true", "maxConcurrentDownloads": 0]],
                                    as: login)
            #expect(set.result != nil, "\(set)")
            let task: JSONValue = ["url": "http://127.0.0.1:1/x", "path": .string(web.work + "/x"), "options": ["completionCommand": "true"]]
            let added = await web.rpc("tasks.add", ["session": "default", "tasks": [task]], as: login)
            #expect(added.result?["ids"]?.arrayValue?.count == 1, "\(added)")
        }
    }

    @Test func webStartOnTheOwnersSocketChecksItsPortBeforeListening() async throws {
        try await InProcessWeb.with { web in
            for port: JSONValue in [0, 70_000, -1] {
                let answer = try await web.call("web.start", ["port": port])
                #expect(answer["error"]?["code"] == -32602 && answer["error"]?["message"]?.stringValue?.contains("port") == true, "\(port): \(answer)")
            }
            let remote = try await web.call("web.start", ["host": "0.0.0.0"])
            #expect(remote["error"]?["code"] == -32001, "a non-loopback address needs --web-allow-remote and TLS: \(remote)")
            #expect(web.dashboard.openConnections() == 0)
        }
    }
}
