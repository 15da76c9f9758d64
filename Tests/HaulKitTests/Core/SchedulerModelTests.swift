import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct SchedulerModelTests {
    func entry(_ id: String, _ sequence: Int64, _ state: TaskState = .waiting, priority: Int = 0, host: String = "a") -> SchedulerEntry {
        SchedulerEntry(id: id, state: state, priority: priority, sequence: sequence, host: host)
    }

    @Test func fillsFreeSlotsInFIFOOrder() {
        let entries = (1...6).map { entry("t\($0)", Int64($0)) }
        #expect(Scheduler.tasksToStart(entries, maxConcurrent: 3, maxPerHost: 8) == ["t1", "t2", "t3"])
    }

    @Test func higherPriorityFirstThenFIFO() {
        let entries = [entry("low", 1), entry("high", 3, priority: 5), entry("mid", 2, priority: 1), entry("high2", 4, priority: 5)]
        #expect(Scheduler.tasksToStart(entries, maxConcurrent: 3, maxPerHost: 8) == ["high", "high2", "mid"])
    }

    @Test func runningTasksUseSlots() {
        let entries = [entry("r1", 1, .running), entry("r2", 2, .running), entry("w", 3)]
        #expect(Scheduler.tasksToStart(entries, maxConcurrent: 2, maxPerHost: 8) == [])
        #expect(Scheduler.tasksToStart(entries, maxConcurrent: 3, maxPerHost: 8) == ["w"])
    }

    @Test(arguments: [TaskState.finished, .failed, .cancelled, .paused])
    func everyEndStateReleasesItsSlot(_ end: TaskState) {
        let entries = [entry("done", 1, end), entry("w", 2)]
        #expect(Scheduler.tasksToStart(entries, maxConcurrent: 1, maxPerHost: 8) == ["w"])
    }

    @Test func perHostCapSkipsToOtherHosts() {
        let entries = [entry("a1", 1, .running, host: "a"), entry("a2", 2, host: "a"), entry("b1", 3, host: "b"), entry("a3", 4, priority: 9, host: "a")]
        #expect(Scheduler.tasksToStart(entries, maxConcurrent: 5, maxPerHost: 1) == ["b1"])
        #expect(Scheduler.tasksToStart(entries, maxConcurrent: 5, maxPerHost: 2) == ["a3", "b1"])
    }

    @Test func zeroOrNegativeCapsStartNothing() {
        #expect(Scheduler.tasksToStart([entry("w", 1)], maxConcurrent: 0, maxPerHost: 8) == [])
        #expect(Scheduler.tasksToStart([entry("w", 1)], maxConcurrent: -1, maxPerHost: 8) == [])
    }
}

@Suite struct TaskTransitionsTests {
    @Test func lifecycle() {
        #expect(TaskTransitions.apply(.start, to: .waiting) == .running)
        #expect(TaskTransitions.apply(.finish, to: .running) == .finished)
        #expect(TaskTransitions.apply(.fail, to: .running) == .failed)
        #expect(TaskTransitions.apply(.pause, to: .running) == .paused)
        #expect(TaskTransitions.apply(.pause, to: .waiting) == .paused)
        #expect(TaskTransitions.apply(.resume, to: .paused) == .waiting)
        #expect(TaskTransitions.apply(.resume, to: .failed) == .waiting)
        #expect(TaskTransitions.apply(.cancel, to: .paused) == .cancelled)
    }

    @Test func everyPairIsDefinedAndEndsAreFinal() {
        for state in TaskState.allCases {
            for command in [TaskCommand.start, .pause, .resume, .cancel, .finish, .fail] {
                let next = TaskTransitions.apply(command, to: state)
                if state == .finished { #expect(next == nil) }
                if let next { #expect(next != state) }
            }
        }
        #expect(TaskTransitions.apply(.start, to: .paused) == nil)
        #expect(TaskTransitions.apply(.finish, to: .waiting) == nil)
        #expect(TaskTransitions.apply(.resume, to: .running) == nil)
    }

    @Test func relaunchRestoresOnlyStableStates() {
        #expect(TaskTransitions.restored(.running, resumeRunning: true) == .waiting)
        #expect(TaskTransitions.restored(.running, resumeRunning: false) == .paused)
        for state in TaskState.allCases where state != .running {
            #expect(TaskTransitions.restored(state, resumeRunning: true) == state)
        }
    }
}
