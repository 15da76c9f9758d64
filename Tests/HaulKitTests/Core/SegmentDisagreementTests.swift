import Testing
@testable import HaulCore

/// When the answers to one download's segments describe different versions of the file (a load balancer whose
/// backends stamp the same file with different ETags), the download starts over on one connection, said once, and
/// never splits again in that run.
@Suite struct SegmentDisagreementTests {
    typealias T = DownloadMachineTests
    typealias Machine = DownloadMachine

    static let changed = RestartReason.resourceChanged("validators differ")
    static let words = "the server's segments disagree about the file's version"

    @Test func theRulesStopSplittingAndCountARestart() {
        var rules = RetryRules(RetryRules.Configuration(maxRestarts: 3))
        #expect(rules.mayProbeRanges && rules.oneConnection == nil)
        #expect(rules.segmentsDisagreed(Self.changed) == .restart(Self.changed))
        #expect(!rules.mayProbeRanges)
        #expect(rules.oneConnection == .segmentsDisagree)
        #expect(rules.restarts == 1)
        // A later inconsistent answer keeps the first cause; restarts stay bounded.
        let bad = RestartReason.invalidPartialResponse("wrong Content-Range")
        #expect(rules.restartNeeded(bad) == .restart(bad))
        #expect(rules.oneConnection == .segmentsDisagree)
        #expect(rules.restartNeeded(Self.changed) == .restart(Self.changed))
        #expect(rules.segmentsDisagreed(Self.changed) == .giveUp(.tooManyRestarts(4, Self.changed)))
    }

    @Test func theNextAttemptIsOnePlainRequestThatSaysWhy() {
        for segments in [nil, 4] as [Int?] {
            var (machine, action) = T.attempting(.segmented(T.plan, .verified), point: ResumePoint(
                offset: 0, validators: T.strong, totalLength: T.plan.total), segments: segments)
            #expect(action == .runSegments(T.plan))
            machine.heldBytesDiscarded()
            #expect(machine.segmentsDisagreed(Self.changed) == .restart(Self.changed))
            #expect(machine.state == .ready(.none))
            let next = machine.attemptStarts(ResumePoint())
            #expect(next == .request(Machine.Request(plan: .whole, probing: false, http2: false, singleConnection: Self.words)),
                    "segments \(String(describing: segments))")
            // A 200 on that one connection is written whole, from byte 0, never split.
            let info = ResourceInfo(validators: T.strong, totalLength: T.plan.total, acceptsRanges: true)
            let request = Machine.Request(plan: .whole, probing: false, http2: false)
            let step = machine.responseHead(.writeWhole(info, bodyLength: T.plan.total), to: request, point: ResumePoint(), fileOpen: false)
            guard case .writeWhole = step else {
                Issue.record("expected the whole file over one connection, got \(step)")
                continue
            }
        }
    }

    @Test func aHeldStretchIsNotSplitAgainInThatRun() {
        var (machine, _) = T.attempting(.segmented(T.plan, .verified), point: ResumePoint(
            offset: 0, validators: T.strong, totalLength: T.plan.total))
        machine.heldBytesDiscarded()
        _ = machine.segmentsDisagreed(Self.changed)
        let start = machine.attemptStarts(ResumePoint())
        guard case .request(let first) = start else {
            Issue.record("expected one request, got \(start)")
            return
        }
        #expect(first.singleConnection == Self.words)
        // That connection dropped after 3 MiB of a 64 MiB file: the rest is asked for over the same one connection,
        // with If-Range tied to the bytes held, and the reason is not said twice.
        _ = machine.responseHead(.writeWhole(ResourceInfo(validators: T.strong, totalLength: 64 << 20, acceptsRanges: true),
                                             bodyLength: 64 << 20), to: first, point: ResumePoint(), fileOpen: false)
        _ = machine.failed(T.drop, held: 3 << 20)
        let held = ResumePoint(offset: 3 << 20, validators: T.strong, totalLength: 64 << 20)
        let again = machine.attemptStarts(held)
        let overlap = ResumePolicy.overlapLength
        #expect(again == .request(Machine.Request(
            plan: .range(start: (3 << 20) - overlap, overlap: overlap, ifRange: "\"v1\""), probing: false, http2: false)))
    }
}
