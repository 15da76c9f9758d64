import HaulDaemon
import HaulKit

// The event stream's side of the dashboard: every session event goes into that session's ring (with, for a
// running segmented download, its segment map at most twice a second); streams are woken to send what is new.
extension WebDashboard {
    /// Called by the daemon's service with every event of every session (on its actor: kept short).
    func record(_ session: String, _ event: SessionEvent, _ sequence: Int64?) {
        guard state.withLockedValue({ $0.listening }) else { return }
        let now = ContinuousClock.now
        if case .progress(let id, _) = event, !state.withLockedValue({ $0.progressWindow.allow(session + "\u{0}" + id, at: now) }) { return }
        var lines = [DaemonProtocol.encode(event, sequence: sequence).serialized]
        switch event {
        case .progress(let id, let progress):
            if let segments = progress.segments, let total = progress.total,
               state.withLockedValue({ $0.segmentThrottle.allow(session + "\u{0}" + id, at: now) }) {
                var map = DaemonService.encode(SegmentMap(total: total, segments: segments, fetching: progress.fetching), id: id).objectValue ?? [:]
                map["type"] = "segments"
                lines.append(JSONValue.object(map).serialized)
            }
        case .finished(let task), .failed(let task):
            state.withLockedValue { state in
                state.segmentThrottle.forget(session + "\u{0}" + task.id)
                state.progressWindow.forget(session + "\u{0}" + task.id)
            }
        case .stateChanged(let id, _, let to) where to != .running:
            state.withLockedValue { state in
                state.segmentThrottle.forget(session + "\u{0}" + id)
                state.progressWindow.forget(session + "\u{0}" + id)
            }
        default:
            break
        }
        let woken = state.withLockedValue { state -> [AsyncStream<Void>.Continuation] in
            var ring = state.rings[session] ?? WebEventRing(run: run, capacity: Self.ringCapacity)
            for line in lines { ring.append(line) }
            state.rings[session] = ring
            return state.streams.values.filter { $0.session == session }.map(\.wake)
        }
        for wake in woken { wake.yield() }
    }

    /// A new stream on `session`: its id and what wakes it.
    func openStream(_ session: String) -> (id: Int, wake: AsyncStream<Void>) {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLockedValue { state in
            state.nextStream += 1
            state.streams[state.nextStream] = (session, continuation)
            // A stream that opens while the dashboard stops ends at once.
            if !state.listening { continuation.finish() }
            if state.rings[session] == nil { state.rings[session] = WebEventRing(run: run, capacity: Self.ringCapacity) }
            return state.nextStream
        }
        return (id, stream)
    }

    func closeStream(_ id: Int) {
        let wake = state.withLockedValue { $0.streams.removeValue(forKey: id)?.wake }
        wake?.finish()
    }

    /// What a stream that has seen `cursor` (a `Last-Event-ID`, or a number of this run) sends next: SSE text, and
    /// the number it has then seen.
    func pending(_ session: String, after cursor: Cursor) -> (text: String, seen: Int64) {
        state.withLockedValue { state in
            let ring = state.rings[session] ?? WebEventRing(run: run, capacity: Self.ringCapacity)
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
