import PropertyBased
import Testing
@testable import HaulKit

/// While a download waits to retry a host that could not be reached, the session's free slots go to other hosts'
/// downloads first: the next download of a host that is down would only hold its slot for a whole backoff.
@Suite struct UnreachableHostsLastTests {
    static func entry(_ id: String, _ sequence: Int64, priority: Int = 0, host: String) -> WaitingQueue.Entry {
        WaitingQueue.Entry(id: id, priority: priority, sequence: sequence, host: host)
    }

    @Test func anotherHostsDownloadTakesTheFreeSlotFirst() {
        var queue = WaitingQueue()
        for n in 1...5 { queue.insert(Self.entry("down\(n)", Int64(n), priority: n == 3 ? 9 : 0, host: "down:80")) }
        queue.insert(Self.entry("up", 6, host: "up:80"))
        // One slot free: the live host's download, though the host that is down has a higher-priority one waiting.
        #expect(queue.next(slots: 1, runningPerHost: ["down:80": 2], maxPerHost: { _ in 8 }, unreachable: ["down:80"]).map(\.id) == ["up"])
        // More slots than other hosts can use: the rest go to the host that is down, in its order.
        #expect(queue.next(slots: 3, runningPerHost: ["down:80": 2], maxPerHost: { _ in 8 }, unreachable: ["down:80"]).map(\.id)
            == ["up", "down3", "down1"])
        // Reachable again: the queue's own order.
        #expect(queue.next(slots: 1, runningPerHost: ["down:80": 2], maxPerHost: { _ in 8 }).map(\.id) == ["down3"])
    }

    /// Hosts h0…h3, each entry of a random host and priority; some hosts unreachable, some running already.
    static let entries = zip(Gen.int(in: 0...3), Gen.int(in: 0...2)).array(of: 0...30)
    static let hostSet = Gen.int(in: 0...3).array(of: 0...3)

    @Test func unreachableHostsGoLastAndNothingElseChanges() async {
        await propertyCheck(input: Self.entries, Self.hostSet, Gen.int(in: 0...3).array(of: 4), Gen.int(in: 0...12)) { raw, down, running, slots in
            var queue = WaitingQueue()
            var reachableOnly = WaitingQueue()
            let unreachable = Set(down.map { "h\($0)" })
            for (index, item) in raw.enumerated() {
                let entry = Self.entry("t\(index)", Int64(index), priority: item.1, host: "h\(item.0)")
                queue.insert(entry)
                if !unreachable.contains(entry.host) { reachableOnly.insert(entry) }
            }
            let runningPerHost = Dictionary(uniqueKeysWithValues: running.enumerated().map { ("h\($0.offset)", $0.element) })
            let cap: (String) -> Int = { _ in 2 }
            let plain = queue.next(slots: slots, runningPerHost: runningPerHost, maxPerHost: cap)
            let chosen = queue.next(slots: slots, runningPerHost: runningPerHost, maxPerHost: cap, unreachable: unreachable)
            // As many start, and each host gets no more than its room.
            #expect(chosen.count == plain.count)
            for host in Set(chosen.map(\.host)) {
                #expect(chosen.filter { $0.host == host }.count <= max(0, 2 - runningPerHost[host, default: 0]))
            }
            // Every reachable host's download first, exactly as if the others were not queued at all.
            let firstUnreachable = chosen.firstIndex { unreachable.contains($0.host) } ?? chosen.endIndex
            #expect(!chosen[firstUnreachable...].contains { !unreachable.contains($0.host) })
            #expect(chosen[..<firstUnreachable].map(\.id)
                == reachableOnly.next(slots: slots, runningPerHost: runningPerHost, maxPerHost: cap).map(\.id))
        }
    }
}
