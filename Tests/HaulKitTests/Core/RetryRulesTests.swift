import Testing
@testable import HaulCore

/// The one retry rule book without a network: every event, and the action it answers.
@Suite struct RetryRulesTests {
    typealias Rules = RetryRules
    let retry = RetryPolicy(maxRetries: 3, baseDelay: .seconds(1), maxDelay: .seconds(8))
    let drop = Rules.Failure(reason: "connection reset by peer (h:80)")
    let refused = Rules.Failure(reason: "connection refused (h:80)", beforeConnecting: true)

    func rules(failFast: Bool = false, held: Int64 = 0) -> Rules {
        Rules(Rules.Configuration(retry: retry, failFastBeforeData: failFast), held: held, seed: 7)
    }

    @Test func retriesBackOffExponentiallyAndGiveUpAfterTheBudget() {
        var r = rules()
        var delays: [Duration] = []
        for expected in 1...3 {
            r.requestSent()
            guard case .retry(let wait) = r.failed(drop, held: 0) else {
                Issue.record("expected a retry")
                return
            }
            #expect(wait.retry == expected)
            #expect(wait.of == 3)
            #expect(wait.reason == drop.reason)
            delays.append(wait.after)
        }
        // 50–100% of 1 s, 2 s, 4 s.
        #expect(delays[0] >= .milliseconds(500) && delays[0] <= .seconds(1))
        #expect(delays[1] >= .seconds(1) && delays[1] <= .seconds(2))
        #expect(delays[2] >= .seconds(2) && delays[2] <= .seconds(4))
        #expect(r.failed(drop, held: 0) == .giveUp(.retriesExhausted(drop, retries: 3, heldBytes: false)))
    }

    /// A request a closing HTTP/2 connection never sent goes again at once and silently, without using the budget;
    /// a server that refuses every request still ends, once the run's allowance of such requests is spent.
    @Test func aRequestTheServerNeverActedOnIsSentAgainAtOnceWithinABound() {
        let unsent = Rules.Failure(reason: "h:443 closed the connection before the request was sent", notProcessed: true)
        var r = rules()
        for _ in 0..<Rules.maxUnprocessedRequests {
            r.requestSent()
            #expect(r.failed(unsent, held: 0) == .requestAgain)
        }
        #expect(r.failures == 0)
        // Between them, other failures keep their own budget.
        guard case .retry(let first) = r.failed(drop, held: 0) else {
            Issue.record("expected a retry")
            return
        }
        #expect(first.retry == 1)
        // Past the allowance, such a request is a failure like any other, and the run gives up in the end.
        var outcome: Rules.FailureAction?
        for _ in 0..<10 {
            outcome = r.failed(unsent, held: 0)
            if case .giveUp = outcome { break }
            guard case .retry = outcome else {
                Issue.record("expected a retry, got \(String(describing: outcome))")
                return
            }
        }
        #expect(outcome == .giveUp(.retriesExhausted(unsent, retries: 3, heldBytes: false)))
    }

    @Test func retryAfterIsHonoured() {
        var r = rules()
        let busy = Rules.Failure(reason: "503", kind: .httpStatus, retryAfter: .seconds(30))
        guard case .retry(let wait) = r.failed(busy, held: 0) else {
            Issue.record("expected a retry")
            return
        }
        #expect(wait.after == .seconds(30))
    }

    @Test func bytesPastTheBestPointResetTheBudget() {
        var r = rules()
        for held in stride(from: Int64(100), through: 1_000, by: 100) {
            r.requestSent()
            r.received(100)
            guard case .retry(let wait) = r.failed(drop, held: held) else {
                Issue.record("a drop after progress is retried")
                return
            }
            #expect(wait.retry == 1)
        }
        #expect(r.bestHeld == 1_000)
    }

    @Test func aHeldGiveUpSaysARerunResumes() {
        var r = rules(held: 500)
        for _ in 0..<3 { _ = r.failed(drop, held: 500) }
        #expect(r.failed(drop, held: 500) == .giveUp(.retriesExhausted(drop, retries: 3, heldBytes: true)))
    }

