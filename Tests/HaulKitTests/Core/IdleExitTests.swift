import Testing
@testable import HaulKit

@Suite struct IdleExitTests {
    let idle = IdleExit.Activity()

    @Test func exitsAfterTheWholeLimitIdle() {
        var rule = IdleExit(limit: .seconds(600))
        #expect(rule.observe(idle, at: .seconds(0)) == .stay(lookAgainIn: .seconds(15)))
        #expect(rule.observe(idle, at: .seconds(599)) == .stay(lookAgainIn: .seconds(1)))
        #expect(rule.observe(idle, at: .seconds(600)) == .exit)
    }

    @Test func anyActivityStartsTheWaitAgain() {
        for busy in [IdleExit.Activity(tasks: 1), IdleExit.Activity(connections: 1), IdleExit.Activity(requests: 1)] {
            var rule = IdleExit(limit: .seconds(10))
            _ = rule.observe(idle, at: .seconds(0))
            #expect(rule.observe(busy, at: .seconds(9)) == .stay(lookAgainIn: .milliseconds(2_500)))
            #expect(rule.idleSince == nil)
            #expect(rule.observe(idle, at: .seconds(11)) != .exit)
            #expect(rule.observe(idle, at: .seconds(20)) != .exit)
            #expect(rule.observe(idle, at: .seconds(21)) == .exit)
        }
    }

    @Test func aBusyDaemonNeverExits() {
        var rule = IdleExit(limit: .milliseconds(100))
        for step in 0..<1_000 {
            let activity = IdleExit.Activity(tasks: step % 3 == 0 ? 1 : 0, connections: step % 3 == 1 ? 2 : 0, requests: step % 3 == 2 ? 1 : 0)
            #expect(rule.observe(activity, at: .seconds(step)) != .exit)
        }
    }

    @Test func zeroMeansNever() {
        var rule = IdleExit(limit: .zero)
        #expect(!rule.isEnabled)
        #expect(rule.observe(idle, at: .seconds(0)) == .stay(lookAgainIn: nil))
        #expect(rule.observe(idle, at: .seconds(1_000_000)) == .stay(lookAgainIn: nil))
    }

    @Test func looksOftenEnoughForShortLimitsAndRarelyForLongOnes() {
        #expect(IdleExit(limit: .milliseconds(100)).interval == .milliseconds(50))
        #expect(IdleExit(limit: .seconds(2)).interval == .milliseconds(500))
        #expect(IdleExit(limit: .seconds(3_600)).interval == .seconds(15))
    }
}
