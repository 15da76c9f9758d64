import Foundation

/// Fsyncs of a directory, shared (group commit): a caller that asks while one runs waits for the next, which begins
/// after the running one ends and so covers everything every waiting caller did in the directory before asking (a
/// rename into place). Each caller still returns only after an fsync that began after it asked.
///
/// Files being published into the folder (between their own fsync and their rename, ``willPublish(into:)``) are
/// waited for a moment before a sync begins, so that one sync covers them too: many small downloads finishing
/// into one folder then cost a few directory fsyncs, not one each. Each fsync of a file or folder waits for the
/// disk several times, and every wait is a thread put to sleep and woken again.
///
/// The calls that sync block their thread: they run on the blocking-I/O threads (``BlockingIO``). The caller
/// whose turn it is syncs on its own thread, so no thread is woken only to sync.
final class DirectorySyncer: @unchecked Sendable {
    /// One folder's syncs (guarded by `condition`). Callers are numbered from one sequence for all folders, so a
    /// folder forgotten and met again never confuses a caller of before with one of now.
    private struct Folder {
        /// Files being published into it that have not asked for their sync yet.
        var publishing = 0
        /// The number of the last caller that asked for a sync.
        var asked: Int
        /// Every caller up to this number has had its sync.
        var synced: Int
        /// Whether a caller is syncing it now.
        var syncing = false
        /// Callers that have not returned yet.
        var callers = 0

        /// A folder nobody has asked about since `number`.
        init(after number: Int) {
            asked = number
            synced = number
        }

        var isIdle: Bool { publishing == 0 && !syncing && callers == 0 }
    }

    private let condition = NSCondition()
    private var folders: [String: Folder] = [:]
    /// The number of the last caller of any folder.
    private var lastNumber = 0
    /// How long a sync waits at most for files still being published into its folder.
    private let gathering: TimeInterval

    init(gathering: Duration = .milliseconds(1)) {
        self.gathering = gathering.seconds
    }

    static let shared = DirectorySyncer()

    /// A file is about to be synced and moved into `folder`: a sync asked for meanwhile waits a moment for it.
    /// Each call is followed by ``syncPublished(_:)`` or ``didNotPublish(into:)``.
    func willPublish(into folder: OpenDirectory) {
        willPublish(key: folder.identityKey)
    }

    /// ``willPublish(into:)`` by the folder's key (for tests).
    func willPublish(key: String) {
        condition.withLock { folders[key, default: Folder(after: lastNumber)].publishing += 1 }
    }

    /// The file announced by ``willPublish(into:)`` will not be moved into `folder` after all.
    func didNotPublish(into folder: OpenDirectory) {
        didNotPublish(key: folder.identityKey)
    }

    /// ``didNotPublish(into:)`` by the folder's key (for tests).
    func didNotPublish(key: String) {
        condition.withLock {
            folders[key]?.publishing -= 1
            forgetIfIdle(key)
            condition.broadcast()
        }
    }

    /// On a blocking-I/O thread, after the file announced by ``willPublish(into:)`` was moved into `folder`:
    /// returns once an fsync of the folder that began after this call has completed.
    func syncPublished(_ folder: OpenDirectory) {
        waitForSync(key: folder.identityKey, publishing: true) { folder.sync() }
    }

    /// ``syncPublished(_:)`` of the folder `key` with `sync` (for tests).
    func syncPublished(key: String, sync: () -> Void) {
        waitForSync(key: key, publishing: true, sync: sync)
    }

    /// On a blocking-I/O thread: returns once a sync of the folder `key` by `sync`, begun after this call, has
    /// completed; no file was announced for it (for tests).
    func sync(key: String, _ sync: () -> Void) {
        waitForSync(key: key, publishing: false, sync: sync)
    }

    private func waitForSync(key: String, publishing: Bool, sync: () -> Void) {
        condition.lock()
        defer { condition.unlock() }
        if publishing {
            folders[key]?.publishing -= 1
            condition.broadcast()
        }
        lastNumber += 1
        let ticket = lastNumber
        folders[key, default: Folder(after: ticket - 1)].asked = ticket
        folders[key]?.callers += 1
        defer {
            folders[key]?.callers -= 1
            forgetIfIdle(key)
        }
        // A caller whose turn it is first waits a moment for the files still being published into the folder.
        let deadline = Date(timeIntervalSinceNow: gathering)
        // Bounded: each turn syncs, or waits for a sync, a publisher or the deadline. A folder is forgotten only
        // once every caller of it had its sync.
        while let folder = folders[key], folder.synced < ticket {
            if folder.syncing {
                condition.wait()
                continue
            }
            if folder.publishing > 0, Date() < deadline {
                _ = condition.wait(until: deadline)
                continue
            }
            let covers = folder.asked
            folders[key]?.syncing = true
            condition.unlock()
            sync()
            condition.lock()
            if var folder = folders[key] {
                folder.syncing = false
                folder.synced = max(folder.synced, covers)
                folders[key] = folder
            }
            condition.broadcast()
        }
    }

    /// How many callers wait for a sync of `key`'s folder, or are syncing it (for tests).
    func callersWaiting(for key: String) -> Int {
        condition.withLock { folders[key]?.callers ?? 0 }
    }

    /// Forgets a folder nobody publishes into or waits for (guarded by `condition`).
    private func forgetIfIdle(_ key: String) {
        if folders[key]?.isIdle == true { folders[key] = nil }
    }
}