    @Test func aRefusedConnectionBeforeAnyByteFailsFast() {
        var r = rules(failFast: true)
        for expected in 1...2 {
            guard case .retry(let wait) = r.failed(refused, held: 0) else {
                Issue.record("expected a quick retry")
                return
            }
            #expect(wait.retry == expected && wait.of == 2)
            #expect(wait.after <= .milliseconds(250))
        }
        #expect(r.failed(refused, held: 0) == .giveUp(.retriesExhausted(refused, retries: 2, heldBytes: false)))
    }

    @Test func aRefusedConnectionAfterBytesKeepsTheWholeBackoff() {
        var r = rules(failFast: true)
        r.received(10)
        for _ in 1...3 {
            guard case .retry(let wait) = r.failed(refused, held: 10) else {
                Issue.record("expected a retry")
                return
            }
            #expect(wait.of == 3)
        }
        // Without fail-fast (the daemon, a segment's connection) a refused connection never gets the short budget.
        for configuration in [Rules.Configuration(retry: retry), .segmentConnection(retry: retry)] {
            var daemon = Rules(configuration)
            guard case .retry(let wait) = daemon.failed(refused, held: 0) else {
                Issue.record("expected a retry")
                return
            }
            #expect(wait.of == 3)
        }
    }

    @Test func anEarlyEndWithoutBytesIsAFailure() {
        var r = rules()
        r.requestSent()
        guard case .retry(let wait) = r.endedEarly(held: 0) else {
            Issue.record("expected a retry")
            return
        }
        #expect(wait.retry == 1 && wait.of == 3)
        #expect(wait.reason == "the server ended the response early")
    }

    @Test func anEarlyEndWithNewBytesAsksAgainAtOnce() {
        var r = rules()
        r.requestSent()
        r.received(40)
        #expect(r.endedEarly(held: 40) == .requestAgain)
        #expect(r.failures == 0)
    }

    @Test func responsesEndingAtTheSamePlaceUseTheBudget() {
        // Bytes arrive each time, but never past the best point (a server that restarts from 0 and drops at 40).
        var r = rules(held: 40)
        for expected in 1...3 {
            r.requestSent()
            r.received(40)
            #expect(r.endedEarly(held: 40) == .requestAgain)
            #expect(r.failures == expected)
        }
        r.requestSent()
        r.received(40)
        #expect(r.endedEarly(held: 40) == .giveUp(.endsAtSamePlace(retries: 3)))
    }

    @Test func bytesCountAsFetchedAndAreJudgedAtTheEnd() {
        var r = rules()
        r.requestSent()
        r.received(300)
        #expect(r.fetched == 300)
        #expect(r.endedEarly(held: 300) == .requestAgain)
        #expect(r.bestHeld == 300)
    }

    @Test func restartsAreLimitedAndAnInconsistentServerIsNotProbedAgain() {
        var r = rules()
        #expect(r.mayProbeRanges)
        #expect(r.restartNeeded(.overlapMismatch) == .restart(.overlapMismatch))
        #expect(r.mayProbeRanges)
        let bad = RestartReason.invalidPartialResponse("wrong Content-Range")
        #expect(r.restartNeeded(bad) == .restart(bad))
        #expect(!r.mayProbeRanges)
        let changed = RestartReason.resourceChanged("new ETag")
        #expect(r.restartNeeded(changed) == .restart(changed))
        #expect(r.restartNeeded(changed) == .giveUp(.tooManyRestarts(4, changed)))
    }

    @Test func aRedirectTargetThatRefusesIsRetriedOnceFromTheOriginalURL() {
        for status in [401, 403, 404, 410] {
            var r = rules()
            #expect(r.refused(status: status, atRedirectTarget: true) == .requestOriginalURL)
            #expect(r.refused(status: status, atRedirectTarget: true) == .giveUp(.refused(status: status)))
        }
        var direct = rules()
        #expect(direct.refused(status: 404, atRedirectTarget: false) == .giveUp(.refused(status: 404)))
        var other = rules()
        #expect(other.refused(status: 400, atRedirectTarget: true) == .giveUp(.refused(status: 400)))
    }

