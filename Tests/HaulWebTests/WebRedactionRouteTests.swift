import Foundation
import HaulKit
import HaulTestSupport
import Testing
@testable import HaulWeb

/// A task's secrets (its URL's password and signature, a credential header, cookies) never leave the dashboard: not
/// in `tasks.list` or `journal.list` answers, not in the event stream, as the page shows them (`***`).
@Suite struct WebRedactionRouteTests {
    static let secrets = ["S3KRETPASS", "S3KRETSIG", "S3KRETBEARER", "S3KRETCOOKIE"]

    @Test func noAnswerNorEventCarriesATasksSecrets() async throws {
        let server = try await TestServer.start()
        server.serve("/secret.bin", Resource(body: TestData.bytes(20_000, seed: 1_417), etag: "\"s\""))
        try await InProcessWeb.with { web in
            let login = try await web.login()
            let opened = await web.request("GET", "/api/events?session=default", headers: login.headers)
            let stream = try #require(opened.stream, "\(opened)")
            // As the server does with the stream it answers: listening, the stream opened, from where it stands now.
            web.dashboard.state.withLockedValue { $0.listening = true }
            guard case .success(let open) = web.dashboard.openStream(stream.session, login: login.cookie ?? "") else { throw HarnessError("stream refused") }
            defer { web.dashboard.closeStream(open.id) }
            let start = web.dashboard.pending(stream.session, after: stream.cursor).seen
            let url = server.url("/secret.bin").replacingOccurrences(of: "http://", with: "http://user:S3KRETPASS@") + "?X-Amz-Signature=S3KRETSIG"
            let task: JSONValue = [
                "url": .string(url), "path": .string(web.work + "/secret.bin"),
                "headers": [["name": "Authorization", "value": "Bearer S3KRETBEARER"]],
                "options": ["cookies": [[
                    "name": "sid", "value": "S3KRETCOOKIE", "domain": "127.0.0.1", "path": "/", "includesSubdomains": false,
                    "secure": false, "expires": 0,
                ]]],
            ]
            let added = await web.rpc("tasks.add", ["session": "default", "tasks": [task]], as: login)
            let id = try #require(added.result?["ids"]?.arrayValue?.first?.stringValue, "\(added)")
            try await waitUntil("the task finishes") { try await web.tasks().first?["state"] == "finished" }
            // The service itself keeps the real URL (the daemon's own user asks over its socket).
            #expect(try await web.tasks().first?["url"]?.stringValue?.contains("S3KRETPASS") == true)
            var shown: [String] = []
            for (method, params) in [
                ("tasks.list", ["session": "default"]), ("journal.list", ["session": "default"]),
                ("tasks.list", ["session": "default", "ids": [.string(id)]]),
            ] as [(String, JSONValue)] {
                let reply = await web.rpc(method, params, as: login)
                #expect(reply.status == 200, "\(method): \(reply)")
                shown.append("\(method): " + reply.body)
            }
            let events = web.dashboard.pending(stream.session, after: .number(start)).text
            #expect(events.contains("finished"), "\(events)")
            shown.append("events: " + events)
            for text in shown {
                for secret in Self.secrets { #expect(!text.contains(secret), "\(secret) in \(text)") }
            }
            #expect(shown[0].contains("user:***@") || shown[0].contains("***@"), "the URL is still there, masked: \(shown[0])")
            #expect(shown[0].contains("X-Amz-Signature=***"), "\(shown[0])")
        }
        try await server.shutdown()
    }
}
