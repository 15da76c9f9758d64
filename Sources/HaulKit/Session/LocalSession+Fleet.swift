import Foundation

/// What a session that is one node of a fleet keeps beside its own running tasks.
struct FleetBookkeeping {
    /// The leases of the tasks this node runs, and the gates their downloads check before writing.
    var leases: [String: (lease: TaskLease, gate: LeaseGate)] = [:]
    /// Running tasks whose lease was lost: when their download stops, nothing is written about them.
    var lost: Set<String> = []
    /// Tasks whose download ended and whose end (a stable state) is being written: the lease each ran under, kept
    /// out of ``leases`` (see ``LocalSession/endRun(_:lapsed:)``).
    var ending: [String: EndingRun] = [:]
    /// Running tasks to remove once stopped (another node asked).
    var removals: Set<String> = []
    /// Tasks this node announced as removed when it asked the node running them: the `removed` entry that node
    /// journals when it carries the removal out is not announced again.
    var announcedRemovals: Set<String> = []
    var claiming = false
    var claimAgain = false
    /// Whether a claim may find work (false after one found none, true again when the fleet rings).
    var mayHaveWork = true
    /// Each task as this node last saw it, to tell what another node changed.
    var known: [String: KnownTask] = [:]
    /// Where the change feed goes on.
    var cursor: Int64?
    /// When the change feed was last read: rings that come faster are read together.
    var lastRead: ContinuousClock.Instant?
    /// The renewal and watching loops.
    var loops: [Task<Void, Never>] = []

    /// A task whose download ended, its end not written yet.
    struct EndingRun {
        var lease: TaskLease
        /// Renewals left: the lease is renewed while the store is out of reach (so that no node takes over a task
        /// whose end is only waiting for the store), and at most this many times more once renewals go through
        /// again, so that an end the store keeps refusing never holds the task for ever.
        var renewals: Int
    }

    struct KnownTask {
        var state: TaskState
        var bytes: Int64
        var seen: ContinuousClock.Instant
        var bytesPerSecond: Double?
    }
}

