import Foundation

extension LocalSession {
    /// Applies a user's command to tasks: stopping running ones, or moving queued ones by the state machine.
    func command(_ command: TaskCommand, _ ids: [String]) async throws {
        for id in ids {
            guard let task = try await store.task(id: id) else { continue }
            if isRunning(id), command == .pause || command == .cancel {
                await stop(id, as: command)
                continue
            }
            // In a fleet, a task another node runs is stopped by that node.
            if let shared, task.state == .running, command == .pause || command == .cancel {
                try await ask(shared, command == .pause ? .pause : .cancel, task)
                continue
            }
            guard let next = TaskTransitions.apply(command, to: task.state) else { continue }
            if command == .cancel { engine.discardPartialData(options(for: task)) }
            try await setState(id, next)
        }
        await schedule()
    }

    /// Starts waiting tasks while slots are free; announces when the queue has drained.
    func schedule() async {
        guard !isClosed else { return }
        if let shared { return await claim(shared) }
        // The window of the queue is in memory: choosing costs as much as the hosts with a free slot, not the whole
        // queue, and only the tasks chosen (and a page now and then) are read from the store.
        var chosen = await chooseNext()
        while !chosen.isEmpty {
            for entry in chosen {
                // Neither waiting nor running until it starts (across the store's write): not idle meanwhile.
                beginStart()
                defer { endStart() }
                forget(entry.id)
                // The store has the last word: a task that is no longer waiting there is not started. Counted as
                // started in the same transaction, before the transfer begins: if this process dies during it, the
                // next one knows.
                guard let started = try? await store.startIfWaiting(id: entry.id) else { continue }
                begin(started)
            }
            chosen = await chooseNext()
        }
        // The queue has drained when a task ended since the last drain and nothing runs or waits.
        guard !hasRunningTasks, drainPending, !hasWaitingTasks else { return }
        if takeDrainSignal() { emit(.allFinished) }
    }

    /// Announces and runs a task its start moved to `running`; notes one that was not waiting any more as stored.
    private func begin(_ started: (task: StoredTask, started: Bool)) {
        guard started.started else { return noteStored(started.task) }
        emit(.stateChanged(id: started.task.id, from: .waiting, to: .running))
        start(started.task)
    }

    /// Runs `task`; in a fleet under `lease`: its resume records fenced by it, its writes stopped by `gate`.
    func start(_ task: StoredTask, lease: TaskLease? = nil, gate: LeaseGate? = nil) {
        noteHost(task.id, Self.host(of: task.url))
        var fleetOptions = options(for: task)
        if let lease, let gate {
            hold(task.id, lease, gate)
            fleetOptions.records = records.fenced(by: RecordFence(taskID: task.id, lease: lease))
            fleetOptions.leaseGate = gate
        }
        // Under a fleet-wide limit each download holds one connection: the limit counts downloads.
        if configuration.fleetMaxConnectionsPerHost != nil { fleetOptions.segments = 1 }
        // Nothing else of its host waits here (and no other node's): its connection would only sit idle.
        fleetOptions.closesConnection = lease == nil && nothingWaits(for: Self.host(of: task.url))
        let options = fleetOptions
        let engine = self.engine
        let id = task.id
        // Off the session: the download runs on the concurrency threads, its events go to the session's inbox, and
        // only its end comes back here.
        track(id, Task.detached {
            let outcome: Result<DownloadResult, any Error>
            do {
                outcome = .success(try await engine.download(options, events: { self.post(id, $0) }))
            } catch {
                outcome = .failure(error)
            }
            await self.finish(id, outcome)
        })
    }

    /// Puts a running download's event in the inbox, and asks the session to read it unless a read is on its way.
    private nonisolated func post(_ id: String, _ event: DownloadEvent) {
        if engineEvents.post(id, event) { Task { await self.readEngineEvents() } }
    }

    /// Handles every event in the inbox, in the order they came.
    func readEngineEvents() {
        // Bounded: each turn takes what was posted since the last; posts stop with the downloads.
        for _ in 0..<1_000_000 {
            let events = engineEvents.take()
            if events.isEmpty { return }
            // A download's events end before its end is handled (which reads the inbox first): any later one is
            // of a download that is not running any more.
            for (id, event) in events where isRunning(id) { engineEvent(id, event) }
        }
    }

    private func engineEvent(_ id: String, _ event: DownloadEvent) {
        switch event {
        case .started(_, let path, _, let total):
            noteStartedFile(id, StartedFile(path: path, total: total))
            // A download shorter than a second is not written again until it ends.
            noteSaved(id)
        case .progress(let progress):
            noteProgress(id, progress)
            emit(.progress(id: id, progress))
            if shouldSaveProgress(id) { saveProgress(id, progress) }
        case .retrying(let retry, let maxRetries, let delay, let reason):
            noteRetry(id, retry: retry, of: maxRetries, after: delay, reason: reason)
        case .waitingForConnection(let host):
            noteWaitingForConnection(id, host: host)
        case .restarted, .singleConnection, .finished:
            break
        }
    }

