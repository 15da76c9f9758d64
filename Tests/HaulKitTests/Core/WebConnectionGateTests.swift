import Testing
@testable import HaulCore

@Suite("The dashboard's connection gate and event streams")
struct WebConnectionGateTests {
    func limits(open: Int = 100, pending: Int = 10, perPeer: Int = 4) -> WebConnectionGate.Limits {
        var limits = WebConnectionGate.Limits()
        limits.maxOpen = open
        limits.maxPending = pending
        limits.maxPendingPerPeer = perPeer
        return limits
    }

    @Test func theDefaultsAreBoundedAndShrinkWithTheDescriptorLimit() {
        let plenty = WebConnectionGate.Limits()
        #expect(plenty.maxOpen == 2_048 && plenty.maxPending == 1_024 && plenty.maxPendingPerPeer == 128)
        #expect(plenty.headDeadline == .seconds(10) && plenty.bodyDeadline == .seconds(60))
        for descriptors in [64, 256, 1_024, 4_096, 20_000, 1 << 20] {
            let limits = WebConnectionGate.Limits(descriptorLimit: descriptors)
            #expect(limits.maxOpen <= max(16, descriptors / 8), "\(descriptors): \(limits)")
            #expect(limits.maxPending <= limits.maxOpen && limits.maxPendingPerPeer < limits.maxPending, "\(descriptors): \(limits)")
            #expect(limits.maxPending <= 1_024)
        }
        #expect(WebConnectionGate.Limits(descriptorLimit: 1_024).maxOpen == 128)
    }

