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
/// whose turn it is syncs on its own thread, so no thread is woken only to sync; and each caller is woken once at
/// most (its sync done, or its turn come), by a semaphore of its own, not with every other waiter on each change.
final class DirectorySyncer: @unchecked Sendable {
    /// A caller waiting for a sync that another caller is gathering or making.
    private final class Waiter {
        let ticket: Int
        let wake = DispatchSemaphore(value: 0)
        /// Set before `wake` is signalled: whether the caller's sync is done (else the next turn is its).
        var synced = false

        init(ticket: Int) {
            self.ticket = ticket
        }
    }

    /// One folder's syncs (guarded by `lock`). Callers are numbered from one sequence for all folders, so a
    /// folder forgotten and met again never confuses a caller of before with one of now.
    private struct Folder {
        /// Files being published into it that have not asked for their sync yet.
        var publishing = 0
        /// The number of the last caller that asked for a sync.
        var asked: Int
        /// Every caller up to this number has had its sync.
        var synced: Int
        /// Whether a caller holds the turn: gathering the files being published, or syncing.
        var syncing = false
        /// The turn's holder, while it waits for the files still being published.
        var gatherer: DispatchSemaphore?
        /// Callers waiting for the turn's sync or their own turn, in the order they asked.
        var waiting: [Waiter] = []
        /// Callers that have not returned yet.
        var callers = 0

        /// A folder nobody has asked about since `number`.
        init(after number: Int) {
            asked = number
            synced = number
        }

        var isIdle: Bool { publishing == 0 && !syncing && callers == 0 }

        /// One file fewer being published: the turn's holder, if it waits for them, goes on once none is left.
        mutating func onePublished() {
            publishing -= 1
            if publishing <= 0, let gatherer {
                gatherer.signal()
                self.gatherer = nil
            }
        }
    }

    private let lock = NSLock()
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
        lock.withLock { folders[key, default: Folder(after: lastNumber)].publishing += 1 }
    }

    /// The file announced by ``willPublish(into:)`` will not be moved into `folder` after all.
    func didNotPublish(into folder: OpenDirectory) {
        didNotPublish(key: folder.identityKey)
    }

    /// ``didNotPublish(into:)`` by the folder's key (for tests).
    func didNotPublish(key: String) {
        lock.withLock {
            folders[key]?.onePublished()
            forgetIfIdle(key)
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
        lock.lock()
        if publishing { folders[key]?.onePublished() }
        lastNumber += 1
        let ticket = lastNumber
        folders[key, default: Folder(after: ticket - 1)].asked = ticket
        folders[key]?.callers += 1
        defer {
            folders[key]?.callers -= 1
            forgetIfIdle(key)
            lock.unlock()
        }
        if folders[key]?.syncing == true {
            // Another caller holds the turn: woken once, when a sync that covers this call is done, or when the
            // turn passes to this caller (its ticket came after the last sync began).
            let waiter = Waiter(ticket: ticket)
            folders[key]?.waiting.append(waiter)
            lock.unlock()
            waiter.wake.wait()
            lock.lock()
            if waiter.synced { return }
        } else {
            folders[key]?.syncing = true
        }
        // This caller's turn: first a moment for the files still being published into the folder (bounded by
        // the deadline; each turn of the loop is a wake-up by the last of them, or the deadline).
        let deadline = DispatchTime.now() + gathering
        for _ in 0..<64 where (folders[key]?.publishing ?? 0) > 0 {
            let gatherer = DispatchSemaphore(value: 0)
            folders[key]?.gatherer = gatherer
            lock.unlock()
            let timedOut = gatherer.wait(timeout: deadline) == .timedOut
            lock.lock()
            if folders[key]?.gatherer === gatherer { folders[key]?.gatherer = nil }
            if timedOut { break }
        }
        let covers = folders[key]?.asked ?? ticket
        lock.unlock()
        sync()
        lock.lock()
        guard var folder = folders[key] else { return }
        folder.synced = max(folder.synced, covers)
        // Everyone who asked before the sync began is done; the first who asked since holds the next turn.
        var later: [Waiter] = []
        for waiter in folder.waiting {
            if waiter.ticket <= covers {
                waiter.synced = true
                waiter.wake.signal()
            } else {
                later.append(waiter)
            }
        }
        if later.isEmpty {
            folder.syncing = false
        } else {
            later.removeFirst().wake.signal()
        }
        folder.waiting = later
        folders[key] = folder
    }

    /// How many callers wait for a sync of `key`'s folder, or are syncing it (for tests).
    func callersWaiting(for key: String) -> Int {
        lock.withLock { folders[key]?.callers ?? 0 }
    }

    /// Forgets a folder nobody publishes into or waits for (guarded by `lock`).
    private func forgetIfIdle(_ key: String) {
        if folders[key]?.isIdle == true { folders[key] = nil }
    }
}
