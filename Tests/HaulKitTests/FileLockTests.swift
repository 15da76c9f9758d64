import Foundation
import Testing
@testable import HaulKit

/// `haul clean` deletes lock files while holding them: whoever opened such a file just before must not end up
/// "holding" a lock nobody else can see.
@Suite struct FileLockTests {
    func temporaryPath() throws -> String {
        let folder = NSTemporaryDirectory() + "haul-lock-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder + "/a.lock"
    }

    @Test func probingSeesMissingHeldAndFreeLocks() throws {
        let path = try temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        guard case .missing = FileLock.takeExisting(path) else { Issue.record("no file yet"); return }
        #expect(!FileManager.default.fileExists(atPath: path), "probing creates nothing")
        let lock = try FileLock(path: path, busy: HaulError(.busy, "busy"))
        guard case .held = FileLock.takeExisting(path) else { Issue.record("held by the lock above"); return }
        lock.release()
        guard case .taken(let probe) = FileLock.takeExisting(path) else { Issue.record("free after release"); return }
        #expect(throws: HaulError.self) { try FileLock(path: path, busy: HaulError(.busy, "busy")) }
        probe.release()
    }

    @Test func aLockFileDeletedUnderAWaiterIsNotTrustedByIt() throws {
        let path = try temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        guard case .taken(let cleaner) = FileLock.takeExisting(path) else {
            Issue.record("the lock file is free")
            return
        }
        // Another owner opens the file and waits for the lock (it retries for about half a second)...
        // (on a thread of its own: its waiting blocks, and must not hold up this test on a busy cooperative pool).
        let waiter = LockWaiter(path)
        usleep(100_000)
        // ...while the holder deletes the file and lets go, as `haul clean` does.
        unlink(path)
        cleaner.release()
        let taken = try waiter.result()
        // Whether it opened the old file or not, what it holds is the lock at `path`, visible to everyone.
        guard case .held = FileLock.takeExisting(path) else {
            Issue.record("the waiter holds a lock on a deleted file")
            return
        }
        taken.release()
    }
}

/// Takes a lock on a thread of its own.
private final class LockWaiter: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var outcome: Result<FileLock, any Error>?

    init(_ path: String) {
        Thread {
            do {
                self.outcome = .success(try FileLock(path: path, busy: HaulError(.busy, "busy")))
            } catch {
                self.outcome = .failure(error)
            }
            self.done.signal()
        }.start()
    }

    /// Waits (at most 10 s) for the lock.
    func result() throws -> FileLock {
        guard done.wait(timeout: .now() + 10) == .success, let outcome else { throw HaulError(.busy, "the waiter never finished") }
        return try outcome.get()
    }
}
