/// What the dashboard's listener grants a connection before it has shown a credential: how many such connections
/// it holds at once (in all, and from one peer address), and how long a request may take to arrive. Pure: the
/// shell (HaulWeb's server) tells it what happens and does what it answers.
///
/// A connection is *pending* from the moment it is accepted until one of its requests carries a valid session
/// cookie or the API key: anyone who can reach the port can open one, so pending connections are few and short.
/// Past the limits a new connection is closed as soon as it is accepted, before anything is read. The owner's Unix
/// socket and the downloads do not share these limits, and the limits are set well below the process's descriptor
/// limit (``Limits/init(descriptorLimit:)``), so a flood of connections never starves them.
package struct WebConnectionGate: Sendable {
    /// The numbers the gate works with.
    package struct Limits: Sendable, Equatable {
        /// Connections open at once, pending or not.
        public var maxOpen: Int
        /// Pending connections at once.
        public var maxPending: Int
        /// Pending connections from one peer address at once. On loopback every local user has the same address, so
        /// there this is a second total; it matters for a dashboard that listens on a network.
        public var maxPendingPerPeer: Int
        /// How long a request head may take to arrive whole, counted from when the connection is ready for it
        /// (accepted, or its previous answer sent): a total, which bytes trickling in one by one do not extend.
        public var headDeadline: Duration
        /// How long a request body may take to arrive whole, counted from its head.
        public var bodyDeadline: Duration

        /// The defaults: at most 2,048 connections, 1,024 of them pending and 128 pending from one address, a head
        /// within 10 s and a body within 60 s; fewer when the process may open fewer than 16,384 descriptors (an
        /// eighth of them for connections, half of that pending), so that the daemon's socket, its stores and its
        /// downloads always keep the rest.
        public init(descriptorLimit: Int = .max) {
            let open = min(2_048, max(16, descriptorLimit / 8))
            maxOpen = open
            maxPending = min(1_024, max(8, open / 2))
            maxPendingPerPeer = min(128, max(4, maxPending / 8))
            headDeadline = .seconds(10)
            bodyDeadline = .seconds(60)
        }
    }

    public let limits: Limits
    public private(set) var open = 0
    public private(set) var pending = 0
    private var pendingByPeer: [String: Int] = [:]

    public init(limits: Limits) { self.limits = limits }

    /// Whether a connection just accepted from `peer` (its address, without the port) is kept; if so it is counted
    /// as open and pending until ``trust(peer:)`` or ``close(peer:pending:)``.
    public mutating func admit(peer: String) -> Bool {
        guard open < limits.maxOpen, pending < limits.maxPending, pendingByPeer[peer, default: 0] < limits.maxPendingPerPeer else {
            return false
        }
        open += 1
        pending += 1
        pendingByPeer[peer, default: 0] += 1
        return true
    }

    /// A pending connection from `peer` carried a valid credential: it no longer counts as pending.
    public mutating func trust(peer: String) {
        guard let count = pendingByPeer[peer], count > 0 else { return }
        pending -= 1
        pendingByPeer[peer] = count == 1 ? nil : count - 1
    }

    /// A connection from `peer` closed; `pending`: it never carried a credential.
    public mutating func close(peer: String, pending wasPending: Bool) {
        open = max(0, open - 1)
        if wasPending { trust(peer: peer) }
    }

    /// Pending connections from `peer`.
    public func pending(from peer: String) -> Int { pendingByPeer[peer, default: 0] }
}
