import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

/// The pure decisions of a fleet: which tasks a node claims, until when a lease holder may write, and which writes
/// a lease still fences.
@Suite struct FleetDecisionTests {
    func candidate(_ id: String, _ sequence: Int64, priority: Int = 0, host: String = "a") -> FleetClaim.Candidate {
        FleetClaim.Candidate(id: id, priority: priority, sequence: sequence, host: host)
    }

    @Test func claimsByPriorityThenAgeWithinTheSlots() {
        let candidates = [candidate("t3", 3), candidate("t1", 1), candidate("hi", 9, priority: 5), candidate("t2", 2)]
        #expect(FleetClaim.choose(candidates, .init(slots: 3)).map(\.id) == ["hi", "t1", "t2"])
        #expect(FleetClaim.choose(candidates, .init(slots: 0)).isEmpty)
        #expect(FleetClaim.choose(candidates + candidates, .init(slots: 9)).count == 4, "a candidate listed twice is claimed once")
    }

    @Test func aHostFullOnTheNodeOrInTheFleetDoesNotHoldBackAnother() {
        let candidates = (1...5).map { candidate("a\($0)", Int64($0)) } + [candidate("b", 6, host: "b")]
        let node = FleetClaim.Limits(slots: 3, nodeRunningPerHost: ["a": 2], nodeMaxPerHost: 2)
        #expect(FleetClaim.choose(candidates, node).map(\.id) == ["b"])
        #expect(FleetClaim.fullHosts(node) == ["a"])
        // Fleet-wide: 3 connections to "a" on every node together, 2 of them running elsewhere.
        let fleet = FleetClaim.Limits(slots: 4, fleetRunningPerHost: ["a": 2], fleetMaxPerHost: 3)
        #expect(FleetClaim.choose(candidates, fleet).map(\.id) == ["a1", "b"])
        #expect(FleetClaim.fullHosts(fleet).isEmpty)
        let full = FleetClaim.Limits(slots: 4, fleetRunningPerHost: ["a": 3, "b": 1], fleetMaxPerHost: 3)
        #expect(FleetClaim.fullHosts(full) == ["a"])
        #expect(FleetClaim.choose(candidates, full).map(\.id) == ["b"])
        // Without a fleet-wide limit the fleet's counts do not matter.
        #expect(FleetClaim.fullHosts(.init(slots: 1, fleetRunningPerHost: ["a": 99])).isEmpty)
    }

    @Test func aClaimLooksForExpiredLeasesWhenIdleOrNowAndThen() {
        let interval = Duration.seconds(5)
        #expect(FleetClaim.looksForExpired(sinceLastLook: nil, waitingFound: 8, slots: 8, interval: interval), "the first claim looks")
        #expect(FleetClaim.looksForExpired(sinceLastLook: .seconds(1), waitingFound: 3, slots: 8, interval: interval), "free slots: look")
        #expect(!FleetClaim.looksForExpired(sinceLastLook: .seconds(1), waitingFound: 8, slots: 8, interval: interval), "busy: not yet")
        #expect(FleetClaim.looksForExpired(sinceLastLook: .seconds(5), waitingFound: 8, slots: 8, interval: interval), "busy: now and then")
    }

    @Test func aDestinationFileIsWrittenByOneDownloadAtATime() {
        func withFile(_ id: String, _ sequence: Int64, _ file: String?) -> FleetClaim.Candidate {
            FleetClaim.Candidate(id: id, priority: 0, sequence: sequence, host: "h\(sequence)", destinationFile: file)
        }
        let candidates = [withFile("x1", 1, "/d/x"), withFile("x2", 2, "/d/x"), withFile("y", 3, "/d/y"), withFile("dir", 4, nil), withFile("dir2", 5, nil)]
        #expect(FleetClaim.choose(candidates, .init(slots: 9)).map(\.id) == ["x1", "y", "dir", "dir2"], "the second of a file waits")
        var busy = FleetClaim.Limits(slots: 9)
        busy.busyFiles = ["/d/x"]
        #expect(FleetClaim.choose(candidates, busy).map(\.id) == ["y", "dir", "dir2"], "a file another node writes waits")
        // Whatever the candidates: no two chosen share a file, none writes a busy one, and one skipped for its file
        // only is skipped because an earlier one took it.
        forAll(count: 500, seed: 28) { random in
            let files = ["/a", "/b", "/c"]
            let list = (0..<Int.random(in: 0...12, using: &random)).map { n in
                withFile("t\(n)", Int64(n), Bool.random(using: &random) ? files.randomElement(using: &random) : nil)
            }
            var limits = FleetClaim.Limits(slots: 20, nodeMaxPerHost: 64)
            limits.busyFiles = Set(files.filter { _ in Int.random(in: 0...3, using: &random) == 0 })
            let chosen = FleetClaim.choose(list, limits)
            let written = chosen.compactMap(\.destinationFile)
            #expect(Set(written).count == written.count && limits.busyFiles.isDisjoint(with: written))
            for skipped in list where !chosen.contains(where: { $0.id == skipped.id }) {
                #expect(skipped.destinationFile.map { limits.busyFiles.contains($0) || written.contains($0) } == true)
            }
        }
    }

