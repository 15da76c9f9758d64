extension DownloadMachine {
    // MARK: What the shell is told to do

    /// A request for the rest of the file over one connection (open-ended).
    package struct Request: Sendable, Equatable {
        package var plan: RequestPlan
        /// `bytes=0-` on a fresh download, to learn at once whether the server supports ranges.
        package var probing: Bool
        /// Sent through the client that offers HTTP/2.
        package var http2: Bool
        /// Why the file goes over one connection though more were asked for: said once.
        package var singleConnection: String?
    }

    /// A closed range asking again for the last bytes of a stretch held, which end at `end`.
    package struct HeldCheck: Sendable, Equatable {
        package var plan: RequestPlan
        package var end: Int64
    }

    /// How an attempt begins.
    package enum AttemptAction: Sendable, Equatable {
        /// Compare the last bytes of every stretch a restored segmented download holds with the server's, then
        /// continue its segments (``heldRunsChecked(matching:)``).
        case checkHeldRuns(SegmentPlan, [HeldCheck])
        /// Continue the segments of `plan` over several connections.
        case runSegments(SegmentPlan)
        /// Compare the last bytes of the stretch held, to continue the rest over several connections
        /// (``heldPrefixAnswered(_:point:)``).
        case checkHeldPrefix(HeldCheck)
        /// Ask for the rest over one connection (``responseHead(_:to:point:fileOpen:)``).
        case request(Request)
    }

    /// After the stretches of a restored segmented download were compared.
    package enum HeldRunsAction: Sendable, Equatable {
        /// They match: continue the segments; `owning`: the bytes were another URL's, and are this URL's now.
        case runSegments(SegmentPlan, owning: Bool)
        /// Another URL's bytes that this URL does not serve: fail, keeping them.
        case foreignBytesDiffer(url: String)
        /// Discard them (``heldBytesDiscarded()``) and start over (``restartNeeded(_:)``).
        case discardHeldBytes
    }

    /// What the answer to the check of a held stretch said: the rest of a file of `total` bytes (described by
    /// `info`) goes over `parts` connections, once the answer's first `overlap` bytes equal the last ones held.
    package struct HeldPrefixSplit: Sendable, Equatable {
        package var overlap: Int64
        package var info: ResourceInfo
        package var total: Int64
        package var parts: Int
    }

    /// After the answer to the check of a held stretch.
    package enum HeldPrefixAnswerAction: Sendable, Equatable {
        /// Compare the answer's first bytes with the last ones held (``heldPrefixCompared(matching:_:point:)``).
        case compare(HeldPrefixSplit)
        /// The answer does not allow splitting the rest: ask for it over one connection.
        case request(Request)
    }

    /// After the last bytes of a held stretch were compared.
    package enum HeldPrefixCompareAction: Sendable, Equatable {
        /// They are the server's: preallocate, make them this URL's (`adopting`: move the file given to
        /// `--continue` to the partial file's name; `owning`: record another URL's bytes as this URL's) and continue
        /// over the connections of `plan`.
        case split(SegmentPlan, adopting: String?, owning: Bool)
        /// Ask for the rest over one connection, whose own overlap check decides.
        case request(Request)
    }

    /// After an answer came as an HTTP/2 stream.
    package enum HTTP2Action: Sendable, Equatable {
        case keepStream
        /// A large file: drop the stream and send the same request over HTTP/1.1.
        case resendOverHTTP1
    }

    /// After the body's first bytes matched the last ones held.
    package enum OverlapMatchedAction: Sendable, Equatable {
        case carryOn
        /// The file given to `--continue` is the server's bytes: move it to the partial file's name, own it.
        case adopt(path: String)
        /// Another URL's bytes are this URL's: record them as this URL's.
        case own
    }

    /// After the body's first bytes differed from the last ones held.
    package enum OverlapDiffersAction: Sendable, Equatable {
        /// Fail, leaving the file given to `--continue` unchanged.
        case adoptedFileDiffers(path: String)
        /// Fail, keeping another URL's bytes.
        case foreignBytesDiffer(url: String)
        /// Discard them (``heldBytesDiscarded()``) and start over (``restartNeeded(_:)``).
        case discardHeldBytes
    }

    /// What the finished download publishes.
    package struct Publish: Sendable, Equatable {
        /// The file given to `--continue`, published where it is, when its bytes were never re-fetched.
        package var adoptedPath: String?
        /// The file found at the destination when the run began may be replaced.
        package var replacesDestination: Bool
    }

    // MARK: Events

    /// The destination is known and `held` (`heldBytes` bytes) is what is held for it.
    package mutating func prepared(_ held: Held, heldBytes: Int64, replacesDestination: Bool) {
        _ = enter(.prepared)
        rules = RetryRules(configuration.rules, held: heldBytes, seed: seed)
        bookkeeping = Bookkeeping(configuration.bookkeeping, held: heldBytes)
        self.replacesDestination = replacesDestination
        state = .ready(held)
    }

    /// An attempt begins, holding `point`.
    package mutating func attemptStarts(_ point: ResumePoint) -> AttemptAction {
        let held = enter(.attemptStarts)
        state = .attempting(held)
        rules.requestSent()
        bookkeeping.requestSent(held: point.offset)
        switch held {
        case .segmented(let plan, .unverified):
            let checks = ResumePolicy.verificationPlans(for: plan.heldRuns, validators: point.validators)
            return .checkHeldRuns(plan, checks.map { HeldCheck(plan: $0.plan, end: $0.point) })
        case .segmented(let plan, .verified):
            return .runSegments(plan)
        case .none, .own, .adopted, .foreign:
            if let check = heldPrefixCheck(held, point) { return .checkHeldPrefix(check) }
            return .request(nextRequest(held, point))
        }
    }

    /// The stretches of a restored segmented download were compared with the server's.
    package mutating func heldRunsChecked(matching: Bool) -> HeldRunsAction {
        let held = enter(.heldRunsChecked)
        guard case .segmented(let plan, _) = held else { return .discardHeldBytes }
        let foreign = held.foreignURL
        guard matching else { return foreign.map { .foreignBytesDiffer(url: $0) } ?? .discardHeldBytes }
        state = .attempting(.segmented(plan, .verified))
        return .runSegments(plan, owning: foreign != nil)
    }

    /// The answer to the check of the stretch held (``AttemptAction/checkHeldPrefix(_:)``) came: `decision`.
    package mutating func heldPrefixAnswered(_ decision: ResponseDecision, point: ResumePoint) -> HeldPrefixAnswerAction {
        let held = enter(.heldPrefixAnswered)
        guard case .append(let info, _, let overlap) = decision, let total = info.totalLength, total > point.offset,
              let parts = remainderParts(total: total, offset: point.offset, validators: info.validators) else {
            triedSplittingHeldBytes = true
            // An answer that the bytes held cannot be continued: the request meets it again and fails (a file given to
            // --continue) or starts over (with every connection); no rest goes over one connection to be announced.
            if case .restart = decision { return .request(nextRequest(held, point, announcing: false)) }
            return .request(nextRequest(held, point))
        }
        return .compare(HeldPrefixSplit(overlap: overlap, info: info, total: total, parts: parts))
    }

    /// The last bytes of the stretch held were compared with the answer's, which said `split`.
    package mutating func heldPrefixCompared(matching: Bool, _ split: HeldPrefixSplit, point: ResumePoint) -> HeldPrefixCompareAction {
        let held = enter(.heldPrefixCompared)
        triedSplittingHeldBytes = true
        guard matching else { return .request(nextRequest(held, point)) }
        let plan = SegmentPlan(total: split.total, parts: split.parts, minSegmentSize: configuration.minSegmentSize, heldPrefix: point.offset)
        state = .attempting(.segmented(plan, .verified))
        return .split(plan, adopting: held.adoptedPath, owning: held.foreignURL != nil)
    }

    /// The answer came as an HTTP/2 stream, for a file of `claimedLength` bytes (if it said).
    package mutating func http2Answered(claimedLength: Int64?) -> HTTP2Action {
        _ = enter(.http2Answered)
        guard let total = claimedLength, total >= configuration.largeFileThreshold else { return .keepStream }
        usesHTTP2 = false
        return .resendOverHTTP1
    }

    /// The head of the answer to `request` came: `decision` is what it means for `point`, held in a file that is
    /// open or not. Returns the one step to take (``ResponseHeadStep``).
    package mutating func responseHead(_ decision: ResponseDecision, to request: Request, point: ResumePoint, fileOpen: Bool) -> ResponseHeadStep {
        let held = enter(.responseHead)
        var context = ResponseHeadStep.Context()
        context.adopted = held.adoptedPath != nil
        context.foreign = held.foreignURL != nil
        context.probing = request.probing
        context.fileOpen = fileOpen
        context.held = point.offset
        context.heldValidators = point.validators
        context.rangesTrusted = rules.mayProbeRanges
        context.segments = configuration.segments
        context.minSegmentSize = configuration.minSegmentSize
        context.maxConnectionsPerHost = configuration.maxConnectionsPerHost
        let step = ResponseHeadStep.decide(decision, context)
        switch step {
        case .writeWhole:
            // Whatever was held is replaced by this URL's bytes from byte 0.
            state = .attempting(.own(unknownTotal: false))
        case .append(_, _, let connections):
            if case .segmented? = connections { break }
            if held == .none { state = .attempting(.own(unknownTotal: false)) }
        default:
            break
        }
        return step
    }

    /// The body's first bytes equal the last ones held.
    package mutating func overlapMatched() -> OverlapMatchedAction {
        switch enter(.overlapMatched) {
        case .adopted(let path):
            state = .attempting(.own(unknownTotal: false))
            return .adopt(path: path)
        case .foreign:
            state = .attempting(.own(unknownTotal: false))
            return .own
        case .none, .own, .segmented:
            return .carryOn
        }
    }

    /// The body's first bytes differ from the last ones held (or it ended before they all came).
    package mutating func overlapDiffers() -> OverlapDiffersAction {
        switch enter(.overlapDiffers) {
        case .adopted(let path): return .adoptedFileDiffers(path: path)
        case .foreign(let url): return .foreignBytesDiffer(url: url)
        case .none, .own, .segmented: return .discardHeldBytes
        }
    }

    /// A body continuing the bytes held was written to its end; `totalKnown`: its answer said the file's length.
    package mutating func appended(totalKnown: Bool) {
        _ = enter(.appended)
        state = .attempting(.own(unknownTotal: !totalKnown))
    }

    /// `count` bytes of a body were written, which makes `held` bytes held; `elapsed` is the time since the run began.
    package mutating func bodyPart(count: Int64, held: Int64, elapsed: Duration) -> Bookkeeping.Action {
        _ = enter(.bodyPart)
        rules.received(count)
        return bookkeeping.wrote(count, held: held, elapsed: elapsed)
    }

    /// The answer to the range probe showed the file is split by `plan`.
    package mutating func segmentsPlanned(_ plan: SegmentPlan) {
        _ = enter(.segmentsPlanned)
        state = .attempting(.segmented(plan, .verified))
    }

    /// The segments' connections stopped (done or failed), leaving `plan`; they wrote `count` bytes.
    package mutating func segmentsStopped(_ plan: SegmentPlan, wrote count: Int64) {
        _ = enter(.segmentsStopped)
        rules.received(count)
        state = .attempting(.segmented(plan, .verified))
    }

    /// Every segment is written: the file is one stretch of this URL's bytes.
    package mutating func segmentsCompleted() {
        _ = enter(.segmentsCompleted)
        state = .attempting(.own(unknownTotal: false))
    }

    /// The bytes held were discarded (they belong to another version, or do not match).
    package mutating func heldBytesDiscarded() {
        _ = enter(.heldBytesDiscarded)
        state = .attempting(.none)
    }

    /// Every byte is held: returns what to publish.
    package mutating func completed() -> Publish {
        let held = enter(.completed)
        state = .finishing(held)
        return Publish(adoptedPath: held.adoptedPath, replacesDestination: replacesDestination)
    }

    /// The response (or the segments) ended before every byte was held; `held` bytes are held.
    package mutating func endedEarly(held bytes: Int64) -> RetryRules.EarlyEndAction {
        let held = enter(.endedEarly)
        let action = rules.endedEarly(held: bytes)
        switch action {
        case .requestAgain: state = .ready(held)
        case .retry(let retry): state = .waitingToRetry(held, retry: retry.retry)
        case .giveUp: state = .failed(held)
        }
        return action
    }

    /// The bytes held were discarded for `reason`: start over, unless that happened too often.
    package mutating func restartNeeded(_ reason: RestartReason) -> RetryRules.RestartAction {
        let held = enter(.restartNeeded)
        let action = rules.restartNeeded(reason)
        if case .giveUp = action { state = .failed(held) } else { state = .ready(held) }
        return action
    }

    /// The answers to the segments described different versions of the file; their bytes were discarded for `reason`:
    /// start over on one connection (``RetryRules/segmentsDisagreed(_:)``), unless that happened too often.
    package mutating func segmentsDisagreed(_ reason: RestartReason) -> RetryRules.RestartAction {
        let held = enter(.segmentsDisagreed)
        let action = rules.segmentsDisagreed(reason)
        if case .giveUp = action { state = .failed(held) } else { state = .ready(held) }
        return action
    }

    /// The server refused the request with `status`, at a URL a redirect led to or at the URL asked for.
    package mutating func refused(status: Int, atRedirectTarget: Bool) -> RetryRules.RefusalAction {
        let held = enter(.refused)
        let action = rules.refused(status: status, atRedirectTarget: atRedirectTarget)
        if case .giveUp = action { state = .failed(held) } else { state = .ready(held) }
        return action
    }

    /// The attempt failed in a way the next may not; `held` bytes are held.
    package mutating func failed(_ failure: RetryRules.Failure, held bytes: Int64) -> RetryRules.FailureAction {
        let held = enter(.failed)
        if failure.requiresHTTP1, usesHTTP2 {
            // The server did not act on it and asks for HTTP/1.1 (RFC 9113 §7): the same request over HTTP/1.1, at once
            // and outside the retry budget, as curl does. Once: every later request of the download is HTTP/1.1.
            usesHTTP2 = false
            state = .ready(held)
            return .requestAgain
        }
        let action = rules.failed(failure, held: bytes)
        switch action {
        case .requestAgain: state = .ready(held)
        case .retry(let retry): state = .waitingToRetry(held, retry: retry.retry)
        case .giveUp: state = .failed(held)
        }
        return action
    }

    // MARK: Decisions

    /// The check of a held stretch that continues it over several connections, when it is worth one: the rest
    /// would be split, ranges are trusted, and it was not tried in this run.
    private func heldPrefixCheck(_ held: Held, _ point: ResumePoint) -> HeldCheck? {
        guard point.offset > 0, configuration.segments != 1, rules.mayProbeRanges, !triedSplittingHeldBytes else { return nil }
        switch held {
        case .adopted:
            // A file given to --continue: its length is unknown until the server answers, so the extra check is
            // made only when several connections were asked for.
            guard (configuration.segments ?? 1) > 1 else { return nil }
        case .own, .foreign:
            // Only when the record already shows that the rest would be split.
            guard let total = point.totalLength, total > point.offset,
                  remainderParts(total: total, offset: point.offset, validators: point.validators) != nil else { return nil }
        case .none, .segmented:
            return nil
        }
        let checks = ResumePolicy.verificationPlans(for: [0..<point.offset], validators: point.validators)
        return checks.first.map { HeldCheck(plan: $0.plan, end: $0.point) }
    }

    /// How many connections the bytes after the `offset` held would get, or `nil` for one.
    private func remainderParts(total: Int64, offset: Int64, validators: Validators) -> Int? {
        let rest = ResourceInfo(validators: validators, totalLength: total - offset, acceptsRanges: true)
        let decision = SegmentationPolicy.decide(
            requested: configuration.segments, info: rest, rangeSupported: true,
            minSegmentSize: configuration.minSegmentSize, maxConnectionsPerHost: configuration.maxConnectionsPerHost)
        if case .segmented(let parts) = decision { return parts }
        return nil
    }

    /// The open-ended request for what `held` lacks; `announcing`: it may say why it is one connection.
    private mutating func nextRequest(_ held: Held, _ point: ResumePoint, announcing: Bool = true) -> Request {
        let segments = configuration.segments
        var singleConnection: String?
        if announcing, point.offset > 0, (segments ?? 1) > 1, !reportedSingleConnection {
            reportedSingleConnection = true
            singleConnection = "the rest after the bytes held is too small to split, or the server's answer does not allow it"
        }
        let probe = rules.mayProbeRanges && segments != 1 && point.offset == 0 && held.adoptedPath == nil
        if let cause = rules.oneConnection, point.offset == 0, segments != 1, !reportedSingleConnection {
            reportedSingleConnection = true
            singleConnection = cause.description
        }
        let plan = ResumePolicy.plan(
            for: point, probeRanges: probe, verifyOverlap: held.foreignURL != nil, heldFromThisAnswer: held == .own(unknownTotal: true))
        return Request(plan: plan, probing: probe, http2: usesHTTP2, singleConnection: singleConnection)
    }
}
