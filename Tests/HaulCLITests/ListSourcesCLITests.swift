import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `-i` lists from wherever wget and aria2c read them: a pipe (`-i <(command)`), a named pipe, a file saved with a
/// byte-order mark; and the daemon's queue as `haul add -i`, `haul ls` and `haul wait --all` see it.
@Suite struct ListSourcesCLITests {
    /// How a list reaches `-i` through a pipe: bash's process substitution, or a named pipe (FIFO) written after haul
    /// has opened it.
    enum Pipe: String, CaseIterable, Sendable {
        case processSubstitution, namedPipe

        /// `/bin/bash -c SCRIPT haul ARGS… -- LINES…`: haul run with `-i` reading `lines`, then `arguments`.
        func command(_ box: Sandbox, haul: String, _ arguments: [String], lines: [String]) throws -> [String] {
            let printed = "printf '%s\\r\\n' " + lines.map { "'\($0)'" }.joined(separator: " ")
            switch self {
            case .processSubstitution:
                return ["-c", "exec \"$0\" \"$@\" -i <(\(printed))", haul] + arguments
            case .namedPipe:
                let fifo = box.path("list.fifo")
                guard mkfifo(fifo, 0o600) == 0 else { throw POSIXError(.EEXIST) }
                return ["-c", "(sleep 0.2; \(printed) > '\(fifo)') & exec \"$0\" \"$@\" -i '\(fifo)'", haul] + arguments
            }
        }
    }

