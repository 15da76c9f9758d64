import Testing
@testable import HaulCore

/// The download lifecycle without a network: every event in every state that matters, and the actions it answers.
@Suite struct DownloadLifecycleTests {
    typealias Machine = DownloadLifecycle
    let retry = RetryPolicy(maxRetries: 3, baseDelay: .seconds(1), maxDelay: .seconds(8))
    let drop = Machine.Failure(reason: "connection reset by peer (h:80)")
    let refused = Machine.Failure(reason: "connection refused (h:80)", beforeConnecting: true)

    func machine(failFast: Bool = false, held: Int64 = 0) -> Machine {
        Machine(Machine.Configuration(
            retry: retry, failFastBeforeData: failFast, bookkeepingBytes: 100,
            progressInterval: .milliseconds(250), checkpointBytes: 1_000, checkpointInterval: .seconds(1)), held: held, seed: 7)
    }

    @Test func aCompleteBodyFinishes() {
        var m = machine()
        #expect(m.handle(.requestSent(held: 0)) == .none)
        #expect(m.state == .transferring)
        #expect(m.handle(.bodyPart(count: 50, held: 50, elapsed: .zero)) == .none)
        #expect(m.handle(.bodyEnd(complete: true, held: 50)) == .finish)
        #expect(m.state == .finished)
        #expect(m.fetched == 50)
    }

    @Test func nothingMovesAFinishedOrFailedMachineBack() {
        var m = machine()
        _ = m.handle(.bodyEnd(complete: true, held: 0))
        _ = m.handle(.requestSent(held: 0))
        #expect(m.state == .finished)
        var n = machine()
        for _ in 0...3 { _ = n.handle(.failed(drop, held: 0)) }
        #expect(n.state == .failed)
        _ = n.handle(.requestSent(held: 0))
        #expect(n.state == .failed)
    }

    @Test func retriesBackOffExponentiallyAndGiveUpAfterTheBudget() {
        var m = machine()
        var delays: [Duration] = []
        for expected in 1...3 {
            _ = m.handle(.requestSent(held: 0))
            guard case .retry(let delay, let retry, let of, let reason) = m.handle(.failed(drop, held: 0)) else {
                Issue.record("expected a retry")
                return
            }
            #expect(retry == expected)
            #expect(of == 3)
            #expect(reason == drop.reason)
            #expect(m.state == .waitingToRetry(retry: expected))
            delays.append(delay)
        }
        // 50–100% of 1 s, 2 s, 4 s.
        #expect(delays[0] >= .milliseconds(500) && delays[0] <= .seconds(1))
        #expect(delays[1] >= .seconds(1) && delays[1] <= .seconds(2))
        #expect(delays[2] >= .seconds(2) && delays[2] <= .seconds(4))
        #expect(m.handle(.failed(drop, held: 0)) == .giveUp(.retriesExhausted(drop, retries: 3, heldBytes: false)))
        #expect(m.state == .failed)
    }

    @Test func retryAfterIsHonoured() {
        var m = machine()
        let busy = Machine.Failure(reason: "503", kind: .httpStatus, retryAfter: .seconds(30))
        guard case .retry(let delay, _, _, _) = m.handle(.failed(busy, held: 0)) else {
            Issue.record("expected a retry")
            return
        }
        #expect(delay == .seconds(30))
    }

    @Test func bytesPastTheBestPointResetTheBudget() {
        var m = machine()
        for held in stride(from: Int64(100), through: 1_000, by: 100) {
            _ = m.handle(.requestSent(held: held - 100))
            _ = m.handle(.bodyPart(count: 100, held: held, elapsed: .zero))
            guard case .retry(_, let retry, _, _) = m.handle(.failed(drop, held: held)) else {
                Issue.record("a drop after progress is retried")
                return
            }
            #expect(retry == 1)
        }
        #expect(m.bestHeld == 1_000)
    }

    @Test func aHeldGiveUpSaysARerunResumes() {
        var m = machine(held: 500)
        for _ in 0..<3 { _ = m.handle(.failed(drop, held: 500)) }
        #expect(m.handle(.failed(drop, held: 500)) == .giveUp(.retriesExhausted(drop, retries: 3, heldBytes: true)))
    }

    @Test func aRefusedConnectionBeforeAnyByteFailsFast() {
        var m = machine(failFast: true)
        for expected in 1...2 {
            guard case .retry(let delay, let retry, let of, _) = m.handle(.failed(refused, held: 0)) else {
                Issue.record("expected a quick retry")
                return
            }
            #expect(retry == expected && of == 2)
            #expect(delay <= .milliseconds(250))
        }
        #expect(m.handle(.failed(refused, held: 0)) == .giveUp(.retriesExhausted(refused, retries: 2, heldBytes: false)))
    }

    @Test func aRefusedConnectionAfterBytesKeepsTheWholeBackoff() {
        var m = machine(failFast: true)
        _ = m.handle(.bodyPart(count: 10, held: 10, elapsed: .zero))
        for _ in 1...3 {
            guard case .retry(_, _, let of, _) = m.handle(.failed(refused, held: 10)) else {
                Issue.record("expected a retry")
                return
            }
            #expect(of == 3)
        }
        // Without fail-fast (the daemon) a refused connection never gets the short budget.
        var daemon = machine(failFast: false)
        guard case .retry(_, _, let of, _) = daemon.handle(.failed(refused, held: 0)) else {
            Issue.record("expected a retry")
            return
        }
        #expect(of == 3)
    }

