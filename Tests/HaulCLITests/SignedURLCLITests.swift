import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Pre-signed URLs (S3, Google Cloud Storage, Azure) and a daemon task's failure, as a user meets them.
@Suite struct SignedURLCLITests {
    /// Every place a URL is printed or logged shows `***` for its signature, credential and token; the server
    /// still gets the real URL.
    @Test func aSignatureIsNeverShownAndAlwaysSent() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(200_000, seed: 270)
            server.serve("/bucket/f.bin", Resource(body: body, etag: "\"s\""))
            let query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIASECRETCRED%2F20260101&X-Amz-Signature=feedSECRETSIG"
                + "&X-Amz-Security-Token=SECRETTOKEN&sig=SECRETAZURE&X-Goog-Signature=SECRETGOOG&token=SECRETPLAIN"
            let url = server.url("/bucket/f.bin") + "?" + query
            let missing = server.url("/bucket/none.bin") + "?" + query
            try await Sandbox.with { box in
                let haul = try HaulBinary.path()
                let daemon = try box.start(["-c", "exec \"$0\" \"$@\" 2>\"$HAUL_HOME/daemon-stderr.log\"", haul, "daemon", "--verbose"], binary: "/bin/sh")
                try await eventually("the daemon listens") {
                    guard daemon.isRunning else { throw HarnessError("haul daemon exited") }
                    return (try? String(contentsOfFile: box.home + "/daemon-stderr.log", encoding: .utf8))?.contains("listening on") == true
                }
                let plain = try await box.run(["get", url, "--dir", "plain", "-v"])
                let json = try await box.run(["get", url, "-o", "json.bin", "--json"])
                let failed = try await box.run(["get", missing, "-o", "none.bin", "--json"])
                let batch = try await box.run(["get", url, missing, "--dir", "batch"])
                let added = try await box.run(["add", url, "-o", "added.bin", "-b", "sid=SECRETCOOKIE", "--no-autostart"])
                let id = try #require(added.stdoutLines.first, "\(added.stderr)")
                let addedMissing = try await box.run(["add", missing, "-o", "missing.bin", "--no-autostart"])
                let missingID = try #require(addedMissing.stdoutLines.first, "\(addedMissing.stderr)")
                let waited = try await box.run(["wait", id, missingID, "--no-autostart"])
                let listed = try await box.run(["ls", "--no-autostart"])
                let listedJSON = try await box.run(["ls", "--json", "--no-autostart"])
                let watched = try await box.run(["watch", id, "--json", "--no-autostart"])
                daemon.signal(SIGTERM)
                _ = try await daemon.wait(timeout: .seconds(10))
                let log = (try? String(contentsOfFile: box.home + "/daemon-stderr.log", encoding: .utf8)) ?? ""

                #expect(plain.exitCode == 0 && json.exitCode == 0, "\(plain.stderr) \(json.stderr)")
                #expect(failed.exitCode == 4 && batch.exitCode == 4 && waited.exitCode == 4, "\(failed.stderr) \(batch.stderr) \(waited.stderr)")
                #expect(contentMismatch(box.path("plain/f.bin"), expected: body) == nil)
                #expect(contentMismatch(box.path("added.bin"), expected: body) == nil)
                let shown: [(String, String)] = [
                    ("get -v", plain.stderr + plain.stdout), ("get --json", json.stdout + json.stderr), ("a failure", failed.stdout + failed.stderr),
                    ("a batch", batch.stderr + batch.stdout), ("add", added.stderr), ("wait", waited.stderr), ("ls", listed.stdout),
                    ("ls --json", listedJSON.stdout), ("watch --json", watched.stdout + watched.stderr), ("the daemon's log", log),
                ]
                for (place, text) in shown {
                    #expect(!text.contains("SECRET"), "\(place) shows a secret: \(text)")
                }
                #expect(json.stdout.contains("X-Amz-Signature=***"), "the URL is shown, masked: \(json.stdout)")
                #expect(listedJSON.stdout.contains("X-Amz-Signature=***"), "\(listedJSON.stdout)")
                #expect(failed.stdout.contains("X-Amz-Signature=***"), "the failure names the URL, masked: \(failed.stdout)")
                // The server got the real signature every time, and the task's cookie.
                let requests = server.requests("/bucket/f.bin")
                #expect(requests.contains { $0.header("Cookie") == "sid=SECRETCOOKIE" })
                #expect(requests.count >= 4)
                #expect(requests.allSatisfy { $0.uri.hasSuffix(query) }, "\(requests.map(\.uri))")
            }
        }
    }

    /// A daemon task's failure tells the user to resume the task, not to run the command that queued it again.
    @Test func aDaemonTaskFailureSaysHaulResumeID() async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        try await Sandbox.with { box in
            _ = try await startDaemon(box)
            let added = try await box.run(["add", "http://127.0.0.1:\(refusing.port)/f.bin", "-o", "f.bin", "--retries", "0", "--no-autostart"])
            let id = try #require(added.stdoutLines.first, "\(added.stderr)")
            let waited = try await box.run(["wait", id, "--no-autostart"])
            #expect(waited.exitCode == 3, "\(waited.stderr)")
            #expect(waited.stderr.contains("haul resume \(id)"), "\(waited.stderr)")
            #expect(!waited.stderr.contains("same command"), "\(waited.stderr)")
            let listed = try await box.run(["ls", "--no-autostart"])
            #expect(listed.stdout.contains("haul resume \(id)") && !listed.stdout.contains("same command"), "\(listed.stdout)")
            // haul get's own failure still says to run it again.
            let got = try await box.run(["get", "http://127.0.0.1:\(refusing.port)/f.bin", "-o", "g.bin", "--retries", "0"])
            #expect(got.exitCode == 3 && got.stderr.contains("run the same command again"), "\(got.stderr)")
        }
    }
}