    /// Writes a running task's progress, after its previous write of progress (its end waits for both).
    private func saveProgress(_ id: String, _ progress: DownloadProgress) {
        let file = startedFile(id)
        let previous = progressSaves[id]
        // The first progress of this run: the task got somewhere, so the starts counted against it (a process that
        // died while running it) begin again from this one; only starts that die without progress add up. (A fleet
        // counts its nodes' deaths by their claims, and leaves its count as it is.)
        let clearsStarts = previous == nil && shared == nil
        progressSaves[id] = Task {
            await previous?.value
            // Progress only: not waited for again when the store is out of reach.
            _ = await self.write(for: id, retrying: false) { lease in
                try await self.store.update(id: id, lease: lease) {
                    $0.bytes = progress.bytes
                    $0.total = progress.total ?? file?.total ?? $0.total
                    $0.filePath = file?.path ?? $0.filePath
                }
                if clearsStarts { try await self.store.clearStarts(ids: [id]) }
            }
        }
    }

    /// A task's download ended: record the stable state it ended in and tell everyone.
    func finish(_ id: String, _ outcome: Result<DownloadResult, any Error>) async {
        // Not running once untracked below, nor ended until its end is written: not idle meanwhile.
        beginEnd()
        defer { endEnd() }
        // In a fleet: whether this node's lease lapsed (the store out of reach until its deadline), and from now on,
        // before anything here waits for the store, the lease is only the right to write how the download ended:
        // renewed a bounded number of times, so that a node whose finishing never gets through leaves the task to
        // another instead of holding it for ever.
        let lapsed = fleet.leases[id].map { !$0.gate.isOpen } ?? false
        endRun(id, lapsed: lapsed)
        defer { release(id) }
        // Its events first (the file it started, its last progress), then its last progress write.
        readEngineEvents()
        await progressSaves.removeValue(forKey: id)?.value
        let file = startedFile(id)
        let intent = untrack(id)
        // A task whose lease was lost is another node's now: nothing more is written about it here.
        if dropLost(id) {
            Task { await self.schedule() }
            return
        }
        guard !isClosed else { return }
        // Whatever the outcome, it stopped in an orderly way (no crash happened while it ran): each path below
        // forgets its start, in the same transaction as its new state where it can.
        switch outcome {
        case .success(let result):
            // The slot this download leaves goes to the next waiting task in the same transaction as its end (a
            // fleet claims its tasks its own way). Like `schedule()`, nothing here suspends with a store of one process.
            let next = shared == nil ? await chooseNext().first : nil
            if next != nil { beginStart() }
            defer { if next != nil { endStart() } }
            await conclude(
                id, .finished, httpVersion: result.httpVersion, keptExisting: result.keptExisting,
                finalRecord: records.takeFinal(destinationPath: result.path), thenStarting: next
            ) {
                $0.bytes = result.bytes
                $0.total = result.bytes
                $0.filePath = result.path
                $0.record(nil)
            }
        case .failure(let error):
            let failure = error as? HaulError ?? HaulError(.network, String(describing: error))
            if failure.kind == .interrupted, intent == nil, lapsed {
                // Stopped because its lease could not be renewed in time, not by anyone's request: not a pause.
                // Nothing is written; once the lease expires, a claim takes the task over from its last checkpoint
                // (and carries out a removal asked meanwhile: it is kept in the store).
                _ = removing(id)
                break
            }
            if failure.kind == .interrupted {
                try? await store.clearStarts(ids: [id])
                // Stopped to be removed: removed and announced at once, without a `cancelled` or `paused` on the way
                // (a client that saw that last would stop following the task before the removal came).
                if removing(id) {
                    if let task = try? await store.task(id: id) {
                        removalNotes[id] = engine.discardPartialData(options(for: task), id: id)
                    }
                    if (try? await store.remove(ids: [id])) != nil {
                        markEnded()
                        emit(.removed(id: id))
                        Task { await self.schedule() }
                        return
                    }
                }
                if let file {
                    _ = await write(for: id) { lease in
                        try await self.store.update(id: id, lease: lease) { $0.filePath = file.path; $0.total = file.total ?? $0.total }
                    }
                }
                if intent == .cancel, let task = try? await store.task(id: id) {
                    engine.discardPartialData(options(for: task))
                    _ = await write(for: id) { lease in try await self.setState(id, .cancelled, lease: lease) }
                    markEnded()
                } else {
                    _ = await write(for: id) { lease in try await self.setState(id, .paused, lease: lease) }
                }
            } else {
                await conclude(id, .failed) {
                    $0.filePath = file?.path ?? $0.filePath
                    $0.total = file?.total ?? $0.total
                    $0.record(failure)
                }
            }
        }
        Task { await self.schedule() }
    }