    @Test(arguments: Pipe.allCases)
    func aListThroughAPipeIsReadAsWgetAndAria2cReadIt(_ pipe: Pipe) async throws {
        try await withTestServer { server in
            let bodies = (0..<3).map { TestData.bytes(20_000 + $0, seed: UInt64(9_401 + $0)) }
            for (index, body) in bodies.enumerated() { server.serve("/p/\(index).bin", Resource(body: body, etag: "\"\(index)\"")) }
            try await Sandbox.with { box in
                let haul = try HaulBinary.path()
                // Saved by Windows Notepad: a byte-order mark, CRLF line ends.
                let lines = ["\u{FEFF}" + server.url("/p/0.bin"), server.url("/p/1.bin"), server.url("/p/2.bin")]
                let command = try pipe.command(box, haul: haul, ["get", "--dir", "d"], lines: lines)
                let result = try await box.start(command, binary: "/bin/bash").wait(timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(pipe): \(result.stderr)")
                for (index, body) in bodies.enumerated() {
                    #expect(contentMismatch(box.path("d/\(index).bin"), expected: body) == nil, "\(pipe): \(index)")
                    #expect(server.requests("/p/\(index).bin").count == 1)
                }
                // The list was kept in no file that stays behind.
                let kept = (try? FileManager.default.contentsOfDirectory(atPath: box.home + "/tmp")) ?? []
                #expect(kept.isEmpty, "\(kept)")
            }
        }
    }

    /// A pipe's list is bounded as standard input's is: a line of 64 KiB without a newline is refused as soon as it
    /// has arrived; a device or a socket is refused before anything is read.
    @Test func aPipeIsBoundedAndADeviceIsRefused() async throws {
        try await Sandbox.with { box in
            let haul = try HaulBinary.path()
            // A megabyte without a newline (its writer silent when haul has stopped reading).
            let zeros = try await box.start(["-c", "exec \"$0\" get -i <(head -c 1000000 /dev/zero 2>/dev/null) --dir d", haul], binary: "/bin/bash").wait(timeout: .seconds(60))
            #expect(zeros.exitCode == 2 && zeros.stderrLines.count == 1, "\(zeros.stderr)")
            #expect(zeros.stderr.contains("line 1: longer than 64 KiB"), "\(zeros.stderr)")
            for device in ["/dev/zero", "/dev/urandom"] {
                let refused = try await box.run(["get", "-i", device, "--dir", "d"])
                #expect(refused.exitCode == 2 && refused.stderrLines.count == 1 && refused.stderr.contains("is a device"), "\(device): \(refused.stderr)")
            }
            #expect(!fileExists(box.path("d")))
        }
    }

    /// A NUL byte in a list is refused at its line, in one line that says what it is; nothing is fetched.
    @Test(arguments: [(false, 2), (true, 3)] as [(Bool, Int)])
    func aNULByteIsRefusedByItsLine(_ marked: Bool, _ line: Int) async throws {
        try await withTestServer { server in
            server.serve("/n.bin", Resource(body: TestData.bytes(1_000, seed: 9_404), etag: "\"n\""))
            try await Sandbox.with { box in
                var bytes = Array((marked ? "\u{FEFF}# saved by an editor\n" : "").utf8) + Array((server.url("/n.bin") + "\n").utf8)
                bytes += Array("http://".utf8) + [0] + Array("127.0.0.1/x\n".utf8)
                try writeBytes(bytes, to: box.path("nul.txt"))
                let result = try await box.run(["get", "-i", "nul.txt", "--dir", "d"])
                #expect(result.exitCode == 2 && result.stderrLines.count == 1, "\(result.stderr)")
                #expect(result.stderr.contains("nul.txt, line \(line): has a NUL byte"), "\(result.stderr)")
                #expect(server.allRequests().isEmpty)
            }
        }
    }

    /// `haul add -i` takes a pipe too; `haul ls` says why the tasks of a session that runs none at once wait, and
    /// `haul wait --all` waits for every task of the session, as `pause`, `resume` and `rm --all` take them.
    @Test func addReadsAPipeLsSaysWhyTasksWaitAndWaitAllWaitsForEveryTask() async throws {
        try await withTestServer { server in
            let bodies = (0..<2).map { TestData.bytes(30_000, seed: UInt64(9_410 + $0)) }
            for (index, body) in bodies.enumerated() { server.serve("/q/\(index).bin", Resource(body: body, etag: "\"\(index)\"")) }
            try await Sandbox.with { box in
                _ = try await startDaemon(box)
                #expect(try await box.run(["session", "set", "--max-concurrent", "0", "--no-autostart"]).exitCode == 0)
                let command = try Pipe.processSubstitution.command(
                    box, haul: try HaulBinary.path(), ["add", "--dir", box.path("q"), "--no-autostart"], lines: (0..<2).map { server.url("/q/\($0).bin") })
                let added = try await box.start(command, binary: "/bin/bash").wait()
                #expect(added.exitCode == 0 && added.stdoutLines.count == 2, "\(added.stderr)")

                let listed = try await box.run(["ls", "--no-autostart"])
                let rows = listed.stdoutLines.filter { $0.contains("waiting") }
                #expect(rows.count == 2, "\(listed.stdout)")
                #expect(rows.allSatisfy { $0.contains("held back: the session runs 0 downloads at once (its limit)") }, "\(listed.stdout)")
                let json = try await box.run(["ls", "--json", "--no-autostart"]).jsonEvents()
                #expect(json.map { $0["note"] as? String } == Array(repeating: "held back: the session runs 0 downloads at once (its limit)", count: 2))

                for (arguments, words) in [(["wait", "--all", "abc"], "not both"), (["wait"], "--all")] {
                    let refused = try await box.run(arguments + ["--no-autostart"])
                    #expect(refused.exitCode == 2 && refused.stderrLines.count == 1 && refused.stderr.contains(words), "\(arguments): \(refused.stderr)")
                }
                let waiting = try box.start(["wait", "--all", "--no-autostart"])
                #expect(try await box.run(["session", "set", "--max-concurrent", "2", "--no-autostart"]).exitCode == 0)
                let waited = try await waiting.wait(timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                for (index, body) in bodies.enumerated() { #expect(contentMismatch(box.path("q/\(index).bin"), expected: body) == nil) }
                let after = try await box.run(["ls", "--json", "--no-autostart"]).jsonEvents()
                #expect(after.count == 2 && after.allSatisfy { $0["state"] as? String == "finished" && ($0["note"] == nil || $0["note"] is NSNull) }, "\(after)")

                // Every task counts: one that failed before makes the exit code its error's, as with its id.
                server.route("/q/gone.bin") { _ in .text(404, "gone") }
                let failing = try await box.run(["add", server.url("/q/gone.bin"), "-o", box.path("gone.bin"), "--no-autostart"])
                #expect(failing.exitCode == 0, "\(failing.stderr)")
                let all = try await box.run(["wait", "--all", "--no-autostart"], timeout: .seconds(60))
                #expect(all.exitCode == 4 && all.stderr.contains("404"), "\(all.stderr)")
            }
        }
    }
}
