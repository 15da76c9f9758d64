import Testing
@testable import HaulCore

/// The download machine without a network or a disk: which event each state allows (every event from every
/// state), what each allowed event answers, and random runs through it.
@Suite struct DownloadMachineTests {
    typealias Machine = DownloadMachine
    typealias Held = DownloadMachine.Held

    static let retry = RetryPolicy(maxRetries: 3, baseDelay: .seconds(1), maxDelay: .seconds(8))
    static let plan = SegmentPlan(total: 8 << 20, parts: 4, minSegmentSize: 1 << 20)
    static let strong = Validators(headers: ["ETag": "\"v1\""])
    static let drop = RetryRules.Failure(reason: "connection reset by peer (h:80)")

    /// One of each kind of bytes held.
    static let helds: [Held] = [
        .none, .own(unknownTotal: false), .own(unknownTotal: true), .adopted(path: "/d/f"), .foreign(url: "https://a/old"),
        .segmented(plan, .verified), .segmented(plan, .unverified(foreignURL: nil)),
        .segmented(plan, .unverified(foreignURL: "https://a/old")),
    ]

    /// One of each state, with each kind of bytes held.
    static let states: [Machine.State] = [.preparing] + helds.flatMap { held in
        [.ready(held), .attempting(held), .waitingToRetry(held, retry: 1), .finishing(held), .failed(held)]
    }

    static func configuration(segments: Int? = nil, multiplexable: Bool = false) -> Machine.Configuration {
        Machine.Configuration(
            rules: RetryRules.Configuration(retry: retry), segments: segments, minSegmentSize: 1 << 20,
            maxConnectionsPerHost: 8, multiplexable: multiplexable)
    }

    /// A machine that found `held` (`bytes` of it) and started its first attempt.
    static func attempting(_ held: Held, point: ResumePoint, segments: Int? = nil) -> (Machine, Machine.AttemptAction) {
        var machine = Machine(configuration(segments: segments), seed: 7)
        machine.prepared(held, heldBytes: point.offset, replacesDestination: false)
        let action = machine.attemptStarts(point)
        return (machine, action)
    }

    // MARK: The transitions

    /// The specification the machine's table must match, written out state by state.
    static func allowed(_ event: Machine.Event, _ state: Machine.State) -> Bool {
        switch state {
        case .preparing: return event == .prepared
        case .ready, .waitingToRetry: return event == .attemptStarts
        case .finishing, .failed: return false
        case .attempting(let held):
            let any: Set<Machine.Event> = [.completed, .endedEarly, .refused, .failed]
            let extra: Set<Machine.Event>
            switch held {
            case .none:
                extra = [.http2Answered, .responseHead, .segmentsPlanned, .heldBytesDiscarded, .restartNeeded, .segmentsDisagreed]
            case .own:
                extra = [.heldPrefixAnswered, .heldPrefixCompared, .http2Answered, .responseHead, .overlapMatched,
                         .overlapDiffers, .appended, .bodyPart, .segmentsPlanned, .heldBytesDiscarded]
            case .adopted, .foreign:
                extra = [.heldPrefixAnswered, .heldPrefixCompared, .http2Answered, .responseHead, .overlapMatched, .overlapDiffers]
            case .segmented(_, .verified):
                extra = [.segmentsStopped, .segmentsCompleted, .heldBytesDiscarded]
            case .segmented(_, .unverified(foreignURL: nil)):
                extra = [.heldRunsChecked, .heldBytesDiscarded]
            case .segmented(_, .unverified):
                extra = [.heldRunsChecked]
            }
            return any.union(extra).contains(event)
        }
    }

    @Test func everyEventFromEveryStateIsAllowedOrNotAsSpecified() {
        for state in Self.states {
            for event in Machine.Event.allCases {
                #expect(Machine.accepts(event, in: state) == Self.allowed(event, state), "\(event) in \(state)")
            }
        }
    }

    @Test func bytesAreWrittenOnlyWhereTheyAreKnownToBeThisURLs() {
        for held in Self.helds where held.adoptedPath != nil || held.foreignURL != nil {
            #expect(!Machine.accepts(.bodyPart, in: .attempting(held)), "\(held)")
            #expect(!Machine.accepts(.appended, in: .attempting(held)), "\(held)")
            #expect(!Machine.accepts(.heldBytesDiscarded, in: .attempting(held)), "another's bytes are kept, never discarded: \(held)")
        }
        for held in Self.helds where held != .none {
            #expect(!Machine.accepts(.restartNeeded, in: .attempting(held)), "a restart keeps no byte: \(held)")
            #expect(!Machine.accepts(.segmentsDisagreed, in: .attempting(held)), "a restart keeps no byte: \(held)")
        }
    }