    /// Records that a task finished or failed and forgets its start (with the journal entry when journaling), in one
    /// transaction, then tells everyone and runs the completion hooks.
    ///
    /// With `next`, the waiting task chosen for the slot this one leaves is started in the same transaction (then
    /// announced and run after this one's end is told), as ``schedule()`` would start it.
    private func conclude(
        _ id: String, _ state: TaskState, httpVersion: String? = nil, keptExisting: Bool = false, finalRecord: StoredRecord? = nil,
        thenStarting next: WaitingQueue.Entry? = nil, _ change: (inout StoredTask) -> Void
    ) async {
        let kind = state == .finished ? "finished" : "failed"
        let payload: (StoredTask) -> String = { task in DaemonProtocol.encode(Self.snapshot(of: task, progress: nil)).serialized }
        let journaling = journaling ? kind : nil
        let concluded: (old: TaskState, task: StoredTask, sequence: Int64?)??
        var started: (task: StoredTask, started: Bool)?
        if let next {
            forget(next.id)
            let both = try? await store.conclude(
                id: id, lease: nil, journaling: journaling, payload: payload, finalRecord: finalRecord, thenStarting: next.id,
                { change(&$0); $0.state = state })
            concluded = both?.concluded
            started = both?.next
        } else {
            concluded = await write(for: id, { lease in
                try await self.store.conclude(
                    id: id, lease: lease, journaling: journaling, payload: payload, finalRecord: finalRecord,
                    { change(&$0); $0.state = state })
            })
        }
        // The next task after this one's end is told, as a `schedule()` after it would start it.
        defer { if let started { begin(started) } }
        guard let concluded, let stored = concluded else { return }
        let old = stored.old
        noteStored(stored.task)
        markEnded()
        if old != state { emit(.stateChanged(id: id, from: old, to: state)) }
        var snapshot = self.snapshot(of: stored.task)
        snapshot.httpVersion = httpVersion
        snapshot.keptExisting = keptExisting
        emit(state == .finished ? .finished(snapshot) : .failed(snapshot), sequence: stored.sequence)
        completionHooks(snapshot, own: stored.task.spec.completionCommand)
    }

    func setState(_ id: String, _ state: TaskState, lease: TaskLease? = nil) async throws {
        guard let old = try await store.task(id: id)?.state, old != state else { return }
        // Queued again (resumed): the failure it ended with last time is not its state any more.
        let clearsError = state == .waiting
        if let stored = try await store.update(id: id, lease: lease, {
            $0.state = state
            if clearsError { $0.record(nil) }
        }) { noteStored(stored) }
        emit(.stateChanged(id: id, from: old, to: state))
    }

    /// Fails the tasks that were running when each of the last ``LocalSession/maxUnendedStarts`` processes died:
    /// they are not resumed again (a person can still resume them).
    func failTasksThatStoppedTheProcess(_ ids: [String]) async {
        let who = journaling ? "the daemon" : "haul"
        let message = "\(who) stopped twice while running this task without getting further; it was not resumed a third time (resume it to try again)"
        try? await store.clearStarts(ids: ids)
        for id in ids {
            await conclude(id, .failed) {
                $0.record(HaulError(.server, message))
            }
        }
    }

    /// The engine's options for a stored task: its spec merged with the session's defaults.
    func options(for task: StoredTask) -> DownloadOptions {
        DownloadOptions(task.spec, defaults: downloadDefaults)
    }

    func snapshot(of task: StoredTask) -> TaskSnapshot {
        guard task.state == .running else {
            var snapshot = Self.snapshot(of: task, progress: nil)
            if task.state == .waiting { snapshot.note = heldBackNote(task.id) }
            return snapshot
        }
        var shown = task
        if let file = startedFile(task.id) {
            shown.filePath = file.path
            shown.total = file.total ?? shown.total
        }
        var snapshot = Self.snapshot(of: shown, progress: latestProgress(task.id))
        snapshot.note = retryNote(task.id)
        // Another node's download: its speed as seen from its saved progress.
        if !isRunning(task.id), snapshot.bytesPerSecond == nil { snapshot.bytesPerSecond = remoteSpeed(task.id) }
        return snapshot
    }

    /// The task as stored, with the latest progress of a running one; a file destination is its path from the start.
    static func snapshot(of task: StoredTask, progress: DownloadProgress?) -> TaskSnapshot {
        TaskSnapshot(
            id: task.id, url: task.url, state: task.state, priority: task.priority, bytes: progress?.bytes ?? task.bytes,
            total: progress?.total ?? task.total, bytesPerSecond: progress?.bytesPerSecond,
            filePath: task.filePath ?? Self.filePath(of: task.destination),
            error: task.error, node: task.node)
    }

    /// Runs the completion callback, then the session's completion command and the task's own, for a finished or
    /// failed task (not waited for: the commands run beside the session).
    private func completionHooks(_ task: TaskSnapshot, own: String?) {
        configuration.onCompletion?(task)
        for command in [configuration.completionCommand, own].compactMap({ $0 }) {
            _ = CompletionCommand(command).start(for: task, session: identifier)
        }
    }
}
