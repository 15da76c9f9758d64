import PropertyBased
import Testing
@testable import HaulCore

/// A queue over many hosts, as a session drains it: tasks added over up to 300 hosts with a few priorities, then
/// started a few at a time (as slots free up), finished, re-queued with another priority, removed, and new ones
/// added meanwhile. At every step the queue chooses what the plain rule (``Scheduler``) chooses from all the
/// waiting tasks, and the hosts' order it keeps (``HostHeads``) stays within its bound.
@Suite struct WaitingQueueManyHostsTests {
    /// One step of a session: what happens next, and a number that says to which task or how many.
    enum Step: CaseIterable { case start, finish, requeue, remove, add }

    static let steps = zip(Gen.element(of: Step.allCases).map { $0 ?? .start }, Gen.int(in: 0...1_000_000)).array(of: 1...150)

    @Test func anySessionOverManyHostsGetsThePlainRulesChoice() async {
        await propertyCheck(
            input: Gen.int(in: 1...300), Gen.int(in: 1...600), Gen.int(in: 1...20), Gen.int(in: 0...4), Gen.int(in: 1...1_000_000), Self.steps
        ) { hostCount, taskCount, maxConcurrent, maxPerHost, seed, steps in
            var random = SplitMix(seed: UInt64(seed))
            var queue = WaitingQueue()
            var waiting: [String: WaitingQueue.Entry] = [:]
            var running: [String: String] = [:]    // id → host
            var sequence: Int64 = 0
            func add() {
                sequence += 1
                let entry = WaitingQueue.Entry(
                    id: "t\(sequence)", priority: random.next(below: 3), sequence: sequence, host: "h\(random.next(below: hostCount))")
                queue.insert(entry)
                waiting[entry.id] = entry
            }
            for _ in 0..<taskCount { add() }
            for (step, number) in steps {
                switch step {
                case .start:
                    var perHost: [String: Int] = [:]
                    for host in running.values { perHost[host, default: 0] += 1 }
                    let slots = maxConcurrent - running.count
                    let chosen = queue.next(slots: slots, runningPerHost: perHost, maxPerHost: maxPerHost)
                    let expected = Self.plainRule(Array(waiting.values), running: perHost, maxConcurrent: maxConcurrent, maxPerHost: maxPerHost)
                    #expect(chosen.map(\.id) == expected)
                    for entry in chosen.prefix(1 + number % max(1, chosen.count)) {
                        queue.remove(entry.id)
                        waiting[entry.id] = nil
                        running[entry.id] = entry.host
                    }
                case .finish:
                    if let id = running.keys.sorted().dropFirst(number % max(1, running.count)).first { running[id] = nil }
                case .requeue:
                    if let id = waiting.keys.sorted().dropFirst(number % max(1, waiting.count)).first, var entry = waiting[id] {
                        entry.priority = number % 3
                        queue.insert(entry)
                        waiting[id] = entry
                    }
                case .remove:
                    if let id = waiting.keys.sorted().dropFirst(number % max(1, waiting.count)).first {
                        queue.remove(id)
                        waiting[id] = nil
                    }
                case .add:
                    for _ in 0..<(1 + number % 5) { add() }
                }
                #expect(queue.count == waiting.count)
                #expect(queue.heldHostHeads <= 2 * Set(waiting.values.map(\.host)).count + 64)
            }
        }
    }

    /// Every host's tasks waiting, one task started after another: the order of the queue, across hosts.
    @Test func tasksOfThousandsOfHostsStartInTheQueuesOrder() {
        var queue = WaitingQueue()
        for index in 0..<5_000 {
            queue.insert(WaitingQueue.Entry(id: "t\(index)", priority: index % 7 == 0 ? 1 : 0, sequence: Int64(index), host: "h\(index % 2_500)"))
        }
        var started: [String] = []
        while let next = queue.next(slots: 16, runningPerHost: [:], maxPerHost: 1).first, started.count < 5_000 {
            started.append(next.id)
            queue.remove(next.id)
        }
        let expected = (0..<5_000).filter { $0 % 7 == 0 } + (0..<5_000).filter { $0 % 7 != 0 }
        #expect(started == expected.map { "t\($0)" })
        #expect(queue.heldHostHeads == 0)
    }

    static func plainRule(_ waiting: [WaitingQueue.Entry], running: [String: Int], maxConcurrent: Int, maxPerHost: Int) -> [String] {
        var entries = waiting.map { SchedulerEntry(id: $0.id, state: .waiting, priority: $0.priority, sequence: $0.sequence, host: $0.host) }
        for (host, count) in running {
            for index in 0..<count {
                entries.append(SchedulerEntry(id: "running-\(host)-\(index)", state: .running, priority: 0, sequence: 0, host: host))
            }
        }
        return Scheduler.tasksToStart(entries, maxConcurrent: maxConcurrent, maxPerHost: maxPerHost)
    }
}