    @Test func pendingConnectionsAreCappedPerPeerAndInAll() {
        var gate = WebConnectionGate(limits: limits())
        for _ in 0..<4 { let admitted = gate.admit(peer: "a"); #expect(admitted) }
        let fifth = gate.admit(peer: "a")
        #expect(!fifth, "a fifth from one peer")
        for peer in ["b", "c"] { for _ in 0..<3 { let admitted = gate.admit(peer: peer); #expect(admitted) } }
        #expect(gate.pending == 10)
        let over = gate.admit(peer: "d")
        #expect(!over, "over the total")
        // A connection that shows a credential no longer counts as pending: another may come.
        gate.trust(peer: "a")
        #expect(gate.pending == 9 && gate.pending(from: "a") == 3)
        let room = gate.admit(peer: "d")
        #expect(room)
        gate.close(peer: "a", pending: false)
        gate.close(peer: "b", pending: true)
        #expect(gate.pending == 9 && gate.open == 9)
        let again = gate.admit(peer: "b")
        #expect(again)
    }

    @Test func openConnectionsAreCappedEvenWhenTrusted() {
        var gate = WebConnectionGate(limits: limits(open: 5, pending: 5, perPeer: 5))
        for _ in 0..<5 {
            let admitted = gate.admit(peer: "owner")
            #expect(admitted)
            gate.trust(peer: "owner")
        }
        #expect(gate.pending == 0 && gate.open == 5)
        let refused = gate.admit(peer: "x")
        #expect(!refused)
    }

    @Test func anyInterleavingKeepsTheCountsWithinTheLimits() {
        // Property: whatever the order of admissions, trusts and closes, the counts never pass the limits and come
        // back to zero once every connection has closed.
        var random = SplitMix(seed: 7)
        for _ in 0..<200 {
            var gate = WebConnectionGate(limits: limits(open: 12, pending: 8, perPeer: 3))
            var open: [(peer: String, pending: Bool)] = []
            for _ in 0..<200 {
                switch random.next() % 3 {
                case 0:
                    let peer = "p\(random.next() % 4)"
                    if gate.admit(peer: peer) { open.append((peer, true)) }
                case 1 where !open.isEmpty:
                    let index = Int(random.next() % UInt64(open.count))
                    if open[index].pending { gate.trust(peer: open[index].peer); open[index].pending = false }
                case 2 where !open.isEmpty:
                    let closed = open.remove(at: Int(random.next() % UInt64(open.count)))
                    gate.close(peer: closed.peer, pending: closed.pending)
                default: break
                }
                #expect(gate.open == open.count && gate.open <= 12)
                #expect(gate.pending == open.filter(\.pending).count && gate.pending <= 8)
                for peer in ["p0", "p1", "p2", "p3"] { #expect(gate.pending(from: peer) <= 3) }
            }
            for connection in open { gate.close(peer: connection.peer, pending: connection.pending) }
            #expect(gate.open == 0 && gate.pending == 0)
        }
    }

    @Test func streamsAreCappedPerLoginAndInAll() {
        var limits = WebStreamLimits()
        limits.maxPerLogin = 2
        limits.maxTotal = 3
        var streams = WebStreams<Int>(run: "r", limits: limits)
        let now = ContinuousClock.now
        let first = streams.open(session: "s", login: "a", wake: 1, at: now), second = streams.open(session: "s", login: "a", wake: 2, at: now)
        #expect((try? first.get()) != nil && (try? second.get()) != nil)
        let overLogin = streams.open(session: "t", login: "a", wake: 3, at: now)
        #expect(overLogin == .failure(.tooManyForLogin))
        let third = try? streams.open(session: "t", login: "b", wake: 4, at: now).get()
        #expect(third != nil)
        let overTotal = streams.open(session: "t", login: "c", wake: 5, at: now)
        #expect(overTotal == .failure(.tooMany))
        let closed = streams.close(third ?? 0, at: now)
        #expect(closed == 4)
        let room = streams.open(session: "t", login: "c", wake: 6, at: now)
        #expect((try? room.get()) != nil)
    }

    @Test func aRingIsKeptWhileWatchedAndForItsGraceThenFreed() {
        var limits = WebStreamLimits()
        limits.ringGrace = .seconds(30)
        var streams = WebStreams<Int>(run: "r", limits: limits)
        let start = ContinuousClock.now
        let unwatched = streams.record(["unwatched"], in: "s", at: start)
        #expect(unwatched.isEmpty, "a session nobody watches keeps no ring")
        #expect(streams.ring("s") == nil)
        guard case .success(let id) = streams.open(session: "s", login: "a", wake: 9, at: start) else { Issue.record("refused"); return }
        let firstRun = streams.ring("s")?.run
        let woken = streams.record(["e1", "e2"], in: "s", at: start)
        #expect(woken == [9])
        let cursor = streams.ring("s")?.cursor(1) ?? ""
        _ = streams.close(id, at: start + .seconds(1))
        // Within the grace, a reconnection replays what it missed.
        _ = streams.record(["e3"], in: "s", at: start + .seconds(5))
        guard case .events(let missed)? = streams.ring("s")?.replay(after: cursor) else { Issue.record("reset within the grace"); return }
        #expect(missed.map(\.element) == ["e2", "e3"])
        streams.sweep(at: start + .seconds(30))
        #expect(streams.ringCount == 1)
        streams.sweep(at: start + .seconds(31))
        #expect(streams.ringCount == 0 && !streams.hasIdleRings, "freed after its grace")
        // A ring made again has another run: a cursor of the freed one resets, never replays other events.
        _ = streams.open(session: "s", login: "a", wake: 10, at: start + .seconds(40))
        #expect(streams.ring("s")?.run != firstRun)
        for index in 0..<5 { _ = streams.record(["n\(index)"], in: "s", at: start + .seconds(41)) }
        guard case .reset? = streams.ring("s")?.replay(after: cursor) else { Issue.record("an old cursor must reset"); return }
    }

    @Test func tenThousandSessionsOpenedAndClosedLeaveNoRing() {
        var streams = WebStreams<Int>(run: "r")
        let start = ContinuousClock.now
        for index in 0..<10_000 {
            if case .success(let id) = streams.open(session: "s\(index)", login: "a", wake: index, at: start) {
                _ = streams.close(id, at: start)
            }
        }
        #expect(streams.count == 0)
        streams.sweep(at: start + WebStreamLimits().ringGrace)
        #expect(streams.ringCount == 0)
    }
}
