/// Which tasks a node of a fleet claims: highest priority first, then the oldest, within the node's free slots, its
/// own limit of downloads per host and the fleet-wide limit of connections per host.
///
/// The store finds the candidates (waiting tasks, and running ones whose lease expired), skipping rows another node
/// is claiming at that moment (`FOR UPDATE SKIP LOCKED`) and the hosts ``fullHosts(_:)`` names; this decides which of
/// them to take. A fleet-wide limit counts every running download of the host on every node (each holds at least
/// one connection, and under that limit exactly one): so ten nodes stay as polite to a server as one.
package enum FleetClaim {
    /// A task the store could claim.
    public struct Candidate: Equatable, Sendable {
        public var id: String
        public var priority: Int
        /// The order it was added in.
        public var sequence: Int64
        public var host: String
        /// The file it is written to when that path is given (a `file` destination); `nil`: a folder's name chosen
        /// when the answer comes (kept apart by exclusive creation instead), or standard output.
        public var destinationFile: String?

        public init(id: String, priority: Int, sequence: Int64, host: String, destinationFile: String? = nil) {
            self.id = id
            self.priority = priority
            self.sequence = sequence
            self.host = host
            self.destinationFile = destinationFile
        }

        /// Whether `self` is claimed before `other`: higher priority, then added earlier.
        public func precedes(_ other: Candidate) -> Bool {
            priority != other.priority ? priority > other.priority : sequence < other.sequence
        }
    }

    /// What bounds a claim.
    public struct Limits: Equatable, Sendable {
        /// Downloads the node may start now (its own maximum less what it runs).
        public var slots: Int
        /// The node's running downloads per host.
        public var nodeRunningPerHost: [String: Int]
        /// The node's own limit of downloads per host (at least 1).
        public var nodeMaxPerHost: Int
        /// Running downloads per host on every node, by live leases (this node's among them).
        public var fleetRunningPerHost: [String: Int]
        /// The fleet-wide limit of connections per host; `nil`: none.
        public var fleetMaxPerHost: Int?
        /// The destination files a live download of the fleet writes now (any node, any session): a task to the same
        /// file waits until it ends, as two downloads on one machine are kept apart by the file's lock.
        public var busyFiles: Set<String> = []

        public init(
            slots: Int, nodeRunningPerHost: [String: Int] = [:], nodeMaxPerHost: Int = 8,
            fleetRunningPerHost: [String: Int] = [:], fleetMaxPerHost: Int? = nil
        ) {
            self.slots = slots
            self.nodeRunningPerHost = nodeRunningPerHost
            self.nodeMaxPerHost = nodeMaxPerHost
            self.fleetRunningPerHost = fleetRunningPerHost
            self.fleetMaxPerHost = fleetMaxPerHost
        }

        /// How many more downloads of `host` may start now.
        public func room(for host: String) -> Int {
            var room = max(1, nodeMaxPerHost) - nodeRunningPerHost[host, default: 0]
            if let fleetMaxPerHost { room = min(room, max(1, fleetMaxPerHost) - fleetRunningPerHost[host, default: 0]) }
            return max(0, room)
        }
    }

    /// Whether a claim also looks for running tasks whose lease expired (a dead node's), besides the waiting ones:
    /// when the waiting ones do not fill the slots, or when the last look is `interval` old (a lease's renewal
    /// interval: a takeover waits that much longer at most). A busy node then asks the store one question less for
    /// most of its claims.
    public static func looksForExpired(sinceLastLook: Duration?, waitingFound: Int, slots: Int, interval: Duration) -> Bool {
        guard let sinceLastLook, waitingFound >= slots else { return true }
        return sinceLastLook >= interval
    }

    /// The hosts no task may be claimed for now: full on this node, or in the fleet.
    public static func fullHosts(_ limits: Limits) -> Set<String> {
        var hosts = Set(limits.nodeRunningPerHost.keys)
        if limits.fleetMaxPerHost != nil { hosts.formUnion(limits.fleetRunningPerHost.keys) }
        return hosts.filter { limits.room(for: $0) == 0 }
    }

    /// The candidates to claim, in claim order: at most `slots`, none beyond a host's room. A host whose room is
    /// spent does not hold back another's tasks.
    public static func choose(_ candidates: [Candidate], _ limits: Limits) -> [Candidate] {
        guard limits.slots > 0 else { return [] }
        var taken: [String: Int] = [:]
        var chosen: [Candidate] = []
        var seen = Set<String>()
        var files = limits.busyFiles
        for candidate in candidates.sorted(by: { $0.precedes($1) }) where chosen.count < limits.slots {
            guard seen.insert(candidate.id).inserted, taken[candidate.host, default: 0] < limits.room(for: candidate.host) else { continue }
            // One download per destination file at a time: the first in claim order, the others wait.
            if let file = candidate.destinationFile, !files.insert(file).inserted { continue }
            taken[candidate.host, default: 0] += 1
            chosen.append(candidate)
        }
        return chosen
    }
}