    /// Whatever the candidates and counts: never more than the slots, never beyond a host's room on the node or in
    /// the fleet, in claim order, and nothing left out that had room (a task is skipped only for its host).
    @Test func aClaimNeverExceedsALimitAndSkipsOnlyForAFullHost() {
        forAll(count: 1_500, seed: 27) { random in
            let hosts = ["a", "b", "c", "d"]
            let candidates = (0..<Int.random(in: 0...20, using: &random)).map { n in
                candidate("t\(n)", Int64.random(in: 1...50, using: &random), priority: Int.random(in: -1...1, using: &random),
                          host: hosts.randomElement(using: &random) ?? "a")
            }
            var limits = FleetClaim.Limits(slots: Int.random(in: 0...8, using: &random), nodeMaxPerHost: Int.random(in: 1...4, using: &random))
            for host in hosts {
                limits.nodeRunningPerHost[host] = Int.random(in: 0...3, using: &random)
                limits.fleetRunningPerHost[host] = (limits.nodeRunningPerHost[host] ?? 0) + Int.random(in: 0...4, using: &random)
            }
            if Bool.random(using: &random) { limits.fleetMaxPerHost = Int.random(in: 1...6, using: &random) }
            let chosen = FleetClaim.choose(candidates, limits)
            #expect(chosen.count <= max(0, limits.slots))
            for host in hosts {
                let taken = chosen.filter { $0.host == host }.count
                #expect(limits.nodeRunningPerHost[host, default: 0] + taken <= max(limits.nodeMaxPerHost, limits.nodeRunningPerHost[host, default: 0]))
                if let fleetMax = limits.fleetMaxPerHost {
                    #expect(taken == 0 || limits.fleetRunningPerHost[host, default: 0] + taken <= fleetMax)
                }
                #expect(taken == 0 || !FleetClaim.fullHosts(limits).contains(host))
            }
            #expect(zip(chosen, chosen.dropFirst()).allSatisfy { !$1.precedes($0) }, "in claim order")
            if chosen.count < limits.slots {
                let left = candidates.filter { c in !chosen.contains { $0.id == c.id } }
                for skipped in left {
                    let taken = chosen.filter { $0.host == skipped.host }.count
                    #expect(taken >= limits.room(for: skipped.host), "\(skipped.id) was left out although its host had room")
                }
            }
        }
    }

    @Test func aHolderStopsWritingBeforeTheDatabaseLetsAnotherNodeClaim() {
        let terms = LeaseTerms(duration: .seconds(30))
        let sent = ContinuousClock.now
        let until = terms.writableUntil(sentAt: sent)
        #expect(until == sent.advanced(by: .seconds(25)))
        #expect(terms.mayWrite(until: until, now: sent.advanced(by: .seconds(24))))
        #expect(!terms.mayWrite(until: until, now: until))
        #expect(terms.renewalInterval == .seconds(5))
        #expect(!terms.renewalDue(lastSent: sent, now: sent.advanced(by: .seconds(4))))
        #expect(terms.renewalDue(lastSent: sent, now: sent.advanced(by: .seconds(5))))
        #expect(LeaseTerms(duration: .milliseconds(10)).duration == .seconds(3), "a lease is never shorter than 3 s")
    }

