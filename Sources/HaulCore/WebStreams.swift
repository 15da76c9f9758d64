/// The dashboard's event streams and the event rings behind them. Pure: the shell keeps a value of it behind a lock,
/// passes the time in, and wakes what it returns (`Wake` is the shell's way to wake a stream).
///
/// Streams are capped per login (a session cookie, or the API key) and in all. A session's ring exists while a
/// stream of that session is open and for ``Limits/ringGrace`` after the last one closed (a browser reconnecting
/// with `Last-Event-ID` within it gets what it missed); then it is freed. A ring made again later has another run
/// in its cursors, so a cursor of the freed one answers `reset`, never another ring's events.
package struct WebStreams<Wake: Sendable>: Sendable {
    public typealias Limits = WebStreamLimits
    public typealias Refusal = WebStreamRefusal

    private struct Stream: Sendable {
        var session: String
        var login: String
        var wake: Wake
    }

    private struct Held: Sendable {
        var ring: WebEventRing<String>
        var streams = 0
        var idleSince: ContinuousClock.Instant?
    }

    public let limits: Limits
    /// Names this daemon run; each ring's cursors carry it with the ring's own number.
    public let run: String
    private var streams: [Int: Stream] = [:]
    private var rings: [String: Held] = [:]
    /// Rings that became idle, oldest first (from `idleFrom` on; an entry whose ring was watched again since is
    /// skipped when its turn comes): a sweep looks only at the rings whose grace may have ended.
    private var idle: [(session: String, since: ContinuousClock.Instant)] = []
    private var idleFrom = 0
    private var lastID = 0
    private var lastRing = 0

    public init(run: String, limits: Limits = Limits()) {
        self.run = run
        self.limits = limits
    }

    /// Opens a stream of `session` for `login`: its id, or why not.
    public mutating func open(session: String, login: String, wake: Wake, at now: ContinuousClock.Instant) -> Result<Int, Refusal> {
        guard streams.values.filter({ $0.login == login }).count < limits.maxPerLogin else { return .failure(.tooManyForLogin) }
        guard streams.count < limits.maxTotal else { return .failure(.tooMany) }
        lastID += 1
        streams[lastID] = Stream(session: session, login: login, wake: wake)
        if rings[session] == nil {
            lastRing += 1
            rings[session] = Held(ring: WebEventRing(run: "\(run)-\(lastRing)", capacity: limits.ringCapacity))
        }
        rings[session]?.streams += 1
        rings[session]?.idleSince = nil
        sweep(at: now)
        return .success(lastID)
    }

    /// Closes stream `id`: its wake, to finish (nil when it was not open).
    public mutating func close(_ id: Int, at now: ContinuousClock.Instant) -> Wake? {
        guard let stream = streams.removeValue(forKey: id) else { return nil }
        if var held = rings[stream.session] {
            held.streams -= 1
            if held.streams == 0 {
                held.idleSince = now
                idle.append((stream.session, now))
            }
            rings[stream.session] = held
        }
        sweep(at: now)
        return stream.wake
    }

    /// Appends `lines` to `session`'s ring, if it has one (a session nobody watches keeps no ring); returns the
    /// wakes of its streams.
    public mutating func record(_ lines: [String], in session: String, at now: ContinuousClock.Instant) -> [Wake] {
        sweep(at: now)
        guard rings[session] != nil else { return [] }
        for line in lines { rings[session]?.ring.append(line) }
        return streams.values.filter { $0.session == session }.map(\.wake)
    }

    /// The ring of `session`, if it has one.
    public func ring(_ session: String) -> WebEventRing<String>? { rings[session]?.ring }

    /// Frees the rings whose last stream closed ``Limits/ringGrace`` or more before `now`.
    public mutating func sweep(at now: ContinuousClock.Instant) {
        while idleFrom < idle.count, now - idle[idleFrom].since >= limits.ringGrace {
            let (session, since) = idle[idleFrom]
            idleFrom += 1
            if rings[session]?.idleSince == since { rings[session] = nil }
        }
        if idleFrom > 1_024, idleFrom * 2 > idle.count {
            idle.removeFirst(idleFrom)
            idleFrom = 0
        }
    }

    /// The wakes of every stream (to finish them all when the dashboard stops).
    public var wakes: [Wake] { streams.values.map(\.wake) }

    /// The wake of stream `id`.
    public func wake(_ id: Int) -> Wake? { streams[id]?.wake }

    /// Streams open.
    public var count: Int { streams.count }

    /// Rings held (of sessions with a stream, or whose last stream closed less than the grace ago).
    public var ringCount: Int { rings.count }

    /// Whether a ring waits for its grace to end (the shell then sweeps again later).
    public var hasIdleRings: Bool { idle[idleFrom...].contains { rings[$0.session]?.idleSince == $0.since } }
}

/// How many event streams the dashboard keeps open, and how long a session's ring outlives its last stream.
package struct WebStreamLimits: Sendable, Equatable {
    /// Streams of one login at once (a browser tab each).
    public var maxPerLogin = 16
    /// Streams at once, all logins together.
    public var maxTotal = 64
    /// How long a session's ring outlives its last stream (a browser reconnects within seconds).
    public var ringGrace: Duration = .seconds(30)
    /// Events a ring holds.
    public var ringCapacity = 8_192

    public init() {}
}

/// Why an event stream is not opened.
package enum WebStreamRefusal: Error, Equatable, Sendable {
    case tooManyForLogin, tooMany

    public var message: String {
        switch self {
        case .tooManyForLogin: return "too many event streams for this login; close other dashboard tabs"
        case .tooMany: return "too many event streams are open; try again later"
        }
    }
}