// A session on a shared store: one node of a fleet. It claims tasks instead of keeping a queue (by priority then age,
// within its own slots and the per-host limits), holds each under a lease it renews, fences every write for it with
// that lease, stops writing a task the moment its lease is lost or can no longer be renewed in time, and turns what
// the other nodes change into its clients' events.
extension LocalSession {
    /// Starts the fleet's loops: lease renewal and the change feed. Called once, when the session opens.
    func startFleetLoops(_ shared: any SharedSessionStore) async throws {
        for task in try await store.tasks() { fleet.known[task.id] = .init(state: task.state, bytes: task.bytes, seen: .now) }
        fleet.cursor = try await shared.changes(since: nil).cursor
        let interval = shared.leaseTerms.renewalInterval
        fleet.loops.append(Task { [weak self] in
            // Until the session closes (cancelled) or is gone.
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                await self.renewLeases(shared)
            }
        })
        let bell = shared.doorbell()
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        fleet.loops.append(Task {
            for await _ in bell { wake.yield() }
        })
        // The doorbell is enough while it is heard; without it, the session looks every second.
        let quietInterval = shared.quietPollInterval
        fleet.loops.append(Task {
            var quiet = Duration.zero
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                quiet += .seconds(1)
                if !shared.isListening || quiet >= quietInterval {
                    quiet = .zero
                    wake.yield()
                }
            }
        })
        fleet.loops.append(Task { [weak self] in
            for await _ in wakes {
                guard let self, !Task.isCancelled else { return }
                await self.readChanges(shared)
            }
        })
    }

    func stopFleetLoops() {
        for loop in fleet.loops { loop.cancel() }
        fleet.loops = []
    }

    // MARK: Claiming

    /// Claims and starts tasks while this node has free slots (one claim at a time; a call meanwhile claims again
    /// after it). Announces when the fleet's queue has drained.
    func claim(_ shared: any SharedSessionStore) async {
        guard !fleet.claiming else {
            fleet.claimAgain = true
            return
        }
        fleet.claiming = true
        defer { fleet.claiming = false }
        // Each turn claims at least one task or ends.
        for _ in 0..<1_000 {
            fleet.claimAgain = false
            let slots = currentMaxConcurrent - runningCount
            guard !isClosed, slots > 0 else { break }
            var perHost: [String: Int] = [:]
            for (host, count) in runningPerHost() { perHost[host.lowercased(), default: 0] += count }
            let limits = FleetClaim.Limits(
                slots: slots, nodeRunningPerHost: perHost, nodeMaxPerHost: configuration.maxDownloadsPerHost,
                fleetMaxPerHost: configuration.fleetMaxConnectionsPerHost)
            let sent = ContinuousClock.now
            guard let claimed = try? await shared.claim(limits) else { break }
            if claimed.isEmpty {
                fleet.mayHaveWork = fleet.claimAgain
                if !fleet.claimAgain { break }
                continue
            }
            for claim in claimed { await begin(claim, gate: LeaseGate(terms: shared.leaseTerms, sentAt: sent)) }
        }
        await announceDrainInFleet()
    }

    /// Starts a task just claimed, unless a user's request or the crash-loop rule says otherwise.
    private func begin(_ claim: ClaimedTask, gate: LeaseGate) async {
        let task = claim.task
        fleet.known[task.id] = .init(state: .running, bytes: task.bytes, seen: .now)
        hold(task.id, claim.lease, gate)
        defer { if !isRunning(task.id) { release(task.id) } }
        if let request = task.requested {
            // Asked of the task while its node was gone: carried out now.
            await carryOut(request, task, lease: claim.lease)
            return
        }
        if claim.takenOver, claim.unendedStarts >= Self.maxUnendedStarts {
            // Its node died twice in a row while running it: not run a third time.
            await failCrashing(task.id, lease: claim.lease)
            return
        }
        if !claim.takenOver { emit(.stateChanged(id: task.id, from: .waiting, to: .running)) }
        start(task, lease: claim.lease, gate: gate)
    }

    private func carryOut(_ request: TaskRequest, _ task: StoredTask, lease: TaskLease) async {
        if request != .pause { engine.discardPartialData(options(for: task)) }
        if request == .remove {
            try? await store.remove(ids: [task.id])
            fleet.known[task.id] = nil
            return
        }
        let state: TaskState = request == .pause ? .paused : .cancelled
        _ = await write(for: task.id) { lease in try await self.setState(task.id, state, lease: lease) }
        try? await store.clearStarts(ids: [task.id])
    }

    /// A user's pause or cancel of a task another node runs: that node carries it out; when no node holds it any
    /// more, the store does it here.
    func ask(_ shared: any SharedSessionStore, _ request: TaskRequest, _ task: StoredTask) async throws {
        switch try await shared.request(request, id: task.id) {
        case .asked, .missing:
            break
        case .applied(let old, let now):
            if request != .pause { engine.discardPartialData(options(for: task)) }
            if let now {
                fleet.known[task.id] = .init(state: now.state, bytes: now.bytes, seen: .now)
                emit(.stateChanged(id: task.id, from: old, to: now.state))
            }
        case .notRunning(let now):
            guard let next = TaskTransitions.apply(request == .pause ? .pause : .cancel, to: now.state) else { return }
            if request == .cancel { engine.discardPartialData(options(for: now)) }
            try await setState(task.id, next)
        }
    }

    /// Removes a task another node runs: that node stops it and removes it. Whether it was asked (else the caller
    /// removes it as any other task). Asked or done, the removal is announced here (and, when asked, by the node that
    /// carries it out, to its own clients): the request is kept until it is carried out.
    func askToRemove(_ shared: any SharedSessionStore, _ task: StoredTask) async throws -> Bool {
        switch try await shared.request(.remove, id: task.id) {
        case .asked:
            fleet.announcedRemovals.insert(task.id)
            emit(.removed(id: task.id))
            return true
        case .applied:
            engine.discardPartialData(options(for: task))
            fleet.known[task.id] = nil
            emit(.removed(id: task.id))
            return true
        case .notRunning, .missing: return false
        }
    }

    private func failCrashing(_ id: String, lease: TaskLease) async {
        let message = "the fleet's nodes stopped twice while running this task; it was not resumed a third time"
        let journaling = self.journaling
        let concluded = await write(for: id) { lease in
            try await self.store.conclude(
                id: id, lease: lease, journaling: journaling ? "failed" : nil,
                payload: { DaemonProtocol.encode(Self.snapshot(of: $0, progress: nil)).serialized }, finalRecord: nil,
                { $0.record(HaulError(.server, message)); $0.state = .failed })
        }
        guard let concluded, let stored = concluded else { return }
        markEnded()
        emit(.stateChanged(id: id, from: stored.old, to: .failed))
        emit(.failed(snapshot(of: stored.task)), sequence: stored.sequence)
    }

    /// The queue has drained when a task ended since the last drain, nothing runs here and nothing waits or runs
    /// anywhere in the fleet.
    private func announceDrainInFleet() async {
        guard !hasRunningTasks, drainPending else { return }
        guard (try? await store.hasWaitingOrRunningTasks()) == false else { return }
        if takeDrainSignal() { emit(.allFinished) }
    }

    // MARK: What the other nodes change

    /// Reads what changed since the last look: turns the other nodes' changes into events, stops a task this node
    /// runs that another node took over or was asked to stop, and claims when tasks are waiting.
    func readChanges(_ shared: any SharedSessionStore) async {
        // At most ten reads a second: a busy fleet rings at every write, and the rings that come meanwhile are read
        // together. A change still being committed elsewhere is read again shortly (bounded: then the next ring or poll).
        for _ in 0..<20 {
            if let last = fleet.lastRead, ContinuousClock.now - last < Self.changeReadInterval {
                try? await Task.sleep(until: last + Self.changeReadInterval)
            }
            fleet.lastRead = .now
            guard !isClosed, let changes = try? await shared.changes(since: fleet.cursor) else { return }
            await apply(changes, shared)
            guard changes.pending else { return }
        }
    }

    /// The least time between two reads of the change feed.
    static let changeReadInterval = Duration.milliseconds(100)

    private func apply(_ changes: FleetChanges, _ shared: any SharedSessionStore) async {
        fleet.cursor = changes.cursor
        var waiting = false
        for (task, writer) in changes.tasks {
            let before = fleet.known[task.id]
            var now = FleetBookkeeping.KnownTask(state: task.state, bytes: task.bytes, seen: .now, bytesPerSecond: before?.bytesPerSecond)
            if let held = fleet.leases[task.id], isRunning(task.id) {
                fleet.known[task.id] = now
                // A version read before this node claimed the task (an older epoch) says nothing about its lease.
                if held.lease.isSuperseded(node: task.node, epoch: task.epoch) {
                    loseLease(task.id)
                } else if task.epoch == held.lease.epoch, let request = task.requested {
                    stopAsked(task.id, request)
                }
                continue
            }
            if task.state == .waiting { waiting = true }
            if writer == shared.node {
                fleet.known[task.id] = now
                continue
            }
            if let before, task.state == .running, before.state == .running, task.bytes > before.bytes {
                let seconds = before.seen.duration(to: now.seen) / .seconds(1)
                if seconds > 0 { now.bytesPerSecond = Double(task.bytes - before.bytes) / seconds }
            } else if task.state != .running {
                now.bytesPerSecond = nil
            }
            fleet.known[task.id] = now
            let origin = writer ?? "?"
            guard let before else {
                emit(.added(snapshot(of: task)), from: origin)
                continue
            }
            if before.state != task.state { emit(.stateChanged(id: task.id, from: before.state, to: task.state), from: origin) }
            if task.state == .running, task.bytes != before.bytes {
                emit(.progress(id: task.id, DownloadProgress(
                    bytes: task.bytes, total: task.total, bytesPerSecond: now.bytesPerSecond, secondsRemaining: nil)), from: origin)
            }
            if TaskTransitions.isEnded(task.state) { markEnded() }
        }
        for entry in changes.journal {
            // Another node removed a task: every node's clients hear of it, once.
            if entry.kind == JournalEntry.removedKind {
                fleet.known[entry.taskID] = nil
                if fleet.announcedRemovals.remove(entry.taskID) == nil { emit(.removed(id: entry.taskID)) }
                continue
            }
            guard let value = JSONValue.parse(Array(entry.payload.utf8)), let task = DaemonProtocol.decodeTask(value) else { continue }
            markEnded()
            emit(entry.kind == "finished" ? .finished(task) : .failed(task), sequence: entry.sequence, from: task.node ?? "?")
        }
        if waiting { fleet.mayHaveWork = true }
        if fleet.mayHaveWork || drainPending { await schedule() }
    }

    /// Another node asked this one to stop a task it runs.
    private func stopAsked(_ id: String, _ request: TaskRequest) {
        if request == .remove { fleet.removals.insert(id) }
        let command: TaskCommand = request == .pause ? .pause : .cancel
        Task { await self.stop(id, as: command) }
    }

    /// The recent speed of a running task another node runs, as seen from here.
    func remoteSpeed(_ id: String) -> Double? {
        fleet.known[id]?.bytesPerSecond
    }
}
