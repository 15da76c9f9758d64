import Testing
@testable import HaulKit

@Suite struct HomeCleanupTests {
    typealias Record = HomeCleanup.Record
    typealias Lock = HomeCleanup.Lock

    @Test func finishedAndStaleRecordsGoInterruptedOnesStay() {
        let plan = HomeCleanup.plan(HomeCleanup.Inventory(records: [
            Record(key: "done", status: .finished, destination: "/d/done.iso"),
            Record(key: "gone", status: .unfinished(heldBytes: false), destination: "/d/gone.iso"),
            Record(key: "paused", status: .unfinished(heldBytes: true), destination: "/d/paused.iso"),
            Record(key: "broken", status: .unreadable),
        ]))
        #expect(plan.removals == [
            .finishedRecord(key: "done", destination: "/d/done.iso"), .staleRecord(key: "gone", destination: "/d/gone.iso"),
        ])
        #expect(plan.keptRecords == 2)
    }

    @Test func nothingOfARunningDownloadIsTouched() {
        // A held lock: whatever its record says, a process is using it right now.
        let plan = HomeCleanup.plan(HomeCleanup.Inventory(
            records: [
                Record(key: "live", status: .finished), Record(key: "starting", status: .unfinished(heldBytes: false)),
            ],
            locks: [Lock(key: "live", held: true), Lock(key: "starting", held: true), Lock(key: "dir", held: true)],
            temporaries: ["live"]))
        #expect(plan.removals.isEmpty)
        #expect(plan.keptRecords == 2)
    }

    @Test func aLockGoesWithItsRecordOrWhenItHasNone() {
        let plan = HomeCleanup.plan(HomeCleanup.Inventory(
            records: [Record(key: "done", status: .finished), Record(key: "paused", status: .unfinished(heldBytes: true))],
            locks: [Lock(key: "done", held: false), Lock(key: "paused", held: false), Lock(key: "orphan", held: false)],
            temporaries: ["orphan", "done"]))
        #expect(plan.removals == [
            .finishedRecord(key: "done", destination: nil), .temporary(key: "done"), .temporary(key: "orphan"),
            .lock(key: "done"), .lock(key: "orphan"),
        ])
    }

    @Test func aDirectoryDownloadsNameChoiceStaysWhileItsRecordDoes() {
        // `--dir` downloads remember the name they chose in a lock of their own: needed to resume, not after.
        let plan = HomeCleanup.plan(HomeCleanup.Inventory(
            records: [Record(key: "partial", status: .unfinished(heldBytes: true)), Record(key: "done", status: .finished)],
            locks: [
                Lock(key: "choice1", held: false, chosenRecordKey: "partial"),
                Lock(key: "choice2", held: false, chosenRecordKey: "done"),
                Lock(key: "choice3", held: false, chosenRecordKey: "running"),
                Lock(key: "running", held: true),
            ]))
        #expect(plan.removals == [.finishedRecord(key: "done", destination: nil), .lock(key: "choice2")])
    }

    @Test func onlyFinishedBatchSessionsThatNobodyHasOpenGo() {
        let plan = HomeCleanup.plan(HomeCleanup.Inventory(sessions: [
            .init(name: "get-done", inUse: false, states: [.finished, .finished, .cancelled]),
            .init(name: "get-empty", inUse: false, states: []),
            .init(name: "get-failed", inUse: false, states: [.finished, .failed]),
            .init(name: "get-paused", inUse: false, states: [.paused]),
            .init(name: "get-open", inUse: true, states: nil),
            .init(name: "get-unreadable", inUse: false, states: nil),
        ]))
        #expect(plan.removals == [.session(name: "get-done"), .session(name: "get-empty")])
        #expect(plan.keptSessions == 4)
    }

    @Test func theOrderIsStableWhateverTheListing() {
        let records = (0..<20).map { Record(key: "k\($0)", status: $0 % 2 == 0 ? .finished : .unfinished(heldBytes: $0 % 3 == 0)) }
        let locks = (0..<20).map { Lock(key: "k\($0)", held: $0 % 5 == 0) }
        let one = HomeCleanup.plan(HomeCleanup.Inventory(records: records, locks: locks))
        let other = HomeCleanup.plan(HomeCleanup.Inventory(records: records.reversed(), locks: locks.reversed()))
        #expect(one == other)
        // Every removal is of an unheld key, and no kept record loses its lock.
        for removal in one.removals {
            switch removal {
            case .finishedRecord(let key, _), .staleRecord(let key, _), .lock(let key), .temporary(let key):
                #expect(!locks.contains { $0.key == key && $0.held })
                if case .lock = removal { #expect(records.first { $0.key == key }?.status != .unfinished(heldBytes: true)) }
            case .session:
                Issue.record("no session was listed")
            }
        }
    }
}