    @Test func theSameSeedGivesTheSameBackoff() {
        var a = rules(), b = rules()
        for _ in 0..<3 { #expect(a.failed(drop, held: 0) == b.failed(drop, held: 0)) }
    }

    /// Whatever happens, a run never retries more than its budget without bytes past the best point in between,
    /// and every retry's number is within its budget.
    @Test func noRunRetriesPastItsBudgetWithoutProgress() {
        forAll(count: 500, seed: 41) { random in
            var r = Rules(Rules.Configuration(retry: retry, failFastBeforeData: Bool.random(using: &random)),
                          held: Int64.random(in: 0...100, using: &random), seed: random.next())
            var held = r.bestHeld
            var sinceProgress = 0
            for _ in 0..<40 {
                r.requestSent()
                let grows = Int64.random(in: 0...2, using: &random) == 0 ? Int64.random(in: 1...50, using: &random) : 0
                r.received(grows)
                let before = r.bestHeld
                held += grows
                let failure = Bool.random(using: &random) ? refused : drop
                let gaveUp: Bool
                if Bool.random(using: &random) {
                    switch r.failed(failure, held: held) {
                    case .retry(let wait):
                        #expect(wait.retry >= 1 && wait.retry <= wait.of && wait.of <= 3)
                        gaveUp = false
                    case .giveUp: gaveUp = true
                    case .requestAgain:
                        Issue.record("only a request the server never acted on is sent again without a wait")
                        gaveUp = false
                    }
                } else {
                    gaveUp = r.endedEarly(held: held).isGiveUp
                }
                sinceProgress = r.bestHeld > before ? 0 : sinceProgress + 1
                if gaveUp { break }
                #expect(sinceProgress <= 3 || r.bestHeld > before)
            }
        }
    }
}

extension RetryRules.EarlyEndAction {
    var isGiveUp: Bool {
        if case .giveUp = self { return true }
        return false
    }
}

/// When progress is reported and bytes made durable while they arrive.
@Suite struct BookkeepingTests {
    @Test func itLooksEveryFewBytesAndCheckpointsByBytesOrTime() {
        var b = Bookkeeping(Bookkeeping.Configuration(
            lookEveryBytes: 100, progressInterval: .milliseconds(250), checkpointBytes: 1_000, checkpointInterval: .seconds(1)))
        b.requestSent(held: 0)
        // Below the bookkeeping step: nothing.
        #expect(b.wrote(60, held: 60, elapsed: .milliseconds(10)) == .none)
        // 120 bytes since the last look: progress.
        #expect(b.wrote(60, held: 120, elapsed: .milliseconds(20)) == .reportProgress)
        // Too soon after that progress: nothing.
        #expect(b.wrote(100, held: 220, elapsed: .milliseconds(100)) == .none)
        #expect(b.wrote(100, held: 320, elapsed: .milliseconds(300)) == .reportProgress)
        // 1,000 bytes since the last checkpoint: a checkpoint (which reports progress too).
        #expect(b.wrote(700, held: 1_020, elapsed: .milliseconds(400)) == .checkpoint)
        // A second later with few bytes: a checkpoint by time.
        #expect(b.wrote(100, held: 1_120, elapsed: .milliseconds(1_500)) == .checkpoint)
    }

    /// A slow link: bytes fewer than a look's still report progress every progress interval (curl's and wget's meters
    /// move every second whatever the rate), and are checkpointed every checkpoint interval while any are unsynced:
    /// `kill -9` loses at most a second of them.
    @Test func aSlowLinkLooksByTime() {
        var b = Bookkeeping(Bookkeeping.Configuration(
            lookEveryBytes: 256 * 1024, progressInterval: .milliseconds(250), checkpointBytes: 16 << 20, checkpointInterval: .seconds(1)))
        b.requestSent(held: 0)
        var held: Int64 = 0
        var actions: [Bookkeeping.Action] = []
        // 5,000 bytes every 100 ms (50 KB/s) for 3 seconds.
        for step in 1...30 {
            held += 5_000
            actions.append(b.wrote(5_000, held: held, elapsed: .milliseconds(100 * step)))
        }
        // Looks every 300 ms (the first step past 250): progress, and the first look past each second a checkpoint.
        let checkpoints = actions.indices.filter { actions[$0] == .checkpoint }.map { 100 * ($0 + 1) }
        #expect(checkpoints == [1_200, 2_400], "\(actions)")
        #expect(actions.filter { $0 == .reportProgress }.count + checkpoints.count == 10, "\(actions)")
        // Nothing before the first interval has passed.
        #expect(actions.prefix(2).allSatisfy { $0 == .none })
        // The bytes since the last one are made durable at the next look past a second; then, with nothing new,
        // nothing is synced again, whatever the time.
        #expect(b.wrote(0, held: held, elapsed: .milliseconds(9_000)) == .checkpoint)
        #expect(b.wrote(0, held: held, elapsed: .milliseconds(11_000)) != .checkpoint)
    }

