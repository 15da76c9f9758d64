/// The life of one download across its attempts, as a pure state machine in the style of AsyncHTTPClient's
/// `*StateMachine`s: the shell (`DownloadJob`) reports each event through its own method and does what that
/// method's own action type says. The state records where the bytes held came from (``Held``): the decisions that
/// keep wrong bytes from a destination — bytes of a file given to `--continue` or of another URL are continued
/// only once shown to be the server's, a segmented download's restored bytes are compared before any segment
/// continues — follow from it, not from flags scattered over the shell.
///
/// Retries, restarts and refusals follow the one rule book, ``RetryRules``; progress and checkpoints while bytes
/// arrive follow ``Bookkeeping``. An event the state does not allow (``accepts(_:in:)``) is a bug in the shell:
/// it stops a debug build at once (`assertionFailure`); a release build carries on as from the state it is in.
package struct DownloadMachine: Sendable {
    package struct Configuration: Sendable, Equatable {
        package var rules: RetryRules.Configuration
        package var bookkeeping: Bookkeeping.Configuration
        /// The connections asked for (`nil`: Haul chooses; 1: never split).
        package var segments: Int?
        package var minSegmentSize: Int64
        package var maxConnectionsPerHost: Int
        /// Requests may go as HTTP/2 streams (the engine offers HTTP/2, the URL is https, no segments asked for).
        package var multiplexable: Bool
        /// A file at least this long goes over HTTP/1.1 even when its first answer came as an HTTP/2 stream: one big
        /// transfer runs faster on a connection of its own, and it may be split.
        package var largeFileThreshold: Int64

        package init(
            rules: RetryRules.Configuration = .init(), bookkeeping: Bookkeeping.Configuration = .init(), segments: Int? = nil,
            minSegmentSize: Int64 = 1 << 20, maxConnectionsPerHost: Int = 8, multiplexable: Bool = false,
            largeFileThreshold: Int64 = 8 << 20
        ) {
            self.rules = rules
            self.bookkeeping = bookkeeping
            self.segments = segments
            self.minSegmentSize = minSegmentSize
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.multiplexable = multiplexable
            self.largeFileThreshold = largeFileThreshold
        }
    }

    /// Where the bytes held for the destination came from.
    package enum Held: Sendable, Equatable {
        /// Nothing is held.
        case none
        /// Bytes this URL's download wrote, in one stretch from byte 0. `unknownTotal`: they came in this run from
        /// an answer whose complete length was `*`, so the rest is asked for from exactly the next byte (where the
        /// server can say with a 416 that the file ended).
        case own(unknownTotal: Bool)
        /// A file another tool wrote, given to `--continue` (at `path`), not yet shown to be the server's bytes.
        case adopted(path: String)
        /// Bytes another URL's download left at this destination (a re-signed URL), in one stretch, not yet shown to
        /// be this URL's representation.
        case foreign(url: String)
        /// A segmented download's bytes, laid out by its plan; whether they were compared with the server's in
        /// this run.
        case segmented(SegmentPlan, Verification)

        /// The file given to `--continue`, while its bytes are not yet shown to be the server's.
        package var adoptedPath: String? {
            if case .adopted(let path) = self { return path }
            return nil
        }

        /// The URL whose download left the bytes held, while they are not yet shown to be this URL's.
        package var foreignURL: String? {
            switch self {
            case .foreign(let url), .segmented(_, .unverified(foreignURL: let url?)): return url
            default: return nil
            }
        }
    }

    /// Whether a segmented download's bytes held were compared with the server's in this run.
    package enum Verification: Sendable, Equatable {
        /// Compared (or written) in this run: its segments continue.
        case verified
        /// Restored from an earlier run: the last bytes of every stretch held are compared before any segment
        /// continues, whatever the validators say (an ETag made of size and time survives an in-place rewrite).
        /// `foreignURL`: the bytes are another URL's download, which this URL continues only if they match.
        case unverified(foreignURL: String?)
    }

    package enum State: Sendable, Equatable {
        /// The destination and the bytes held for it are being found; nothing is sent yet.
        case preparing
        /// The next attempt may start.
        case ready(Held)
        /// An attempt is under way: requests out, bytes held being checked, a body arriving, segments running.
        case attempting(Held)
        /// Waiting out the backoff before retry number `retry`.
        case waitingToRetry(Held, retry: Int)
        /// Every byte is held: the shell verifies, fsyncs and publishes.
        case finishing(Held)
        /// Given up; the action said why.
        case failed(Held)

        /// What is held, once the run knows.
        var heldIfAny: Held? {
            switch self {
            case .preparing: return nil
            case .ready(let held), .attempting(let held), .waitingToRetry(let held, _), .finishing(let held), .failed(let held):
                return held
            }
        }
    }

    /// The events, by name: what ``accepts(_:in:)`` judges.
    package enum Event: String, CaseIterable, Sendable {
        case prepared, attemptStarts, heldRunsChecked, heldPrefixAnswered, heldPrefixCompared, http2Answered, responseHead
        case overlapMatched, overlapDiffers, appended, bodyPart, segmentsPlanned, segmentsStopped, segmentsCompleted
        case heldBytesDiscarded, completed, endedEarly, restartNeeded, segmentsDisagreed, refused, failed
    }

    package let configuration: Configuration
    package internal(set) var state: State = .preparing
    /// The retry rule book of this run.
    package internal(set) var rules: RetryRules
    var bookkeeping: Bookkeeping
    /// The file found at the destination is to be replaced by the finished download (only what was there when the
    /// run began: a file that appears meanwhile is never replaced).
    package internal(set) var replacesDestination = false
    /// Requests go to the client that offers HTTP/2 (until the file is found large).
    package internal(set) var usesHTTP2: Bool
    /// Why the file goes over one connection was said already.
    var reportedSingleConnection = false
    /// Continuing a held stretch over several connections is tried once per run.
    var triedSplittingHeldBytes = false
    let seed: UInt64

    /// A machine for a download of `configuration`; `seed` drives the backoff's jitter.
    package init(_ configuration: Configuration, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) {
        self.configuration = configuration
        self.rules = RetryRules(configuration.rules, seed: seed)
        self.bookkeeping = Bookkeeping(configuration.bookkeeping)
        self.usesHTTP2 = configuration.multiplexable
        self.seed = seed
    }

    /// Where the bytes held came from, in any state.
    package var held: Held { state.heldIfAny ?? .none }

    /// Whether `event` may happen in `state`: the machine's transitions, in one place.
    package static func accepts(_ event: Event, in state: State) -> Bool {
        switch (event, state) {
        case (.prepared, .preparing):
            return true
        case (.attemptStarts, .ready), (.attemptStarts, .waitingToRetry):
            return true
        case (_, .attempting(let held)):
            return accepts(event, whileAttemptingWith: held)
        default:
            return false
        }
    }

    private static func accepts(_ event: Event, whileAttemptingWith held: Held) -> Bool {
        switch event {
        case .prepared, .attemptStarts:
            return false
        case .completed, .endedEarly, .refused, .failed:
            return true
        case .heldRunsChecked:
            if case .segmented(_, .unverified) = held { return true }
            return false
        case .heldPrefixAnswered, .heldPrefixCompared, .overlapMatched, .overlapDiffers:
            switch held {
            case .own, .adopted, .foreign: return true
            case .none, .segmented: return false
            }
        case .http2Answered, .responseHead:
            if case .segmented = held { return false }
            return true
        case .appended, .bodyPart:
            // Bytes are written only where they are known to be this URL's: never into a file given to --continue,
            // or after another URL's bytes, before their overlap matched.
            if case .own = held { return true }
            return false
        case .segmentsPlanned:
            // Planned from the answer to a range probe, which is sent only when no byte is held (bytes of this URL's
            // may have been expected and none came).
            switch held {
            case .none, .own: return true
            case .adopted, .foreign, .segmented: return false
            }
        case .restartNeeded, .segmentsDisagreed:
            // A restart starts from nothing: the bytes held were discarded first.
            return held == .none
        case .segmentsStopped, .segmentsCompleted:
            if case .segmented(_, .verified) = held { return true }
            return false
        case .heldBytesDiscarded:
            switch held {
            case .none, .own, .segmented(_, .verified), .segmented(_, .unverified(foreignURL: nil)): return true
            case .adopted, .foreign, .segmented: return false
            }
        }
    }

    /// Checks that `event` may happen now, loudly in a debug build; returns what is held.
    func enter(_ event: Event) -> Held {
        assert(Self.accepts(event, in: state), "DownloadMachine: \(event.rawValue) cannot happen in \(Self.name(of: state))")
        return held
    }

    /// A state by name and kind of bytes held, without its paths and URLs (a signed URL's signature is a secret).
    static func name(of state: State) -> String {
        let phase: String
        switch state {
        case .preparing: return "preparing"
        case .ready: phase = "ready"
        case .attempting: phase = "attempting"
        case .waitingToRetry: phase = "waitingToRetry"
        case .finishing: phase = "finishing"
        case .failed: phase = "failed"
        }
        let held: String
        switch state.heldIfAny ?? .none {
        case .none: held = "none"
        case .own(let unknownTotal): held = unknownTotal ? "own, length unknown" : "own"
        case .adopted: held = "adopted"
        case .foreign: held = "foreign"
        case .segmented(_, .verified): held = "segmented"
        case .segmented(_, .unverified(let foreignURL)): held = foreignURL == nil ? "segmented, unverified" : "segmented, foreign"
        }
        return "\(phase)(\(held))"
    }
}
