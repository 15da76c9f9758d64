import Testing
@testable import HaulCore

/// Sharing a host's connections between downloads, without a network.
@Suite struct ConnectionShareTests {
    @Test func aLoneSegmentedDownloadUsesEveryConnection() {
        var share = ConnectionShare(limit: 8)
        let r1 = share.requestFirst(1)
        #expect(r1)
        share.setWants(1, 8)
        for _ in 0..<7 {
            let granted = share.requestExtra(1)
            #expect(granted)
        }
        let r2 = share.requestExtra(1)
        #expect(!r2, "never past the limit")
        #expect(share.held == 8)
        #expect(!share.shouldGiveBack(1))
    }

    @Test func aNewDownloadWaitsUntilASegmentGivesAConnectionBack() {
        var share = ConnectionShare(limit: 8)
        _ = share.requestFirst(1)
        share.setWants(1, 8)
        for _ in 0..<7 { _ = share.requestExtra(1) }
        let r3 = share.requestFirst(2)
        #expect(!r3, "the host is full")
        #expect(share.isWaiting(2))
        // One connection wanted by 2, the other seven are 1's.
        #expect(share.share(of: 2) == 1)
        #expect(share.share(of: 1) == 7)
        #expect(share.shouldGiveBack(1))
        let r4 = share.requestExtra(1)
        #expect(!r4, "no extra while someone waits")
        let r5 = share.releaseExtra(1)
        #expect(r5 == [2])
        #expect(share.connections(of: 2) == 1)
        #expect(share.connections(of: 1) == 7)
        #expect(!share.shouldGiveBack(1))
        #expect(share.held == 8)
    }

    @Test func twoSegmentedDownloadsSplitTheConnectionsEvenly() {
        var share = ConnectionShare(limit: 8)
        _ = share.requestFirst(1)
        share.setWants(1, 8)
        for _ in 0..<7 { _ = share.requestExtra(1) }
        _ = share.requestFirst(2)
        share.setWants(2, 8)
        #expect(share.share(of: 1) == 4 && share.share(of: 2) == 4)
        // 1 gives back until it holds its share; 2 gets its first, then takes extras up to its share.
        while share.shouldGiveBack(1) { share.releaseExtra(1) }
        #expect(share.connections(of: 1) == 4)
        #expect(share.connections(of: 2) == 1)
        while share.requestExtra(2) {}
        #expect(share.connections(of: 2) == 4)
        #expect(share.held == 8)
    }

    @Test func unevenSharesGoToThoseThatCameFirst() {
        var share = ConnectionShare(limit: 8)
        for id in 1...3 {
            let r6 = share.requestFirst(id)
            #expect(r6)
            share.setWants(id, 8)
        }
        #expect([1, 2, 3].map(share.share(of:)) == [3, 3, 2])
    }

    @Test func modestDownloadsGetWhatTheyWantAndTheRestGoesToTheGreedy() {
        var share = ConnectionShare(limit: 8)
        _ = share.requestFirst(1)
        share.setWants(1, 8)
        _ = share.requestFirst(2)
        _ = share.requestFirst(3)
        share.setWants(3, 2)
        #expect(share.share(of: 2) == 1)
        #expect(share.share(of: 3) == 2)
        #expect(share.share(of: 1) == 5)
    }

    @Test func moreDownloadsThanConnectionsWaitInOrderAndEachGetsOneWhenFree() {
        var share = ConnectionShare(limit: 2)
        let r7 = share.requestFirst(1)
        #expect(r7)
        let r8 = share.requestFirst(2)
        #expect(r8)
        let r9 = share.requestFirst(3)
        #expect(!r9)
        let r10 = share.requestFirst(4)
        #expect(!r10)
        #expect(share.share(of: 3) == 1, "everyone holding or waiting counts for at least one")
        let r11 = share.releaseAll(1)
        #expect(r11 == [3])
        let r12 = share.releaseAll(2)
        #expect(r12 == [4])
        let r13 = share.releaseAll(3)
        #expect(r13 == [])
        #expect(!share.isIdle)
        share.releaseAll(4)
        #expect(share.isIdle)
    }

    @Test func aWaiterThatGivesUpLeavesNoTrace() {
        var share = ConnectionShare(limit: 1)
        _ = share.requestFirst(1)
        _ = share.requestFirst(2)
        share.releaseAll(2)
        #expect(!share.isWaiting(2))
        let r14 = share.releaseAll(1)
        #expect(r14 == [])
        #expect(share.isIdle)
    }

    @Test func askingAgainForAFirstConnectionHeldIsGranted() {
        var share = ConnectionShare(limit: 1)
        let r15 = share.requestFirst(1)
        #expect(r15)
        let r16 = share.requestFirst(1)
        #expect(r16)
        #expect(share.held == 1)
    }

    @Test func aSingleDownloadNeverGivesBackItsOnlyConnection() {
        var share = ConnectionShare(limit: 1)
        _ = share.requestFirst(1)
        _ = share.requestFirst(2)
        #expect(!share.shouldGiveBack(1))
        let r17 = share.releaseExtra(1)
        #expect(r17 == [], "an extra that does not exist frees nothing")
        #expect(share.connections(of: 1) == 1)
    }
}
