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
        guard case .held = FileLock.takeExisting(path) else { Issue.record("held by the probe"); return }
        probe.release()
    }

    /// Destination locks are bytes of one shared file: a key is held by one owner at a time, also within one
    /// process, other keys stay free, and taking them creates no file per key.
    @Test func keyedLocksInOneFileExcludeTheSameKeyOnly() throws {
        let path = try temporaryPath()
        let folder = (path as NSString).deletingLastPathComponent
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let a = String(repeating: "a", count: 64), b = String(repeating: "b", count: 64)
        guard case .missing = FileLock.takeExisting(key: a, among: path) else { Issue.record("no file yet"); return }
        let first = try FileLock(key: a, among: path, busy: HaulError(.busy, "busy"))
        guard case .held = FileLock.takeExisting(key: a, among: path) else { Issue.record("held by the lock above"); return }
        let busy = #expect(throws: HaulError.self) { try FileLock(key: a, among: path, busy: HaulError(.busy, "a is busy")) }
        #expect(busy?.message == "a is busy")
        let other = try FileLock(key: b, among: path, busy: HaulError(.busy, "busy"))
        #if os(Linux)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["a.lock"], "one file for every key")
        #endif
        first.release()
        guard case .taken(let probe) = FileLock.takeExisting(key: a, among: path) else { Issue.record("free after release"); return }
        guard case .held = FileLock.takeExisting(key: b, among: path) else { Issue.record("b is still held"); return }
        probe.release()
        other.release()
        let again = try FileLock(key: b, among: path, busy: HaulError(.busy, "busy"))
        again.release()
        #if os(Linux)
        // A key's byte is its first 60 bits; text that is not a hex digest is digested first (the same place each time).
        #expect(FileLock.offset(of: a) == Int64(String(repeating: "a", count: 15), radix: 16))
        #expect(FileLock.offset(of: "not a digest") == FileLock.offset(of: "not a digest"))
        #expect(FileLock.offset(of: "not a digest") != FileLock.offset(of: "not a digest either"))
        #expect(FileLock.offset(of: "not a digest") >= 0)
        #endif
    }

    @Test func aLockFileDeletedUnderAWaiterIsNotTrustedByIt() async throws {
        let path = try temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        guard case .taken(let cleaner) = FileLock.takeExisting(path) else {
            Issue.record("the lock file is free")
            return
        }
        // Another owner opens the file and waits for the lock (it retries for about half a second), while the holder
        // deletes the file and lets go, as `haul clean` does: each on a thread of its own, so that a busy cooperative
        // pool cannot make the holder late for the waiter's half second.
        let waiter = LockWaiter(path)
        Thread {
            usleep(100_000)
            unlink(path)
            cleaner.release()
        }.start()
        let taken = try await waiter.result()
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
    private let lock = NSLock()
    private var outcome: Result<FileLock, any Error>?

    init(_ path: String) {
        Thread {
            let outcome: Result<FileLock, any Error> = Result { try FileLock(path: path, busy: HaulError(.busy, "busy")) }
            self.lock.withLock { self.outcome = outcome }
        }.start()
    }

    /// Waits (at most 60 s, without blocking a thread of the cooperative pool) for the lock. The outcome is looked
    /// at once more after the deadline: a pool starved past it may find the waiter long done.
    func result() async throws -> FileLock {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            if let outcome = lock.withLock({ outcome }) { return try outcome.get() }
            guard ContinuousClock.now < deadline else { throw HaulError(.busy, "the waiter never finished") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