    @Test func aRefusedEventIsNamedWithoutPathsOrURLs() {
        let secret = "https://a.example/f?X-Amz-Signature=0123456789abcdef"
        for state in [Machine.State.attempting(.foreign(url: secret)), .ready(.adopted(path: "/home/alice/secret.iso")),
                      .failed(.segmented(Self.plan, .unverified(foreignURL: secret)))] {
            let name = Machine.name(of: state)
            #expect(!name.contains("Signature") && !name.contains("alice"), "\(name)")
        }
        #expect(Machine.name(of: .attempting(.foreign(url: secret))) == "attempting(foreign)")
    }

    // MARK: Random runs

    /// Random runs through the machine, each event drawn among those its state allows: no event the table allows
    /// traps, every action leaves the state it implies, bytes are only written where they are this URL's, and a run
    /// ends (finishing or failed) within its budgets.
    @Test func randomRunsKeepTheMachinesPromises() {
        let events = Machine.Event.allCases
        forAll(count: 400, seed: 28) { random in
            let held = Self.helds.randomElement(using: &random) ?? .none
            let point: ResumePoint
            if case .segmented(let plan, _) = held {
                point = ResumePoint(offset: plan.doneBytes, validators: Self.strong, totalLength: plan.total)
            } else {
                point = ResumePoint(offset: held == .none ? 0 : 1 << 20, validators: Self.strong, totalLength: 64 << 20)
            }
            var machine = Machine(Self.configuration(segments: [nil, 1, 4].randomElement(using: &random) ?? nil), seed: random.next())
            machine.prepared(held, heldBytes: point.offset, replacesDestination: false)
            var steps = 0
            while steps < 200 {
                steps += 1
                let allowed = events.filter { Machine.accepts($0, in: machine.state) }
                guard let event = allowed.randomElement(using: &random) else { break }
                let before = machine.held
                Self.apply(event, to: &machine, point: point, random: &random)
                Self.expectPromises(after: event, from: before, machine)
            }
            switch machine.state {
            case .finishing, .failed: break
            default: Issue.record("a run did not end within 200 events: \(machine.state)")
            }
        }
    }

    static func apply(_ event: Machine.Event, to machine: inout Machine, point: ResumePoint, random: inout SplitMix) {
        let info = ResourceInfo(validators: strong, totalLength: 64 << 20, acceptsRanges: true)
        let overlap = ResumePolicy.overlapLength
        let split = Machine.HeldPrefixSplit(overlap: overlap, info: info, total: 64 << 20, parts: 4)
        let request = Machine.Request(plan: .whole, probing: false, http2: false)
        switch event {
        case .prepared: machine.prepared(.none, heldBytes: 0, replacesDestination: false)
        case .attemptStarts: _ = machine.attemptStarts(point)
        case .heldRunsChecked: _ = machine.heldRunsChecked(matching: Bool.random(using: &random))
        case .heldPrefixAnswered: _ = machine.heldPrefixAnswered(.append(info, bodyLength: overlap, overlap: overlap), point: point)
        case .heldPrefixCompared: _ = machine.heldPrefixCompared(matching: Bool.random(using: &random), split, point: point)
        case .http2Answered: _ = machine.http2Answered(claimedLength: Int64.random(in: 0...(16 << 20), using: &random))
        case .responseHead:
            let decisions: [ResponseDecision] = [
                .writeWhole(info, bodyLength: 64 << 20), .append(info, bodyLength: 1_000, overlap: 0), .alreadyComplete,
                .restart(.overlapMismatch), .retry(status: 503, retryAfter: nil), .fail(status: 404),
            ]
            _ = machine.responseHead(decisions.randomElement(using: &random) ?? .alreadyComplete, to: request, point: point, fileOpen: true)
        case .overlapMatched: _ = machine.overlapMatched()
        case .overlapDiffers: _ = machine.overlapDiffers()
        case .appended: machine.appended(totalKnown: Bool.random(using: &random))
        case .bodyPart: _ = machine.bodyPart(count: 1_000, held: point.offset + 1_000, elapsed: .seconds(1))
        case .segmentsPlanned: machine.segmentsPlanned(plan)
        case .segmentsStopped: machine.segmentsStopped(plan, wrote: Int64.random(in: 0...1_000, using: &random))
        case .segmentsCompleted: machine.segmentsCompleted()
        case .heldBytesDiscarded: machine.heldBytesDiscarded()
        case .completed: _ = machine.completed()
        case .endedEarly: _ = machine.endedEarly(held: point.offset + Int64.random(in: 0...10, using: &random))
        case .restartNeeded: _ = machine.restartNeeded(.overlapMismatch)
        case .segmentsDisagreed: _ = machine.segmentsDisagreed(.resourceChanged("validators differ"))
        case .refused: _ = machine.refused(status: 404, atRedirectTarget: Bool.random(using: &random))
        case .failed: _ = machine.failed(drop, held: point.offset)
        }
    }

