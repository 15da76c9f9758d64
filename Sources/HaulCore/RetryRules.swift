/// The one rule book for trying again, across the attempts of one run: of a download over one connection
/// (``DownloadMachine``), of each connection of a segmented download, of a download written to a stream, and of
/// `-N`'s timestamp check. Each event has a method, and each method its own action type.
///
/// The rules:
/// - **Retries** are counted per run and reset whenever bytes past the best point held so far arrive: a server
///   that drops at the same place, or starts from byte 0 every time, uses the budget up; one that drops now and
///   then after making progress never does. Backoff is exponential with jitter, and honours `Retry-After`.
/// - **A typo shows at once**: before any byte, a refused connection or an unknown host gets at most two quick
///   retries (for a server that is just starting), not the whole backoff (``Configuration/failFastBeforeData``).
/// - **A response that ends early** after new bytes is asked again at once; one that ends at the same place uses
///   the budget, and one that brought nothing is a failure like any other.
/// - **Restarts** (the file changed, the bytes held do not match) happen at most ``Configuration/maxRestarts``
///   times; after a server's own range answers were inconsistent, or the segments of a download disagreed about the
///   file's version, it is not probed for ranges (nor the file split) again.
/// - **A request the server never acted on** (one an HTTP/2 connection it was closing with GOAWAY never sent, RFC
///   9113 §6.8, or a stream it refused, §8.7) is sent again at once, as curl does, without using the budget: at most
///   ``maxUnprocessedRequests`` times in a run.
/// - **A stream the server wants over HTTP/1.1** (`HTTP_1_1_REQUIRED`, RFC 9113 §7) is sent again at once over
///   HTTP/1.1, without using the budget (``DownloadMachine/failed(_:held:)``), as curl does; once per download.
/// - **A redirect's target that refuses** (401/403/404/410) is retried once from the original URL (a signed URL
///   that expired).
package struct RetryRules: Sendable, Equatable {
    package struct Configuration: Sendable, Equatable {
        package var retry: RetryPolicy
        /// Whether a refused connection or an unknown host before any byte gives up after two quick retries.
        package var failFastBeforeData: Bool
        package var maxRestarts: Int

        package init(retry: RetryPolicy = RetryPolicy(), failFastBeforeData: Bool = false, maxRestarts: Int = 3) {
            self.retry = retry
            self.failFastBeforeData = failFastBeforeData
            self.maxRestarts = maxRestarts
        }

        /// The rules of one connection of a segmented download: its own retry budget, no quick failure (the
        /// download's first response already came).
        package static func segmentConnection(retry: RetryPolicy) -> Self {
            Self(retry: retry, failFastBeforeData: false)
        }
    }

    /// A failure the next attempt may not have: a dropped connection, a 5xx, a timeout.
    package struct Failure: Sendable, Equatable {
        /// One line for a person; any URL in it is already masked.
        package var reason: String
        package var kind: ErrorKind
        /// The server's `Retry-After`, if it sent one.
        package var retryAfter: Duration?
        /// No connection was made at all (refused, unknown host): most likely a typo.
        package var beforeConnecting: Bool
        /// The server did not act on the request (a connection going away never sent it, or the server refused its
        /// stream): it is safe to send again.
        package var notProcessed: Bool
        /// The server reset the request's HTTP/2 stream with `HTTP_1_1_REQUIRED` (RFC 9113 §7): it did not act on it,
        /// and asks for it over HTTP/1.1 (IIS does so for authentication that HTTP/2 cannot carry).
        package var requiresHTTP1: Bool

        package init(
            reason: String, kind: ErrorKind = .network, retryAfter: Duration? = nil, beforeConnecting: Bool = false, notProcessed: Bool = false,
            requiresHTTP1: Bool = false
        ) {
            self.reason = reason
            self.kind = kind
            self.retryAfter = retryAfter
            self.beforeConnecting = beforeConnecting
            self.notProcessed = notProcessed
            self.requiresHTTP1 = requiresHTTP1
        }
    }

    /// Wait `after`, then send retry number `retry` of at most `of`; `reason` says why, for the `retrying` event.
    package struct Retry: Sendable, Equatable {
        package var after: Duration
        package var retry: Int
        package var of: Int
        package var reason: String
    }

    /// Why the download stops for good; the shell turns it into the words and exit code a person sees.
    package enum GiveUp: Sendable, Equatable {
        /// The same failure outlived every retry allowed; `heldBytes` when a rerun would resume.
        case retriesExhausted(Failure, retries: Int, heldBytes: Bool)
        /// Each response ended at the same place without getting further.
        case endsAtSamePlace(retries: Int)
        case tooManyRestarts(Int, RestartReason)
        /// The server refuses the request.
        case refused(status: Int)
    }

    /// What to do after a failure.
    package enum FailureAction: Sendable, Equatable {
        /// Send the request again at once, silently: the server never acted on it.
        case requestAgain
        case retry(Retry)
        case giveUp(GiveUp)
    }

    /// What to do after a response that ended before the whole file was held.
    package enum EarlyEndAction: Sendable, Equatable {
        /// Send the next request at once: the response made progress (or ended a segment, which is no failure).
        case requestAgain
        case retry(Retry)
        case giveUp(GiveUp)
    }

    /// What to do when the bytes held had to be discarded.
    package enum RestartAction: Sendable, Equatable {
        /// Start over from byte 0, like a fresh download.
        case restart(RestartReason)
        case giveUp(GiveUp)
    }

    /// What to do when the server refused the request.
    package enum RefusalAction: Sendable, Equatable {
        /// Ask the URL that was asked for again: the redirect's target refused.
        case requestOriginalURL
        case giveUp(GiveUp)
    }

    package let configuration: Configuration
    /// Why the rest of this run goes over one connection, once the server's own answers showed that splitting the
    /// file does not work with it.
    package enum OneConnectionCause: Sendable, Equatable {
        /// Its answers to range requests were inconsistent.
        case inconsistentRanges
        /// The answers to one download's segments described different versions of the file (other validators): a
        /// load balancer whose backends stamp the same file differently, or a file replaced while it was split.
        case segmentsDisagree
        /// Its answers to ranges are capped at a few bytes each (``RangeCap/isTooSmall(forSegmentsOf:)``).
        case smallRanges(cap: Int64)

        /// The words of the `singleConnection` event.
        package var description: String {
            switch self {
            case .inconsistentRanges: return "the server's answers to range requests were inconsistent"
            case .segmentsDisagree: return "the server's segments disagree about the file's version"
            case .smallRanges(let cap): return "the server answers a range with at most \(ByteFormat.string(cap))"
            }
        }
    }

    /// Why the rest of this run goes over one connection, if something showed it must (the first cause is kept).
    package private(set) var oneConnection: OneConnectionCause?
    /// Whether a fresh start may ask for `bytes=0-` to learn whether ranges work (and split the file); off once the
    /// server's own answers to range requests were inconsistent, or its segments disagreed about the file's version,
    /// so that such a server gets one plain request.
    package var mayProbeRanges: Bool { oneConnection == nil }
    package private(set) var restarts = 0
    /// Failures since bytes last got past ``bestHeld``.
    package private(set) var failures = 0
    /// The most bytes held at any point of this run.
    package private(set) var bestHeld: Int64
    /// Bytes received in this run.
    package private(set) var fetched: Int64 = 0
    private var fetchedAtRequest: Int64 = 0
    private var retriedOriginalURL = false
    /// Requests sent again because the server never acted on them.
    package private(set) var unprocessedRequests = 0
    /// The most requests of a run sent again for that reason; past it, such a failure counts like any other (a
    /// server that refuses every request it gets, say).
    package static let maxUnprocessedRequests = 16
    private var random: SplitMix64

    /// A run that starts with `held` bytes held from earlier runs. `seed` drives the backoff's jitter.
    package init(_ configuration: Configuration, held: Int64 = 0, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) {
        self.configuration = configuration
        self.bestHeld = held
        self.random = SplitMix64(seed: seed)
    }

    /// A request is going out: what it fetches is counted from here.
    package mutating func requestSent() {
        fetchedAtRequest = fetched
    }

    /// `count` bytes arrived (and were written).
    package mutating func received(_ count: Int64) {
        fetched += count
    }

    /// The response ended early, `held` bytes being held now.
    package mutating func endedEarly(held: Int64) -> EarlyEndAction {
        guard fetched > fetchedAtRequest else {
            switch failed(Failure(reason: "the server ended the response early"), held: held) {
            case .requestAgain: return .requestAgain
            case .retry(let retry): return .retry(retry)
            case .giveUp(let why): return .giveUp(why)
            }
        }
        if noteProgress(held) { return .requestAgain }
        failures += 1
        guard failures <= configuration.retry.maxRetries else { return .giveUp(.endsAtSamePlace(retries: configuration.retry.maxRetries)) }
        return .requestAgain
    }

    /// The attempt failed in a way the next may not; `held` bytes are held now.
    package mutating func failed(_ failure: Failure, held: Int64) -> FailureAction {
        noteProgress(held)
        if failure.notProcessed, unprocessedRequests < Self.maxUnprocessedRequests {
            unprocessedRequests += 1
            return .requestAgain
        }
        failures += 1
        let quick = failure.beforeConnecting && configuration.failFastBeforeData && fetched == 0 && held == 0
        let allowed = quick ? min(configuration.retry.maxRetries, 2) : configuration.retry.maxRetries
        guard failures <= allowed else { return .giveUp(.retriesExhausted(failure, retries: allowed, heldBytes: held > 0)) }
        var delay = configuration.retry.delay(beforeRetry: failures, retryAfter: failure.retryAfter, jitter: random.nextUnit())
        if quick { delay = min(delay, .milliseconds(250)) }
        return .retry(Retry(after: delay, retry: failures, of: allowed, reason: failure.reason))
    }

    /// The bytes held belong to another version, or do not match: they were discarded.
    package mutating func restartNeeded(_ reason: RestartReason) -> RestartAction {
        if oneConnection == nil {
            switch reason {
            case .invalidPartialResponse: oneConnection = .inconsistentRanges
            case .smallRanges(let cap): oneConnection = .smallRanges(cap: cap)
            case .resourceChanged, .overlapMismatch, .heldPastEnd: break
            }
        }
        restarts += 1
        guard restarts <= configuration.maxRestarts else { return .giveUp(.tooManyRestarts(restarts, reason)) }
        return .restart(reason)
    }

    /// The segments of one download saw different versions of the file (``OneConnectionCause/segmentsDisagree``): the
    /// bytes held were discarded, and the download starts over on one connection, which never mixes two versions. A
    /// restart like any other: a file that then changes again meets the same limit.
    package mutating func segmentsDisagreed(_ reason: RestartReason) -> RestartAction {
        if oneConnection == nil { oneConnection = .segmentsDisagree }
        restarts += 1
        guard restarts <= configuration.maxRestarts else { return .giveUp(.tooManyRestarts(restarts, reason)) }
        return .restart(reason)
    }

    /// The server refused the request with `status` (a 4xx that is not worth retrying), at a URL a redirect led to
    /// or at the URL asked for.
    package mutating func refused(status: Int, atRedirectTarget: Bool) -> RefusalAction {
        guard atRedirectTarget, !retriedOriginalURL, [401, 403, 404, 410].contains(status) else {
            return .giveUp(.refused(status: status))
        }
        retriedOriginalURL = true
        return .requestOriginalURL
    }

    /// Bytes past the best point reset the retry budget; returns whether they got past it.
    @discardableResult
    private mutating func noteProgress(_ held: Int64) -> Bool {
        guard held > bestHeld else { return false }
        bestHeld = held
        failures = 0
        return true
    }
}

/// A small deterministic generator (SplitMix64) for the backoff's jitter, so that the rule book stays a value.
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
