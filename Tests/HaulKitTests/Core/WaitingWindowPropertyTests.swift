import PropertyBased
import Testing
@testable import HaulCore

/// The window of a session's waiting queue against a model store holding every task: whatever tasks are added,
/// resumed, paused, re-prioritised or started, and whenever a page is read (while changes land), the task the
/// window starts is the queue's first, and no waiting task is ever lost.
@Suite struct WaitingWindowPropertyTests {
    /// A model of the store: every task, waiting or not.
    struct Store {
        var tasks: [String: (entry: WaitingQueue.Entry, waiting: Bool)] = [:]
        var nextSequence: Int64 = 1

        var waiting: [WaitingQueue.Entry] {
            tasks.values.filter(\.waiting).map(\.entry).sorted { $0.position.precedes($1.position) }
        }

        func page(after position: QueuePosition?, limit: Int) -> [WaitingQueue.Entry] {
            Array(waiting.filter { entry in position.map { $0.precedes(entry.position) } ?? true }.prefix(limit))
        }
    }

    /// A page being read: from where, how many, and (read at its start) what it found.
    struct Reading {
        var after: QueuePosition?
        var limit: Int
        var earlyRead: [WaitingQueue.Entry]?
    }

    /// Starts the window's first task as a session does (the store has the last word: a task no longer waiting there
    /// is dropped, one whose priority changed is put back where it belongs); the task started.
    static func startNext(_ window: inout WaitingWindow, _ store: inout Store, reading: Reading?) -> WaitingQueue.Entry? {
        if reading == nil, window.needsRefill(blocked: window.queue.isEmpty) {
            let (after, limit) = window.beginRefill()
            window.refilled(store.page(after: after, limit: limit), asked: limit)
        }
        for _ in 0..<10_000 {
            guard let chosen = window.next(slots: 1, runningPerHost: [:], maxPerHost: { _ in Int.max }).first else { return nil }
            window.notWaiting(chosen.id)
            guard let stored = store.tasks[chosen.id], stored.waiting else { continue }
            store.tasks[chosen.id]?.waiting = false
            return stored.entry
        }
        return nil
    }

    @Test func theWindowStartsTheQueuesFirstAndLosesNoTask() async {
        await propertyCheck(input: Gen.int(in: 0...6_999).array(of: 1...400), Gen.int(in: 1...6), Gen.bool) { operations, pageSize, readLate in
            var store = Store()
            var window = WaitingWindow(pageSize: pageSize, maxHeld: pageSize * 3)
            var reading: Reading?
            for operation in operations {
                let argument = operation / 7
                switch operation % 7 {
                case 0, 1:    // a task is added
                    let entry = WaitingQueue.Entry(id: "t\(store.nextSequence)", priority: argument % 3, sequence: store.nextSequence, host: "h")
                    store.nextSequence += 1
                    store.tasks[entry.id] = (entry, true)
                    window.waiting(entry)
                case 2:    // the next task starts
                    let first = store.waiting.first
                    let started = Self.startNext(&window, &store, reading: reading)
                    // Whenever the page was read, the window holds every waiting task up to its boundary: the first of
                    // the store is the one started, or none when the window has to wait for a page.
                    #expect(started == nil ? reading != nil || first == nil : started?.id == first?.id)
                case 3:    // a task that is not waiting is resumed (keeping its place in the order of addition)
                    let others = store.tasks.values.filter { !$0.waiting }.map(\.entry).sorted { $0.sequence < $1.sequence }
                    guard !others.isEmpty else { continue }
                    let entry = others[argument % others.count]
                    store.tasks[entry.id]?.waiting = true
                    window.waiting(entry)
                case 4:    // a waiting task's priority changes
                    let waiting = store.waiting
                    guard !waiting.isEmpty else { continue }
                    var entry = waiting[argument % waiting.count]
                    entry.priority = argument % 4
                    store.tasks[entry.id] = (entry, true)
                    window.waiting(entry)
                case 5:    // a waiting task is paused
                    let waiting = store.waiting
                    guard !waiting.isEmpty else { continue }
                    let entry = waiting[argument % waiting.count]
                    store.tasks[entry.id]?.waiting = false
                    window.notWaiting(entry.id)
                default:    // a page is asked for, or the one asked for arrives
                    if let current = reading {
                        let page = readLate ? store.page(after: current.after, limit: current.limit) : current.earlyRead ?? []
                        window.refilled(page, asked: current.limit)
                        reading = nil
                    } else if window.needsRefill(blocked: true) {
                        let (after, limit) = window.beginRefill()
                        reading = Reading(after: after, limit: limit, earlyRead: readLate ? nil : store.page(after: after, limit: limit))
                    }
                }
                #expect(window.queue.count <= window.maxHeld + operations.count)
            }
            if let current = reading {
                window.refilled(readLate ? store.page(after: current.after, limit: current.limit) : current.earlyRead ?? [], asked: current.limit)
            }
            // Draining starts every waiting task: none was lost between the window and the store.
            for _ in 0...(store.tasks.count + 1) where Self.startNext(&window, &store, reading: nil) != nil {}
            #expect(store.waiting.isEmpty)
            #expect(window.isEmpty)
        }
    }

    @Test func aMillionTasksAddedInBatchesAreHeldAPageAtATime() {
        var window = WaitingWindow(pageSize: 4096, maxHeld: 32_768)
        // Nothing read yet: the first page comes from the store.
        #expect(window.needsRefill(blocked: false))
        let (after, limit) = window.beginRefill()
        #expect(after == nil)
        window.refilled([], asked: limit)
        #expect(window.isEmpty)
        for n in 0..<1_000_000 {
            window.waiting(WaitingQueue.Entry(id: "t\(n)", priority: 0, sequence: Int64(n), host: "h\(n % 50)"))
        }
        #expect(window.queue.count <= window.maxHeld)
        #expect(!window.isComplete)
        #expect(window.queue.next(slots: 1, runningPerHost: [:], maxPerHost: 8).first?.id == "t0")
    }

    @Test func aWindowWhoseTasksAllWaitForABusyHostGrowsToFindOthers() {
        var window = WaitingWindow(pageSize: 4, maxHeld: 12)
        let (_, limit) = window.beginRefill()
        window.refilled((0..<4).map { WaitingQueue.Entry(id: "a\($0)", priority: 0, sequence: Int64($0), host: "busy") }, asked: limit)
        // Four held, the host runs its most: not low, but blocked.
        #expect(!window.needsRefill(blocked: false))
        #expect(window.needsRefill(blocked: true))
        let (after, more) = window.beginRefill()
        #expect(after == QueuePosition(priority: 0, sequence: 3))
        window.refilled([WaitingQueue.Entry(id: "b", priority: 0, sequence: 4, host: "other")], asked: more)
        #expect(window.isComplete)
        #expect(window.queue.next(slots: 1, runningPerHost: ["busy": 8], maxPerHost: 8).map(\.id) == ["b"])
    }
}