    /// The events that never change where the bytes held came from.
    static let keepingHeld: Set<Machine.Event> = [
        .attemptStarts, .http2Answered, .heldPrefixAnswered, .bodyPart, .completed, .endedEarly, .restartNeeded,
        .segmentsDisagreed, .refused, .failed, .overlapDiffers,
    ]

    static func expectPromises(after event: Machine.Event, from before: Held, _ machine: Machine) {
        if keepingHeld.contains(event) { #expect(machine.held == before, "\(event) changed \(before) to \(machine.held)") }
        // Bytes another tool or URL wrote stay theirs until they match: never discarded, never replaced.
        if before.adoptedPath != nil || before.foreignURL != nil {
            #expect(machine.held != .none, "\(event) discarded \(before)")
        }
        switch event {
        case .completed:
            #expect(machine.state == .finishing(before))
        case .endedEarly, .restartNeeded, .segmentsDisagreed, .refused, .failed:
            switch machine.state {
            case .ready, .failed: break
            case .waitingToRetry(_, let retry): #expect(retry >= 1 && retry <= 3)
            default: Issue.record("\(event) left \(machine.state)")
            }
            #expect(machine.rules.restarts <= 4)
        case .overlapMatched, .appended:
            #expect(machine.held.adoptedPath == nil && machine.held.foreignURL == nil)
        case .heldBytesDiscarded:
            #expect(machine.held == .none)
        default:
            break
        }
    }
}

/// An event the state does not allow is a bug in the shell, and a debug build stops at once.
@Suite struct DownloadMachineImpossibleEventTests {
    /// The same process, with the events in an order the machine allows, ends normally: what stops the others is
    /// the machine's check.
    @Test func allowedEventsDoNotTrap() async {
        await #expect(processExitsWith: .success) {
            var machine = DownloadMachine(DownloadMachine.Configuration())
            machine.prepared(.adopted(path: "/d/f"), heldBytes: 10, replacesDestination: false)
            _ = machine.attemptStarts(ResumePoint(offset: 10))
            _ = machine.overlapMatched()
            _ = machine.bodyPart(count: 1, held: 11, elapsed: .zero)
            _ = machine.completed()
        }
    }

    @Test func writingIntoAnotherToolsFileBeforeItMatchedTraps() async {
        await #expect(processExitsWith: .failure) {
            var machine = DownloadMachine(DownloadMachine.Configuration())
            machine.prepared(.adopted(path: "/d/f"), heldBytes: 10, replacesDestination: false)
            _ = machine.attemptStarts(ResumePoint(offset: 10))
            _ = machine.bodyPart(count: 1, held: 11, elapsed: .zero)
        }
    }

    @Test func aRestartThatKeepsBytesTraps() async {
        await #expect(processExitsWith: .failure) {
            var machine = DownloadMachine(DownloadMachine.Configuration())
            machine.prepared(.own(unknownTotal: false), heldBytes: 10, replacesDestination: false)
            _ = machine.attemptStarts(ResumePoint(offset: 10))
            _ = machine.restartNeeded(.overlapMismatch)
        }
    }

    @Test func anAttemptAfterTheEndTraps() async {
        await #expect(processExitsWith: .failure) {
            var machine = DownloadMachine(DownloadMachine.Configuration())
            machine.prepared(.none, heldBytes: 0, replacesDestination: false)
            _ = machine.attemptStarts(ResumePoint())
            _ = machine.completed()
            _ = machine.attemptStarts(ResumePoint())
        }
    }

    @Test func twoAttemptsAtOnceTrap() async {
        await #expect(processExitsWith: .failure) {
            var machine = DownloadMachine(DownloadMachine.Configuration())
            machine.prepared(.none, heldBytes: 0, replacesDestination: false)
            _ = machine.attemptStarts(ResumePoint())
            _ = machine.attemptStarts(ResumePoint())
        }
    }
}