    @Test func aRunHoldingBytesCountsItsFirstCheckpointFromThem() {
        let configuration = Bookkeeping.Configuration(lookEveryBytes: 1, checkpointBytes: 1_000, checkpointInterval: .seconds(60))
        var resumed = Bookkeeping(configuration, held: 5_000)
        #expect(resumed.wrote(900, held: 5_900, elapsed: .milliseconds(1)) == .reportProgress)
        #expect(resumed.wrote(200, held: 6_100, elapsed: .seconds(1)) == .checkpoint)
        // The bytes held were discarded: from byte 0 again.
        var restarted = Bookkeeping(configuration, held: 5_000)
        restarted.requestSent(held: 0)
        #expect(restarted.wrote(1_000, held: 1_000, elapsed: .milliseconds(1)) == .checkpoint)
    }
}

@Suite struct RangeAnswerTests {
    let strong = Validators(headers: ["ETag": "\"v1\""])
    let info = ResourceInfo(validators: Validators(headers: ["ETag": "\"v1\""]), totalLength: 100, acceptsRanges: true)

    @Test func aRangeIsWrittenWithItsOverlap() {
        #expect(RangeAnswer.classify(.append(info, bodyLength: 10, overlap: 4), validators: strong) == .range(info, overlap: 4))
    }

    @Test func theWholeFileMeansChangedOrRangesIgnored() {
        let other = ResourceInfo(validators: Validators(headers: ["ETag": "\"v2\""]), totalLength: 100, acceptsRanges: true)
        guard case .changed(.resourceChanged) = RangeAnswer.classify(.writeWhole(other, bodyLength: 100), validators: strong) else {
            Issue.record("other validators: changed")
            return
        }
        #expect(RangeAnswer.classify(.writeWhole(info, bodyLength: 100), validators: strong) == .rangesIgnored)
    }

    @Test func restartsSortIntoChangedAndInconsistent() {
        #expect(RangeAnswer.classify(.restart(.overlapMismatch), validators: strong) == .changed(.overlapMismatch))
        let changed = RestartReason.resourceChanged("x")
        #expect(RangeAnswer.classify(.restart(changed), validators: strong) == .changed(changed))
        let bad = RestartReason.invalidPartialResponse("y")
        #expect(RangeAnswer.classify(.restart(bad), validators: strong) == .inconsistent(bad))
    }

    @Test func statusesAndOddAnswers() {
        #expect(RangeAnswer.classify(.retry(status: 503, retryAfter: "5"), validators: strong) == .retry(status: 503, retryAfter: "5"))
        #expect(RangeAnswer.classify(.fail(status: 404), validators: strong) == .refused(status: 404))
        for odd in [ResponseDecision.redirect(location: "/x"), .alreadyComplete, .protocolViolation("z")] {
            guard case .unusable = RangeAnswer.classify(odd, validators: strong) else {
                Issue.record("\(odd) is unusable")
                continue
            }
        }
    }
}

@Suite struct HTTP2ErrorNameTests {
    @Test func everyCodeOfRFC9113HasItsNameAndOthersTheirNumber() {
        #expect(HTTP2ErrorName.of(0x0) == "NO_ERROR")
        #expect(HTTP2ErrorName.of(0x1) == "PROTOCOL_ERROR")
        #expect(HTTP2ErrorName.of(0x2) == "INTERNAL_ERROR")
        #expect(HTTP2ErrorName.of(0x7) == "REFUSED_STREAM")
        #expect(HTTP2ErrorName.of(0xb) == "ENHANCE_YOUR_CALM")
        #expect(HTTP2ErrorName.of(0xd) == "HTTP_1_1_REQUIRED")
        #expect(HTTP2ErrorName.of(0xe) == "error code 0xe")
        #expect(HTTP2ErrorName.of(0x1234) == "error code 0x1234")
    }
}
