/// The part of a session's waiting queue kept in memory: the first tasks in the queue's order, up to a few
/// thousand, while the store keeps them all. A list of a million URLs then costs the session as much memory as one
/// of a few thousand; the store is read a page at a time, on its queue index, as tasks start. Pure: the session
/// reads the pages and tells the window what changed.
///
/// Invariant: when ``isComplete``, the window holds every waiting task; otherwise it holds exactly the waiting tasks
/// up to ``boundary`` (the last position read from the store), and the ones after it are read later. While a page is
/// being read (``beginRefill()``…``refilled(_:asked:)``), every task that becomes waiting is held: the page may
/// have been read before it was stored, and the tasks beyond the page's end are dropped again when it arrives.
package struct WaitingWindow: Sendable {
    /// The tasks held.
    public private(set) var queue = WaitingQueue()
    /// The last position read from the store, when the window does not hold everything.
    public private(set) var boundary: QueuePosition?
    /// Whether the window holds every waiting task of the store.
    public private(set) var isComplete: Bool
    /// Whether a page is being read.
    public private(set) var isRefilling = false
    /// The tasks that changed while the page is read: what the page says of them is older than what the window knows.
    private var changedDuringRefill: Set<String> = []
    /// Tasks held when the window is topped up.
    public let pageSize: Int
    /// Tasks held at most (a window whose first tasks all wait for a busy host grows up to it to find others).
    public let maxHeld: Int

    /// A window that has read nothing yet (`isComplete`: a store known to be empty, or every waiting task given
    /// through ``waiting(_:)``).
    public init(pageSize: Int = 4096, maxHeld: Int = 32_768, isComplete: Bool = false) {
        self.pageSize = max(1, pageSize)
        self.maxHeld = max(self.pageSize * 2, maxHeld)
        self.isComplete = isComplete
    }

    /// Whether no task waits, here or in the store.
    public var isEmpty: Bool { queue.isEmpty && isComplete }

    /// A task is waiting now (added, resumed, or its priority changed): held when it comes before the boundary.
    public mutating func waiting(_ entry: WaitingQueue.Entry) {
        if isRefilling { changedDuringRefill.insert(entry.id) }
        guard isComplete || isRefilling || isWithinBoundary(entry.position) else {
            queue.remove(entry.id)    // after the boundary: the store has it, a later page brings it
            return
        }
        queue.insert(entry)
        // Not while a page is read: its end becomes the boundary, and tasks trimmed before it would never be read.
        if !isRefilling, queue.count > maxHeld, let last = queue.trim(to: maxHeld - pageSize) {
            boundary = last
            isComplete = false
        }
    }

    /// A task is no longer waiting (started, paused, removed…).
    public mutating func notWaiting(_ id: String) {
        if isRefilling { changedDuringRefill.insert(id) }
        queue.remove(id)
    }

    /// The waiting tasks to start, in order, as ``WaitingQueue/next(slots:runningPerHost:maxPerHost:)`` chooses them
    /// from the tasks held; while a page is read, only those up to the boundary (a task held beyond it may come after
    /// tasks the page brings).
    public func next(
        slots: Int, runningPerHost: [String: Int], maxPerHost: (String) -> Int, unreachable: Set<String> = []
    ) -> [WaitingQueue.Entry] {
        let chosen = queue.next(slots: slots, runningPerHost: runningPerHost, maxPerHost: maxPerHost, unreachable: unreachable)
        guard isRefilling, !isComplete else { return chosen }
        return chosen.filter { isWithinBoundary($0.position) }
    }

    /// Whether a task at `position` comes no later than the last one read from the store.
    private func isWithinBoundary(_ position: QueuePosition) -> Bool {
        boundary.map { !$0.precedes(position) } ?? false
    }

    /// Whether to read the next page: the window runs low, or (`blocked`: slots are free but every task held waits
    /// for a busy host) it may grow to find tasks of other hosts.
    public func needsRefill(blocked: Bool) -> Bool {
        guard !isComplete, !isRefilling else { return false }
        return queue.count < pageSize / 2 || (blocked && queue.count + pageSize <= maxHeld)
    }

    /// A page is being read: from where and how many tasks.
    public mutating func beginRefill() -> (after: QueuePosition?, limit: Int) {
        isRefilling = true
        return (boundary, max(pageSize - queue.count, pageSize / 2, 1))
    }

    /// The page read (`asked` tasks were asked for): held, and its last task is the new boundary; fewer than asked
    /// means the store has no more.
    public mutating func refilled(_ page: [WaitingQueue.Entry], asked: Int) {
        isRefilling = false
        for entry in page where !changedDuringRefill.contains(entry.id) { queue.insert(entry) }
        changedDuringRefill = []
        if page.count < asked {
            isComplete = true
            boundary = nil
        } else {
            boundary = page.last?.position ?? boundary
            // Tasks held while the page was read that come after its end: a later page brings them, in order.
            if let boundary { queue.drop(after: boundary) }
        }
    }

    /// The page could not be read: tried again at the next chance.
    public mutating func refillFailed() {
        isRefilling = false
        changedDuringRefill = []
    }
}