    /// The database receives a renewal no earlier than it was sent, and counts the lease from then by its own clock:
    /// whatever the delay and whichever clock offset, the holder's last write comes a margin before another claim.
    @Test func theHoldersDeadlineAlwaysPrecedesTheDatabasesExpiry() {
        forAll(count: 2_000, seed: 2727) { random in
            let terms = LeaseTerms(duration: .milliseconds(Int64.random(in: 3_000...120_000, using: &random)))
            let sent = ContinuousClock.now
            // Seen from the holder's clock: the renewal reaches the database after a delay of up to a minute.
            let delay = Duration.milliseconds(Int64.random(in: 0...60_000, using: &random))
            let databaseExpiry = sent.advanced(by: delay + terms.duration)
            let deadline = terms.writableUntil(sentAt: sent)
            #expect(deadline.duration(to: databaseExpiry) >= terms.margin)
        }
    }

    @Test func aLeaseFencesEveryStateButItsOwnClaim() {
        let lease = TaskLease(node: "n1", epoch: 7)
        #expect(lease.isHeld(state: .running, node: "n1", epoch: 7))
        #expect(!lease.isHeld(state: .running, node: "n1", epoch: 8), "claimed again since")
        #expect(!lease.isHeld(state: .running, node: "n2", epoch: 7), "another node's claim")
        for state in TaskState.allCases where state != .running {
            #expect(!lease.isHeld(state: state, node: "n1", epoch: 7), "\(state): no longer running under any lease")
        }
        #expect(!lease.isHeld(state: .running, node: nil, epoch: 7))
        // What the change feed may show, in any order: only a later claim, or this epoch elsewhere, supersedes it.
        #expect(lease.isSuperseded(node: "n2", epoch: 8) && lease.isSuperseded(node: "n1", epoch: 8) && lease.isSuperseded(node: nil, epoch: 9))
        #expect(lease.isSuperseded(node: "n2", epoch: 7))
        #expect(!lease.isSuperseded(node: "n1", epoch: 7), "its own claim")
        #expect(!lease.isSuperseded(node: nil, epoch: 6) && !lease.isSuperseded(node: "n2", epoch: 0), "a version read before the claim")
    }

    @Test func aStoreAddressIsReadAndPrintedWithoutItsPassword() throws {
        let address = try PostgresAddress.parse("postgres://haul:s%3Acret@db.example:6543/fleet")
        #expect(address.user == "haul" && address.password == "s:cret" && address.host == "db.example")
        #expect(address.port == 6543 && address.database == "fleet" && !address.requiresTLS)
        #expect(address.redacted == "postgres://haul@db.example:6543/fleet")
        #expect(!address.redacted.contains("cret"))
        let plain = try PostgresAddress.parse("postgresql://me@127.0.0.1/q?sslmode=require")
        #expect(plain.port == 5432 && plain.password == nil && plain.requiresTLS)
        let socket = try PostgresAddress.parse("postgres://me@%2Frun%2Fpostgresql/q")
        #expect(socket.host == "/run/postgresql")
        for bad in ["http://me@h/db", "postgres://h/db", "postgres://me@/db", "postgres://me@h", "postgres://me@h/", "postgres://me@h:0/db",
                    "postgres://me@h/db?sslmode=maybe", "postgres://me:pw@h/db?x=1", "not a url"] {
            #expect(throws: InputError.self, "\(bad)") { try PostgresAddress.parse(bad) }
            do { _ = try PostgresAddress.parse(bad) } catch { #expect(!error.message.contains("pw"), "no password in \(error.message)") }
        }
    }

    @Test func aPasswordFileIsReadAsLibpqReadsIt() throws {
        let address = try PostgresAddress.parse("postgres://haul@db:5432/fleet")
        let file = """
            # comment
            other:5432:fleet:haul:wrong
            db:5432:fleet:someone:wrong
            db:*:fleet:haul:p\\:w\\\\d
            *:*:*:*:fallback
            """
        #expect(PGPass.password(in: file, for: address) == "p:w\\d")
        #expect(PGPass.password(in: "*:*:*:*:fallback", for: address) == "fallback")
        #expect(PGPass.password(in: "db:5432:fleet:haul", for: address) == nil, "four fields")
        #expect(PGPass.password(in: "", for: address) == nil)
        let socket = try PostgresAddress.parse("postgres://haul@%2Frun/fleet")
        #expect(PGPass.password(in: "localhost:5432:fleet:haul:sock", for: socket) == "sock")
        #expect(PGPass.isPrivate(mode: 0o600) && PGPass.isPrivate(mode: 0o400))
        #expect(!PGPass.isPrivate(mode: 0o640) && !PGPass.isPrivate(mode: 0o604))
    }
}
