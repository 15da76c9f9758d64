import Testing
@testable import HaulCore

/// What each event of the download machine answers, from the states that allow it.
@Suite struct DownloadMachineEventTests {
    typealias T = DownloadMachineTests
    typealias Machine = DownloadMachine
    typealias Held = DownloadMachine.Held

    // MARK: How an attempt begins

    @Test func aFreshDownloadProbesForRangesUnlessOneConnectionWasAskedFor() {
        let (_, probing) = T.attempting(.none, point: ResumePoint())
        #expect(probing == .request(Machine.Request(plan: .range(start: 0, overlap: 0, ifRange: nil), probing: true, http2: false)))
        let (_, whole) = T.attempting(.none, point: ResumePoint(), segments: 1)
        #expect(whole == .request(Machine.Request(plan: .whole, probing: false, http2: false)))
    }

    @Test func heldBytesAreAlwaysAskedForAgainAndCompared() {
        let point = ResumePoint(offset: 500_000, validators: T.strong, totalLength: 600_000)
        for held in [Held.own(unknownTotal: false), .adopted(path: "/d/f"), .foreign(url: "https://a/old")] {
            let (_, action) = T.attempting(held, point: point, segments: 1)
            let overlap = ResumePolicy.overlapLength
            #expect(action == .request(Machine.Request(
                plan: .range(start: 500_000 - overlap, overlap: overlap, ifRange: "\"v1\""), probing: false, http2: false)), "\(held)")
        }
        // Bytes that came in this run from an answer of unknown length: from exactly the next byte, unless they are
        // another URL's.
        let (_, next) = T.attempting(.own(unknownTotal: true), point: ResumePoint(offset: 500_000, validators: T.strong))
        #expect(next == .request(Machine.Request(
            plan: .range(start: 500_000, overlap: 0, ifRange: "\"v1\""), probing: false, http2: false,
            singleConnection: nil)))
    }

    @Test func restoredSegmentsAreComparedBeforeAnyContinues() {
        var plan = T.plan
        let first = plan.claim()
        _ = plan.advance(first?.id ?? 0, by: 300_000)
        plan.release(first?.id ?? 0)
        let point = ResumePoint(offset: plan.doneBytes, validators: T.strong, totalLength: plan.total)
        let (_, unverified) = T.attempting(.segmented(plan, .unverified(foreignURL: nil)), point: point)
        let checks = ResumePolicy.verificationPlans(for: plan.heldRuns, validators: T.strong)
            .map { Machine.HeldCheck(plan: $0.plan, end: $0.point) }
        #expect(!checks.isEmpty)
        #expect(unverified == .checkHeldRuns(plan, checks))
        let (_, verified) = T.attempting(.segmented(plan, .verified), point: point)
        #expect(verified == .runSegments(plan))
    }

    @Test func aHeldStretchWorthSplittingIsCheckedOncePerRun() {
        let point = ResumePoint(offset: 1 << 20, validators: T.strong, totalLength: 64 << 20)
        var (machine, action) = T.attempting(.own(unknownTotal: false), point: point)
        guard case .checkHeldPrefix(let check) = action else {
            Issue.record("expected a check of the held stretch, got \(action)")
            return
        }
        #expect(check.end == 1 << 20)
        // The server answers the whole file: one connection; the next attempt does not try again.
        let info = ResourceInfo(validators: T.strong, totalLength: 64 << 20, acceptsRanges: false)
        guard case .request = machine.heldPrefixAnswered(.writeWhole(info, bodyLength: 64 << 20), point: point) else {
            Issue.record("expected one connection")
            return
        }
        _ = machine.failed(T.drop, held: point.offset)
        guard case .request = machine.attemptStarts(point) else {
            Issue.record("the held stretch was checked twice in one run")
            return
        }
    }

    @Test func aFileGivenToContinueIsSplitOnlyWhenSeveralConnectionsWereAsked() {
        let point = ResumePoint(offset: 1 << 20)
        let (_, automatic) = T.attempting(.adopted(path: "/d/f"), point: point)
        guard case .request(let request) = automatic else {
            Issue.record("expected one request, got \(automatic)")
            return
        }
        #expect(!request.probing)
        let (_, asked) = T.attempting(.adopted(path: "/d/f"), point: point, segments: 4)
        guard case .checkHeldPrefix = asked else {
            Issue.record("expected a check of the file given to --continue, got \(asked)")
            return
        }
    }

    /// The check of a file given to --continue over several connections is answered that its bytes cannot be
    /// continued (it is longer than the server's file): the one request that follows meets that answer again and
    /// fails, so nothing is said of one connection first.
    @Test func aHeldStretchThatCannotBeContinuedIsNotAnnouncedAsOneConnection() {
        let point = ResumePoint(offset: 300_000)
        var (machine, action) = T.attempting(.adopted(path: "/d/f"), point: point, segments: 4)
        guard case .checkHeldPrefix = action else {
            Issue.record("expected a check of the file given to --continue, got \(action)")
            return
        }
        let answer = machine.heldPrefixAnswered(.restart(.heldPastEnd(length: 200_000, held: 300_000)), point: point)
        guard case .request(let request) = answer else {
            Issue.record("expected one request, got \(answer)")
            return
        }
        #expect(request.singleConnection == nil)
        #expect(request.plan == ResumePolicy.plan(for: point))
    }

    // MARK: Checks of bytes held

    @Test func comparedSegmentsContinueAndBecomeThisURLs() {
        let point = ResumePoint(offset: 1, validators: T.strong, totalLength: T.plan.total)
        var (own, _) = T.attempting(.segmented(T.plan, .unverified(foreignURL: nil)), point: point)
        #expect(own.heldRunsChecked(matching: true) == .runSegments(T.plan, owning: false))
        #expect(own.state == .attempting(.segmented(T.plan, .verified)))
        var (foreign, _) = T.attempting(.segmented(T.plan, .unverified(foreignURL: "https://a/old")), point: point)
        #expect(foreign.heldRunsChecked(matching: true) == .runSegments(T.plan, owning: true))
        #expect(foreign.held.foreignURL == nil)
        var (differs, _) = T.attempting(.segmented(T.plan, .unverified(foreignURL: nil)), point: point)
        #expect(differs.heldRunsChecked(matching: false) == .discardHeldBytes)
        var (foreignDiffers, _) = T.attempting(.segmented(T.plan, .unverified(foreignURL: "https://a/old")), point: point)
        #expect(foreignDiffers.heldRunsChecked(matching: false) == .foreignBytesDiffer(url: "https://a/old"))
    }

    @Test func aMatchingHeldStretchIsSplitAndOwned() {
        let point = ResumePoint(offset: 1 << 20, validators: T.strong, totalLength: 64 << 20)
        for held in [Held.own(unknownTotal: false), .adopted(path: "/d/f"), .foreign(url: "https://a/old")] {
            var (machine, _) = T.attempting(held, point: point, segments: 4)
            let info = ResourceInfo(validators: T.strong, totalLength: 64 << 20, acceptsRanges: true)
            let overlap = ResumePolicy.overlapLength
            let answer = machine.heldPrefixAnswered(.append(info, bodyLength: overlap, overlap: overlap), point: point)
            guard case .compare(let split) = answer else {
                Issue.record("expected a comparison, got \(answer)")
                continue
            }
            #expect(split.overlap == overlap && split.total == 64 << 20 && split.parts > 1)
            let plan = SegmentPlan(total: 64 << 20, parts: split.parts, minSegmentSize: 1 << 20, heldPrefix: 1 << 20)
            #expect(machine.heldPrefixCompared(matching: true, split, point: point)
                == .split(plan, adopting: held.adoptedPath, owning: held.foreignURL != nil))
            #expect(machine.held == .segmented(plan, .verified))
        }
    }

    // MARK: Answers

    @Test func aLargeFileLeavesHTTP2ForAConnectionOfItsOwn() {
        var machine = Machine(T.configuration(segments: nil, multiplexable: true), seed: 1)
        machine.prepared(.none, heldBytes: 0, replacesDestination: false)
        guard case .request(let request) = machine.attemptStarts(ResumePoint()) else { return }
        #expect(request.http2)
        #expect(machine.http2Answered(claimedLength: 100_000) == .keepStream)
        #expect(machine.http2Answered(claimedLength: nil) == .keepStream)
        #expect(machine.http2Answered(claimedLength: 8 << 20) == .resendOverHTTP1)
        #expect(!machine.usesHTTP2)
        _ = machine.failed(T.drop, held: 0)
        guard case .request(let next) = machine.attemptStarts(ResumePoint()) else { return }
        #expect(!next.http2)
    }

    @Test func aStreamTheServerWantsOverHTTP1IsSentAgainOverHTTP1AtOnceAndOnlyOnce() {
        var machine = Machine(T.configuration(segments: nil, multiplexable: true), seed: 1)
        machine.prepared(.none, heldBytes: 0, replacesDestination: false)
        guard case .request(let request) = machine.attemptStarts(ResumePoint()) else { return }
        #expect(request.http2)
        let required = RetryRules.Failure(reason: "h:443 asks for this request over HTTP/1.1 (HTTP_1_1_REQUIRED)", requiresHTTP1: true)
        // At once, without a retry of the budget, and every later request of the download is HTTP/1.1.
        #expect(machine.failed(required, held: 0) == .requestAgain)
        #expect(!machine.usesHTTP2)
        guard case .request(let next) = machine.attemptStarts(ResumePoint()) else { return }
        #expect(!next.http2)
        // Asked again over HTTP/1.1 (a server that cannot make up its mind): a failure like any other.
        guard case .retry(let retry) = machine.failed(required, held: 0) else {
            Issue.record("a second HTTP_1_1_REQUIRED must use the retry budget")
            return
        }
        #expect(retry.retry == 1)
        // Without HTTP/2 in the first place there is nothing to fall back from.
        var plain = Machine(T.configuration(segments: nil, multiplexable: false), seed: 1)
        plain.prepared(.none, heldBytes: 0, replacesDestination: false)
        _ = plain.attemptStarts(ResumePoint())
        guard case .retry = plain.failed(required, held: 0) else {
            Issue.record("over HTTP/1.1 it is retried as a failure")
            return
        }
    }

    @Test func theWholeFileReplacesWhateverWasHeld() {
        let info = ResourceInfo(validators: T.strong, totalLength: 1_000, acceptsRanges: false)
        for held in [Held.none, .own(unknownTotal: true)] {
            let point = held == .none ? ResumePoint() : ResumePoint(offset: 10)
            var (machine, action) = T.attempting(held, point: point, segments: 1)
            guard case .request(let request) = action else { continue }
            let step = machine.responseHead(.writeWhole(info, bodyLength: 1_000), to: request, point: point, fileOpen: held != .none)
            #expect(step == .writeWhole(info, announceSingleConnection: false, replacingHeldBytes: held != .none))
            #expect(machine.held == .own(unknownTotal: false))
        }
    }

    @Test func anotherToolsFileIsNeverRestartedOrReplaced() {
        let point = ResumePoint(offset: 100_000)
        var (machine, action) = T.attempting(.adopted(path: "/d/f"), point: point, segments: 1)
        guard case .request(let request) = action else { return }
        let whole = ResourceInfo(validators: Validators(), totalLength: 200_000, acceptsRanges: false)
        #expect(machine.responseHead(.writeWhole(whole, bodyLength: 200_000), to: request, point: point, fileOpen: true) == .adoptedFileUncheckable)
        let changed = machine.responseHead(.restart(.resourceChanged("x")), to: request, point: point, fileOpen: true)
        #expect(changed == .adoptedFileDiffers(RestartReason.resourceChanged("x").description))
        #expect(machine.held == .adopted(path: "/d/f"))
    }

    @Test func theOverlapDecidesWhoseTheBytesAre() {
        let point = ResumePoint(offset: 100_000)
        var (adopted, _) = T.attempting(.adopted(path: "/d/f"), point: point, segments: 1)
        #expect(adopted.overlapMatched() == .adopt(path: "/d/f"))
        #expect(adopted.held == .own(unknownTotal: false))
        var (foreign, _) = T.attempting(.foreign(url: "https://a/old"), point: point, segments: 1)
        #expect(foreign.overlapMatched() == .own)
        #expect(foreign.held == .own(unknownTotal: false))
        var (own, _) = T.attempting(.own(unknownTotal: false), point: point, segments: 1)
        #expect(own.overlapMatched() == .carryOn)
        var (adoptedDiffers, _) = T.attempting(.adopted(path: "/d/f"), point: point, segments: 1)
        #expect(adoptedDiffers.overlapDiffers() == .adoptedFileDiffers(path: "/d/f"))
        var (foreignDiffers, _) = T.attempting(.foreign(url: "https://a/old"), point: point, segments: 1)
        #expect(foreignDiffers.overlapDiffers() == .foreignBytesDiffer(url: "https://a/old"))
        var (ownDiffers, _) = T.attempting(.own(unknownTotal: false), point: point, segments: 1)
        #expect(ownDiffers.overlapDiffers() == .discardHeldBytes)
        ownDiffers.heldBytesDiscarded()
        #expect(ownDiffers.restartNeeded(.overlapMismatch) == .restart(.overlapMismatch))
        #expect(ownDiffers.state == .ready(.none))
    }

    @Test func anAnswerOfUnknownLengthIsContinuedFromTheNextByte() {
        var (machine, _) = T.attempting(.own(unknownTotal: false), point: ResumePoint(offset: 10), segments: 1)
        machine.appended(totalKnown: false)
        #expect(machine.held == .own(unknownTotal: true))
        machine.appended(totalKnown: true)
        #expect(machine.held == .own(unknownTotal: false))
    }

    // MARK: Segments

    @Test func segmentsArePlannedStoppedAndCompleted() {
        var (machine, _) = T.attempting(.none, point: ResumePoint())
        machine.segmentsPlanned(T.plan)
        #expect(machine.held == .segmented(T.plan, .verified))
        machine.segmentsStopped(T.plan, wrote: 1_000)
        #expect(machine.rules.fetched == 1_000)
        #expect(machine.endedEarly(held: 1_000) == .requestAgain)
        guard case .runSegments = machine.attemptStarts(ResumePoint(offset: 1_000, totalLength: T.plan.total)) else { return }
        machine.segmentsCompleted()
        #expect(machine.held == .own(unknownTotal: false))
        #expect(machine.completed() == Machine.Publish(adoptedPath: nil, replacesDestination: false))
        #expect(machine.state == .finishing(.own(unknownTotal: false)))
    }

    /// A server that sent the whole file, dropped before its first byte, then answers the probe with a range: the
    /// file is split like a fresh one.
    @Test func aProbeAfterAWholeFileThatBroughtNothingMaySplit() {
        var (machine, action) = T.attempting(.none, point: ResumePoint())
        guard case .request(let first) = action else { return }
        let whole = ResourceInfo(validators: T.strong, totalLength: 64 << 20, acceptsRanges: false)
        _ = machine.responseHead(.writeWhole(whole, bodyLength: 64 << 20), to: first, point: ResumePoint(), fileOpen: false)
        #expect(machine.held == .own(unknownTotal: false))
        _ = machine.failed(T.drop, held: 0)
        guard case .request(let probe) = machine.attemptStarts(ResumePoint()), probe.probing else {
            Issue.record("expected a range probe")
            return
        }
        let ranged = ResourceInfo(validators: T.strong, totalLength: 64 << 20, acceptsRanges: true)
        let step = machine.responseHead(.append(ranged, bodyLength: 64 << 20, overlap: 0), to: probe, point: ResumePoint(), fileOpen: true)
        guard case .append(_, _, .segmented?) = step else {
            Issue.record("expected the file to be split, got \(step)")
            return
        }
        #expect(Machine.accepts(.segmentsPlanned, in: machine.state))
        machine.segmentsPlanned(T.plan)
        #expect(machine.held == .segmented(T.plan, .verified))
    }

    // MARK: The end of an attempt

    @Test func aCompleteFileIsPublishedFromWhereItIs() {
        var machine = Machine(T.configuration(), seed: 1)
        machine.prepared(.adopted(path: "/d/f"), heldBytes: 100, replacesDestination: false)
        _ = machine.attemptStarts(ResumePoint(offset: 100))
        // A 416 saying the file given to --continue is complete: published as it is, where it is.
        #expect(machine.completed() == Machine.Publish(adoptedPath: "/d/f", replacesDestination: false))
        var replacing = Machine(T.configuration(), seed: 1)
        replacing.prepared(.none, heldBytes: 0, replacesDestination: true)
        _ = replacing.attemptStarts(ResumePoint())
        #expect(replacing.completed() == Machine.Publish(adoptedPath: nil, replacesDestination: true))
    }

    @Test func failuresWaitRefusalsAskAgainAndBudgetsEnd() {
        var (machine, _) = T.attempting(.none, point: ResumePoint())
        guard case .retry(let retry) = machine.failed(T.drop, held: 0) else { return }
        #expect(machine.state == .waitingToRetry(.none, retry: retry.retry))
        _ = machine.attemptStarts(ResumePoint())
        #expect(machine.refused(status: 404, atRedirectTarget: true) == .requestOriginalURL)
        #expect(machine.state == .ready(.none))
        _ = machine.attemptStarts(ResumePoint())
        #expect(machine.refused(status: 404, atRedirectTarget: true) == .giveUp(.refused(status: 404)))
        #expect(machine.state == .failed(.none))
        for event in Machine.Event.allCases { #expect(!Machine.accepts(event, in: machine.state), "\(event) after giving up") }
    }
}