    @Test func anEarlyEndWithoutBytesIsAFailure() {
        var m = machine()
        _ = m.handle(.requestSent(held: 0))
        guard case .retry(_, 1, 3, let reason) = m.handle(.bodyEnd(complete: false, held: 0)) else {
            Issue.record("expected a retry")
            return
        }
        #expect(reason == "the server ended the response early")
    }

    @Test func anEarlyEndWithNewBytesAsksAgainAtOnce() {
        var m = machine()
        _ = m.handle(.requestSent(held: 0))
        _ = m.handle(.bodyPart(count: 40, held: 40, elapsed: .zero))
        #expect(m.handle(.bodyEnd(complete: false, held: 40)) == .requestAgain)
        #expect(m.state == .ready)
        #expect(m.failures == 0)
    }

    @Test func responsesEndingAtTheSamePlaceUseTheBudget() {
        // Bytes arrive each time, but never past the best point (a server that restarts from 0 and drops at 40).
        var m = machine(held: 40)
        for expected in 1...3 {
            _ = m.handle(.requestSent(held: 0))
            _ = m.handle(.bodyPart(count: 40, held: 40, elapsed: .zero))
            #expect(m.handle(.bodyEnd(complete: false, held: 40)) == .requestAgain)
            #expect(m.failures == expected)
        }
        _ = m.handle(.requestSent(held: 0))
        _ = m.handle(.bodyPart(count: 40, held: 40, elapsed: .zero))
        #expect(m.handle(.bodyEnd(complete: false, held: 40)) == .giveUp(.endsAtSamePlace(retries: 3)))
    }

    @Test func segmentsWrittenCountAsFetchedAndAreJudgedAtTheEnd() {
        var m = machine()
        _ = m.handle(.requestSent(held: 0))
        #expect(m.handle(.segmentsWrote(count: 300)) == .none)
        #expect(m.fetched == 300)
        #expect(m.handle(.bodyEnd(complete: false, held: 300)) == .requestAgain)
        #expect(m.bestHeld == 300)
    }

    @Test func restartsAreLimitedAndAnInconsistentServerIsNotProbedAgain() {
        var m = machine()
        #expect(m.mayProbeRanges)
        #expect(m.handle(.restartNeeded(.overlapMismatch)) == .restart(.overlapMismatch))
        #expect(m.mayProbeRanges)
        let bad = RestartReason.invalidPartialResponse("wrong Content-Range")
        #expect(m.handle(.restartNeeded(bad)) == .restart(bad))
        #expect(!m.mayProbeRanges)
        let changed = RestartReason.resourceChanged("new ETag")
        #expect(m.handle(.restartNeeded(changed)) == .restart(changed))
        #expect(m.handle(.restartNeeded(changed)) == .giveUp(.tooManyRestarts(4, changed)))
        #expect(m.state == .failed)
    }

    @Test func aRedirectTargetThatRefusesIsRetriedOnceFromTheOriginalURL() {
        for status in [401, 403, 404, 410] {
            var m = machine()
            #expect(m.handle(.refused(status: status, atRedirectTarget: true)) == .requestOriginalURL)
            #expect(m.handle(.refused(status: status, atRedirectTarget: true)) == .giveUp(.refused(status: status)))
        }
        var direct = machine()
        #expect(direct.handle(.refused(status: 404, atRedirectTarget: false)) == .giveUp(.refused(status: 404)))
        var other = machine()
        #expect(other.handle(.refused(status: 400, atRedirectTarget: true)) == .giveUp(.refused(status: 400)))
    }

    @Test func bookkeepingLooksEveryFewBytesAndCheckpointsByBytesOrTime() {
        var m = machine()
        _ = m.handle(.requestSent(held: 0))
        // Below the bookkeeping step: nothing.
        #expect(m.handle(.bodyPart(count: 60, held: 60, elapsed: .milliseconds(10))) == .none)
        // 120 bytes since the last look: progress.
        #expect(m.handle(.bodyPart(count: 60, held: 120, elapsed: .milliseconds(20))) == .reportProgress)
        // Too soon after that progress: nothing.
        #expect(m.handle(.bodyPart(count: 100, held: 220, elapsed: .milliseconds(100))) == .none)
        #expect(m.handle(.bodyPart(count: 100, held: 320, elapsed: .milliseconds(300))) == .reportProgress)
        // 1,000 bytes since the last checkpoint: a checkpoint (which reports progress too).
        #expect(m.handle(.bodyPart(count: 700, held: 1_020, elapsed: .milliseconds(400))) == .checkpoint)
        // A second later with few bytes: a checkpoint by time.
        #expect(m.handle(.bodyPart(count: 100, held: 1_120, elapsed: .milliseconds(1_500))) == .checkpoint)
    }

    @Test func aSegmentConnectionDoesNoBookkeepingAndNeverFailsFast() {
        var m = Machine(.segmentConnection(retry: retry))
        #expect(m.handle(.bodyPart(count: 1 << 40, held: 1 << 40, elapsed: .seconds(100))) == .none)
        var fresh = Machine(.segmentConnection(retry: retry))
        guard case .retry(_, _, let of, _) = fresh.handle(.failed(refused, held: 0)) else {
            Issue.record("expected a retry")
            return
        }
        #expect(of == 3)
    }

    @Test func theSameSeedGivesTheSameBackoff() {
        var a = machine(), b = machine()
        for _ in 0..<3 { #expect(a.handle(.failed(drop, held: 0)) == b.handle(.failed(drop, held: 0))) }
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
