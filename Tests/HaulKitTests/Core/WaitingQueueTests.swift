import Testing
@testable import HaulKit

@Suite struct WaitingQueueTests {
    func entry(_ id: String, _ sequence: Int64, priority: Int = 0, host: String = "a") -> WaitingQueue.Entry {
        WaitingQueue.Entry(id: id, priority: priority, sequence: sequence, host: host)
    }

    func queue(_ entries: [WaitingQueue.Entry]) -> WaitingQueue {
        var queue = WaitingQueue()
        for entry in entries { queue.insert(entry) }
        return queue
    }

    /// What the scheduler over the whole list would choose.
    func reference(_ waiting: [WaitingQueue.Entry], running: [String: Int], maxConcurrent: Int, maxPerHost: Int) -> [String] {
        var entries = waiting.map { SchedulerEntry(id: $0.id, state: .waiting, priority: $0.priority, sequence: $0.sequence, host: $0.host) }
        var n = 0
        for (host, count) in running {
            for _ in 0..<count {
                n += 1
                entries.append(SchedulerEntry(id: "running-\(n)", state: .running, priority: 0, sequence: 0, host: host))
            }
        }
        return Scheduler.tasksToStart(entries, maxConcurrent: maxConcurrent, maxPerHost: maxPerHost)
    }

    @Test func firstInFirstOutWithinAPriorityHigherPriorityFirst() {
        let q = queue([entry("t1", 1), entry("t2", 2), entry("hi", 3, priority: 5), entry("t4", 4), entry("mid", 5, priority: 1)])
        #expect(q.next(slots: 3, runningPerHost: [:], maxPerHost: 8).map(\.id) == ["hi", "mid", "t1"])
        #expect(q.count == 5)
    }

    @Test func aFullHostDoesNotHoldBackAnother() {
        let q = queue((1...50).map { entry("a\($0)", Int64($0)) } + [entry("b", 51, host: "b")])
        #expect(q.next(slots: 2, runningPerHost: ["a": 2], maxPerHost: 2).map(\.id) == ["b"])
        #expect(q.next(slots: 3, runningPerHost: ["a": 1], maxPerHost: 2).map(\.id) == ["a1", "b"])
        #expect(q.next(slots: 0, runningPerHost: [:], maxPerHost: 2).isEmpty)
    }

    @Test func removingAndReinsertingKeepsTheOrder() {
        var q = queue((1...10).map { entry("t\($0)", Int64($0)) })
        q.remove("t1")
        q.remove("t5")
        #expect(q.remove("t5") == nil)
        #expect(!q.contains("t5"))
        #expect(q.next(slots: 3, runningPerHost: [:], maxPerHost: 8).map(\.id) == ["t2", "t3", "t4"])
        q.insert(entry("t1", 1))                      // resumed: back to its place
        q.insert(entry("t9", 9, priority: 2))          // its priority changed: moves up
        #expect(q.count == 9)
        #expect(q.next(slots: 4, runningPerHost: [:], maxPerHost: 8).map(\.id) == ["t9", "t1", "t2", "t3"])
        q.removeAll()
        #expect(q.isEmpty)
    }

    @Test func takingTheHeadManyTimesStaysInOrder() {
        var q = queue((1...1_000).map { entry("t\($0)", Int64($0)) })
        var taken: [String] = []
        while let next = q.next(slots: 1, runningPerHost: [:], maxPerHost: 8).first {
            taken.append(next.id)
            q.remove(next.id)
            if taken.count == 500 { q.insert(entry("late", 2_000)) }
        }
        #expect(taken == (1...1_000).map { "t\($0)" } + ["late"])
    }

    /// Random queues, hosts, priorities, removals and running counts: the same choice as the scheduler's.
    @Test func choosesWhatTheSchedulerWouldChoose() {
        var generator = SplitMix(seed: 7)
        for _ in 0..<300 {
            var q = WaitingQueue()
            var waiting: [String: WaitingQueue.Entry] = [:]
            let hosts = ["a", "b", "c", "d"]
            for sequence in 1...Int64(generator.next(below: 40) + 1) {
                let e = entry("t\(sequence)", sequence, priority: generator.next(below: 3), host: hosts[generator.next(below: hosts.count)])
                q.insert(e)
                waiting[e.id] = e
            }
            for _ in 0..<generator.next(below: 10) {
                let id = "t\(generator.next(below: 40) + 1)"
                if generator.next(below: 2) == 0 {
                    q.remove(id)
                    waiting[id] = nil
                } else if var e = waiting[id] {
                    e.priority = generator.next(below: 3)
                    q.insert(e)
                    waiting[id] = e
                }
            }
            var running: [String: Int] = [:]
            for host in hosts { running[host] = generator.next(below: 3) }
            let maxConcurrent = generator.next(below: 12) + 1
            let maxPerHost = generator.next(below: 4)
            let slots = maxConcurrent - running.values.reduce(0, +)
            let chosen = q.next(slots: slots, runningPerHost: running, maxPerHost: maxPerHost).map(\.id)
            #expect(chosen == reference(Array(waiting.values), running: running, maxConcurrent: maxConcurrent, maxPerHost: maxPerHost))
            #expect(q.count == waiting.count)
        }
    }
}

extension SplitMix {
    mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
