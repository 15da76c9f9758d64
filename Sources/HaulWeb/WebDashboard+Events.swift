import HaulDaemon
import HaulKit

// The event stream's side of the dashboard: every session event goes into that session's ring (with, for a
// running segmented download, its segment map at most twice a second); streams are woken to send what is new.
extension WebDashboard {
    /// Called by the daemon's service with every event of every session (on its actor: kept short). A session no
    /// stream watches (it has no ring) costs nothing more than the lookup.
    func record(_ session: String, _ event: SessionEvent, _ sequence: Int64?) {
        let now = ContinuousClock.now
        let watched = state.withLockedValue { state -> Bool in
            switch event {
            case .finished(let task), .failed(let task):
                state.segmentThrottle.forget(session + "\u{0}" + task.id)
                state.progressWindow.forget(session + "\u{0}" + task.id)
            case .stateChanged(let id, _, let to) where to != .running:
                state.segmentThrottle.forget(session + "\u{0}" + id)
                state.progressWindow.forget(session + "\u{0}" + id)
            case .removed(let id):
                state.segmentThrottle.forget(session + "\u{0}" + id)
                state.progressWindow.forget(session + "\u{0}" + id)
            default:
                break
            }
            return state.listening && state.streams.ring(session) != nil
        }
        guard watched else { return }
        if case .progress(let id, _) = event, !state.withLockedValue({ $0.progressWindow.allow(session + "\u{0}" + id, at: now) }) { return }
        var lines = [WebRedaction.redacted(DaemonProtocol.encode(event, sequence: sequence)).serialized]
        if case .progress(let id, let progress) = event, let segments = progress.segments, let total = progress.total,
           state.withLockedValue({ $0.segmentThrottle.allow(session + "\u{0}" + id, at: now) }) {
            var map = DaemonService.encode(SegmentMap(total: total, segments: segments, fetching: progress.fetching), id: id).objectValue ?? [:]
            map["type"] = "segments"
            lines.append(JSONValue.object(map).serialized)
        }
        let woken = state.withLockedValue { $0.streams.record(lines, in: session, at: now) }
        for wake in woken { wake.yield() }
    }

    /// A new stream on `session` for `login` (a session cookie, or the API key): its id and what wakes it, or why
    /// it is refused (too many streams).
    func openStream(_ session: String, login: String) -> Result<(id: Int, wake: AsyncStream<Void>), WebStreamRefusal> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let opened = state.withLockedValue { state in
            let opened = state.streams.open(session: session, login: login, wake: continuation, at: .now)
            // A stream that opens while the dashboard stops ends at once.
            if !state.listening { continuation.finish() }
            return opened
        }
        return opened.map { ($0, stream) }
    }

    func closeStream(_ id: Int) {
        let (wake, sweep) = state.withLockedValue { state -> (Wake?, Bool) in
            let wake = state.streams.close(id, at: .now)
            let sweep = state.streams.hasIdleRings && !state.sweepScheduled
            if sweep { state.sweepScheduled = true }
            return (wake, sweep)
        }
        wake?.finish()
        if sweep { scheduleSweep() }
    }

    /// Frees the rings whose last stream closed long enough ago, once their grace has passed, and again while
    /// some still wait: a ring nobody watches is not kept.
    private func scheduleSweep() {
        let grace = configuration.streamLimits.ringGrace
        Task { [weak self] in
            // Each turn sleeps one grace; it ends once no ring waits.
            while let self {
                try? await Task.sleep(for: grace + .milliseconds(100))
                let again = self.state.withLockedValue { state -> Bool in
                    state.streams.sweep(at: .now)
                    state.sweepScheduled = state.streams.hasIdleRings
                    return state.sweepScheduled
                }
                if !again {
                    MemoryReturn.soon()
                    return
                }
            }
        }
    }

    /// What a stream that has seen `cursor` (a `Last-Event-ID`, or a number of this run) sends next: SSE text, and
    /// the number it has then seen.
    func pending(_ session: String, after cursor: Cursor) -> (text: String, seen: Int64) {
        state.withLockedValue { state in
            let ring = state.streams.ring(session) ?? WebEventRing(run: run, capacity: 1)
            let replay: WebEventRing<String>.Replay
            switch cursor {
            // A new stream learns where it stands at once (an `id` without data sets the browser's Last-Event-ID):
            // if it drops before the first event, its reconnection still replays what it missed.
            case .fresh: return ("id: \(ring.lastCursor)\n: ready\n\n", ring.last)
            case .header(let text): replay = ring.replay(after: text)
            case .number(let number): replay = ring.replay(after: number)
            }
            switch replay {
            case .reset:
                return ("id: \(ring.lastCursor)\ndata: {\"type\":\"reset\"}\n\n", ring.last)
            case .events(let events):
                var text = ""
                for (number, line) in events { text += "id: \(ring.cursor(number))\ndata: \(line)\n\n" }
                return (text, ring.last)
            }
        }
    }

    /// Where a stream stands in its session's ring.
    enum Cursor {
        /// A new stream: from now on.
        case fresh
        /// A reconnecting stream's `Last-Event-ID`.
        case header(String)
        /// A stream already running.
        case number(Int64)
    }
}
