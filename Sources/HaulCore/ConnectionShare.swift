/// How one host's connections are shared between the downloads running against it: every download holds at
/// least one (its first, in the order they asked), and the spare ones go to segmented downloads in fair shares,
/// given back as soon as another download needs one. Pure: the shell asks, then opens or closes connections.
///
/// Shares are max-min fair over what each download wants (1 for one connection, N for N segments): a download
/// that wants less than an equal part gets what it wants, the rest is split evenly between the others (the
/// remainder going to those that came first), and everyone holding or waiting gets at least one.
package struct ConnectionShare: Sendable, Equatable {
    /// Connections to the host at once.
    public private(set) var limit: Int
    /// Downloads in the order they first asked, with the connections each holds.
    private var holders: [(id: Int, held: Int)] = []
    /// Downloads waiting for their first connection, in order.
    private var waiting: [Int] = []
    /// The connections each download would use (1 unless it said more).
    private var wants: [Int: Int] = [:]

    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// A download that allows more connections to the host (`--max-connections-per-host N`) raises the host's limit
    /// to N while the host is in use; returns the downloads admitted by the new room.
    @discardableResult
    public mutating func raiseLimit(to count: Int) -> [Int] {
        guard count > limit else { return [] }
        limit = count
        return admitWaiting()
    }

    public var held: Int { holders.reduce(0) { $0 + $1.held } }
    public var isIdle: Bool { holders.isEmpty && waiting.isEmpty }
    public func connections(of id: Int) -> Int { holders.first { $0.id == id }?.held ?? 0 }
    public func isWaiting(_ id: Int) -> Bool { waiting.contains(id) }

    /// The connections `id` may hold now.
    public func share(of id: Int) -> Int {
        shares()[id] ?? 0
    }

    /// `id` would use `count` connections (a segmented download says so when it splits the file).
    public mutating func setWants(_ id: Int, _ count: Int) {
        wants[id] = max(1, count)
    }

    /// Max-min fair shares of everyone holding or waiting, in order of arrival.
    private func shares() -> [Int: Int] {
        var pending = holders.map(\.id) + waiting
        var result: [Int: Int] = [:]
        var remaining = limit
        while !pending.isEmpty {
            let level = remaining / pending.count
            let modest = pending.filter { (wants[$0] ?? 1) <= level }
            guard !modest.isEmpty else {
                let extra = remaining % pending.count
                for (position, id) in pending.enumerated() { result[id] = max(1, level + (position < extra ? 1 : 0)) }
                break
            }
            for id in modest { result[id] = wants[id] ?? 1 }
            remaining -= modest.reduce(0) { $0 + (wants[$1] ?? 1) }
            pending.removeAll { modest.contains($0) }
        }
        return result
    }

    /// A download's first connection: granted while the host has room, else the download waits its turn
    /// (``releaseAll(_:)`` of another, or a segment given back, lets it in).
    public mutating func requestFirst(_ id: Int) -> Bool {
        if connections(of: id) > 0 { return true }
        if !waiting.contains(id) { waiting.append(id) }
        return admitWaiting().contains(id)
    }

    /// Another connection for a segmented download that holds one: only within its share, only when nobody
    /// waits for a first connection, and only while the host has room.
    public mutating func requestExtra(_ id: Int) -> Bool {
        guard let index = holders.firstIndex(where: { $0.id == id }), waiting.isEmpty, held < limit,
              holders[index].held < share(of: id) else { return false }
        holders[index].held += 1
        return true
    }

    /// Whether `id` holds more than its share: one of its extra connections should be given back.
    public func shouldGiveBack(_ id: Int) -> Bool {
        let held = connections(of: id)
        return held > 1 && held > share(of: id)
    }

    /// One extra connection of `id` closed; returns the downloads that got their first connection from it.
    @discardableResult
    public mutating func releaseExtra(_ id: Int) -> [Int] {
        if let index = holders.firstIndex(where: { $0.id == id }), holders[index].held > 1 { holders[index].held -= 1 }
        return admitWaiting()
    }

    /// `id` ended (or stopped waiting): its connections are free; returns the downloads admitted in its place.
    @discardableResult
    public mutating func releaseAll(_ id: Int) -> [Int] {
        holders.removeAll { $0.id == id }
        waiting.removeAll { $0 == id }
        wants[id] = nil
        return admitWaiting()
    }

    /// Gives first connections to waiting downloads, in order, while the host has room.
    private mutating func admitWaiting() -> [Int] {
        var admitted: [Int] = []
        while let next = waiting.first, held < limit {
            waiting.removeFirst()
            holders.append((next, 1))
            admitted.append(next)
        }
        return admitted
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.limit == rhs.limit && lhs.waiting == rhs.waiting && lhs.wants == rhs.wants
            && lhs.holders.map(\.id) == rhs.holders.map(\.id) && lhs.holders.map(\.held) == rhs.holders.map(\.held)
    }
}
