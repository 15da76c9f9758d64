/// The life of one download across its attempts — or of one connection of a segmented download — as a pure
/// state machine in the style of AsyncHTTPClient's `*StateMachine`s: the shell reports what happened (an
/// ``Event``), the machine answers with what to do next (an ``Action``) and keeps the budgets that decide it.
///
/// The rules it holds, for both the single-connection and the segmented path:
/// - **Retries** are counted per run and reset whenever bytes past the best point held so far arrive: a server
///   that drops at the same place, or starts from byte 0 every time, uses the budget up; one that drops now and
///   then after making progress never does.
/// - **A typo shows at once**: before any byte, a refused connection or an unknown host gets at most two quick
///   retries (for a server that is just starting), not the whole backoff.
/// - **Restarts** (the file changed, the bytes held do not match) happen at most ``Configuration/maxRestarts``
///   times; after a server's own range answers were inconsistent it is not probed for ranges again.
/// - **A redirect's target that refuses** (401/403/404/410) is retried once from the original URL (a signed URL
///   that expired).
/// - **Bookkeeping** while bytes arrive: progress at most every ``Configuration/progressInterval``, a
///   durable checkpoint every ``Configuration/checkpointBytes`` or ``Configuration/checkpointInterval``, both
///   looked at only every ``Configuration/bookkeepingBytes``.
package struct DownloadLifecycle: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        public var retry: RetryPolicy
        /// Whether a refused connection or an unknown host before any byte gives up after two quick retries.
        public var failFastBeforeData: Bool
        public var maxRestarts: Int
        /// Bytes between two looks at progress and checkpoints (not every small chunk).
        public var bookkeepingBytes: Int64
        public var progressInterval: Duration
        public var checkpointBytes: Int64
        public var checkpointInterval: Duration

        public init(
            retry: RetryPolicy = RetryPolicy(), failFastBeforeData: Bool = false, maxRestarts: Int = 3,
            bookkeepingBytes: Int64 = 256 * 1024, progressInterval: Duration = .milliseconds(250),
            checkpointBytes: Int64 = 16 << 20, checkpointInterval: Duration = .seconds(1)
        ) {
            self.retry = retry
            self.failFastBeforeData = failFastBeforeData
            self.maxRestarts = maxRestarts
            self.bookkeepingBytes = bookkeepingBytes
            self.progressInterval = progressInterval
            self.checkpointBytes = checkpointBytes
            self.checkpointInterval = checkpointInterval
        }
    }

    public enum State: Sendable, Equatable {
        /// Nothing sent yet, or ready to send the next request.
        case ready
        /// A request is out, or its body is arriving.
        case transferring
        /// Waiting out the backoff before retry number `retry`.
        case waitingToRetry(retry: Int)
        /// Every byte is held: the shell verifies and moves the file into place.
        case finished
        /// Given up; ``Action/giveUp(_:)`` said why.
        case failed
    }

    /// A failure the next attempt may not have: a dropped connection, a 5xx, a timeout.
    public struct Failure: Sendable, Equatable {
        /// One line for a person; any URL in it is already masked.
        public var reason: String
        public var kind: ErrorKind
        /// The server's `Retry-After`, if it sent one.
        public var retryAfter: Duration?
        /// No connection was made at all (refused, unknown host): most likely a typo.
        public var beforeConnecting: Bool

        public init(reason: String, kind: ErrorKind = .network, retryAfter: Duration? = nil, beforeConnecting: Bool = false) {
            self.reason = reason
            self.kind = kind
            self.retryAfter = retryAfter
            self.beforeConnecting = beforeConnecting
        }
    }

    public enum Event: Sendable, Equatable {
        /// A request is going out; `held` bytes are held from earlier.
        case requestSent(held: Int64)
        /// `count` bytes of the body were written, which makes `held` bytes held; `elapsed` is the time since the
        /// run began.
        case bodyPart(count: Int64, held: Int64, elapsed: Duration)
        /// Bytes written by a segment connection, or by the connections of a segmented part of the download (no
        /// bookkeeping: the download's monitor reports them). Whether they got past the best point is judged when
        /// the attempt ends; without them, an end would read as a response that ended before any byte.
        case segmentsWrote(count: Int64)
        /// The response ended; `complete` when the whole file is held.
        case bodyEnd(complete: Bool, held: Int64)
        /// The bytes held belong to another version, or do not match: they were discarded.
        case restartNeeded(RestartReason)
        /// The server refused the request with `status` (a 4xx that is not worth retrying), at a URL a redirect
        /// led to or at the URL asked for.
        case refused(status: Int, atRedirectTarget: Bool)
        /// The attempt failed in a way the next may not; `held` bytes are held now.
        case failed(Failure, held: Int64)
    }

    public enum Action: Sendable, Equatable {
        /// Nothing to do but carry on.
        case none
        /// Report progress.
        case reportProgress
        /// Make the bytes held durable (fsync, then the record), and report progress.
        case checkpoint
        /// Every byte is held: verify, move into place, report.
        case finish
        /// Send the next request at once (the last one ended early but made progress).
        case requestAgain
        /// Ask the URL that was asked for again: the redirect's target refused.
        case requestOriginalURL
        /// Wait `delay`, then send retry number `retry` of at most `of`.
        case retry(after: Duration, retry: Int, of: Int, reason: String)
        /// Start over from byte 0, like a fresh download.
        case restart(RestartReason)
        case giveUp(GiveUp)
    }

    /// Why the download stops for good; the shell turns it into the words and exit code a person sees.
    public enum GiveUp: Sendable, Equatable {
        /// The same failure outlived every retry allowed; `heldBytes` when a rerun would resume.
        case retriesExhausted(Failure, retries: Int, heldBytes: Bool)
        /// Each response ended at the same place without getting further.
        case endsAtSamePlace(retries: Int)
        case tooManyRestarts(Int, RestartReason)
        /// The server refuses the request.
        case refused(status: Int)
    }

    public let configuration: Configuration
    public private(set) var state: State = .ready
    /// Whether a fresh start may ask for `bytes=0-` to learn whether ranges work; off once the server's own answers
    /// to range requests were inconsistent, so that such a server gets one plain request.
    public private(set) var mayProbeRanges = true
    public private(set) var restarts = 0
    /// Failures since bytes last got past ``bestHeld``.
    public private(set) var failures = 0
    /// The most bytes held at any point of this run.
    public private(set) var bestHeld: Int64
    /// Bytes received in this run.
    public private(set) var fetched: Int64 = 0
    private var fetchedAtRequest: Int64 = 0
    private var retriedOriginalURL = false
    private var sinceBookkeeping: Int64 = 0
    private var lastProgress: Duration?
    private var lastCheckpointHeld: Int64
    private var lastCheckpointAt: Duration = .zero
    private var random: SplitMix64

    /// A run that starts with `held` bytes held from earlier runs. `seed` drives the backoff's jitter.
    public init(_ configuration: Configuration, held: Int64 = 0, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) {
        self.configuration = configuration
        self.bestHeld = held
        self.lastCheckpointHeld = held
        self.random = SplitMix64(seed: seed)
    }

    public mutating func handle(_ event: Event) -> Action {
        switch event {
        case .requestSent(let held):
            guard state != .finished, state != .failed else { return .none }
            state = .transferring
            fetchedAtRequest = fetched
            if held == 0 { lastCheckpointHeld = 0 }
            return .none
        case .bodyPart(let count, let held, let elapsed):
            fetched += count
            return bookkeeping(count: count, held: held, elapsed: elapsed)
        case .segmentsWrote(let count):
            fetched += count
            return .none
        case .bodyEnd(let complete, let held):
            return bodyEnded(complete: complete, held: held)
        case .restartNeeded(let reason):
            if case .invalidPartialResponse = reason { mayProbeRanges = false }
            restarts += 1
            guard restarts <= configuration.maxRestarts else { return giveUp(.tooManyRestarts(restarts, reason)) }
            state = .ready
            return .restart(reason)
        case .refused(let status, let atRedirectTarget):
            guard atRedirectTarget, !retriedOriginalURL, [401, 403, 404, 410].contains(status) else {
                return giveUp(.refused(status: status))
            }
            retriedOriginalURL = true
            state = .ready
            return .requestOriginalURL
        case .failed(let failure, let held):
            return failed(failure, held: held)
        }
    }

    private mutating func bookkeeping(count: Int64, held: Int64, elapsed: Duration) -> Action {
        sinceBookkeeping += count
        guard sinceBookkeeping >= configuration.bookkeepingBytes else { return .none }
        sinceBookkeeping = 0
        if held - lastCheckpointHeld >= configuration.checkpointBytes || elapsed - lastCheckpointAt >= configuration.checkpointInterval {
            lastCheckpointHeld = held
            lastCheckpointAt = elapsed
            lastProgress = elapsed
            return .checkpoint
        }
        if let last = lastProgress, elapsed - last < configuration.progressInterval { return .none }
        lastProgress = elapsed
        return .reportProgress
    }

    private mutating func bodyEnded(complete: Bool, held: Int64) -> Action {
        if complete {
            state = .finished
            return .finish
        }
        guard fetched > fetchedAtRequest else {
            return failed(Failure(reason: "the server ended the response early"), held: held)
        }
        if noteProgress(held) {
            state = .ready
            return .requestAgain
        }
        failures += 1
        guard failures <= configuration.retry.maxRetries else { return giveUp(.endsAtSamePlace(retries: configuration.retry.maxRetries)) }
        state = .ready
        return .requestAgain
    }

    private mutating func failed(_ failure: Failure, held: Int64) -> Action {
        noteProgress(held)
        failures += 1
        let quick = failure.beforeConnecting && configuration.failFastBeforeData && fetched == 0 && held == 0
        let allowed = quick ? min(configuration.retry.maxRetries, 2) : configuration.retry.maxRetries
        guard failures <= allowed else { return giveUp(.retriesExhausted(failure, retries: allowed, heldBytes: held > 0)) }
        var delay = configuration.retry.delay(beforeRetry: failures, retryAfter: failure.retryAfter, jitter: random.nextUnit())
        if quick { delay = min(delay, .milliseconds(250)) }
        state = .waitingToRetry(retry: failures)
        return .retry(after: delay, retry: failures, of: allowed, reason: failure.reason)
    }

    /// Bytes past the best point reset the retry budget; returns whether they got past it.
    @discardableResult
    private mutating func noteProgress(_ held: Int64) -> Bool {
        guard held > bestHeld else { return false }
        bestHeld = held
        failures = 0
        return true
    }

    private mutating func giveUp(_ reason: GiveUp) -> Action {
        state = .failed
        return .giveUp(reason)
    }
}

extension DownloadLifecycle.Configuration {
    /// The configuration of one connection of a segmented download: its own retry budget, no quick failure
    /// (the download's first response already came), no bookkeeping (the download's monitor does it).
    package static func segmentConnection(retry: RetryPolicy) -> Self {
        Self(retry: retry, failFastBeforeData: false, bookkeepingBytes: .max)
    }
}

/// A small deterministic generator (SplitMix64) for the backoff's jitter, so that the machine stays a value.
struct SplitMix64: Sendable, Equatable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// A number in 0..<1.
    mutating func nextUnit() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(UInt64(1) << 53)
    }
}
