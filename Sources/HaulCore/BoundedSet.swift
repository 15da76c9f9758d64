extension Set {
    /// Inserts `member` into a set kept as a cache of what was learned about hosts (which ones speak HTTP/2, which
    /// ones could not be reached), first dropping an arbitrary member when it already holds `limit`: the set stays
    /// bounded however many hosts a list names, and what is dropped is only learned again. Whether it was new.
    @discardableResult
    package mutating func insert(_ member: Element, keepingAtMost limit: Int) -> Bool {
        guard !contains(member) else { return false }
        if count >= Swift.max(1, limit), let dropped = first { remove(dropped) }
        insert(member)
        return true
    }
}

/// How many hosts an engine remembers something about (``Set/insert(_:keepingAtMost:)``).
package let hostsRemembered = 4_096
