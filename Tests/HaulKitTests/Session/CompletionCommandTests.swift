import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

/// Completion commands are started with posix_spawn and reaped by a thread of their own.
@Suite struct CompletionCommandTests {
    let task = TaskSnapshot(id: "t1", url: "https://user:secret@example.com/a.iso", state: .finished, bytes: 42, filePath: "/d/a.iso")

    @Test func theCommandSeesTheTaskAndItsStatusIsReported() async throws {
        let path = NSTemporaryDirectory() + "haul-hook-\(UUID().uuidString)"
        defer { unlink(path) }
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        let running = try #require(CompletionCommand(#"echo "$HAUL_TASK_ID $HAUL_TASK_URL $HAUL_TASK_PATH $HAUL_TASK_BYTES $HAUL_SESSION"; exit 3"#)
            .start(for: task, session: "s1", output: handle))
        #expect(await running.wait(upTo: .seconds(60)) == 3)
        try handle.close()
        let written = try String(contentsOfFile: path, encoding: .utf8)
        #expect(written == "t1 https://***@example.com/a.iso /d/a.iso 42 s1\n")
    }

    @Test func aCommandNobodyWaitsForLeavesNoZombie() async throws {
        let path = NSTemporaryDirectory() + "haul-hook-\(UUID().uuidString)"
        defer { unlink(path) }
        _ = CompletionCommand("echo $$ > '\(path)'").start(for: task, session: nil)
        // Its pid, once written; then the process must vanish entirely (reaped), not stay a zombie.
        var pid: Int32?
        for _ in 0..<3000 where pid == nil {
            pid = (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if pid == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        let child = try #require(pid, "the command ran")
        var gone = false
        for _ in 0..<3000 where !gone {
            gone = kill(child, 0) != 0 && errno == ESRCH
            if !gone { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(gone, "the finished command was reaped")
    }
}
