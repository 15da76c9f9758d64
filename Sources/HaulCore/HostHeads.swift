/// The hosts of a ``WaitingQueue`` in the order of their first waiting task, so that choosing what starts next visits
/// the hosts from the front of the queue until the free slots are filled, not every host that has a task waiting.
///
/// A binary min-heap of (first task's position, host). An entry goes stale when its host's first task changes (the
/// new one gets an entry of its own) or its host leaves the queue; stale entries are skipped by ``walk(_:)``, dropped
/// from the top as they surface (``dropStale(isCurrent:)``) and all at once when they outnumber the live ones
/// (``needsRebuild(hosts:)``).
struct HostHeads {
    /// A host and the position of its first waiting task when the entry was made.
    struct Head {
        var position: QueuePosition
        var host: String
    }

    private var heap: [Head] = []

    /// Entries held, live and stale.
    var count: Int { heap.count }

    mutating func removeAll() { heap.removeAll() }

    /// Adds `head` (the host's first task is now at its position).
    mutating func push(_ head: Head) {
        heap.append(head)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].position.precedes(heap[parent].position) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Drops entries from the top while `isCurrent` says they are stale: the first task started is the queue's
    /// first, whose entry is then at the top.
    mutating func dropStale(isCurrent: (Head) -> Bool) {
        while let top = heap.first, !isCurrent(top) { popMin() }
    }

    /// Whether stale entries outnumber the live ones (`hosts` of them) by enough to make ``rebuild(_:)`` worth it.
    func needsRebuild(hosts: Int) -> Bool { heap.count > 2 * hosts + 64 }

    /// Replaces every entry by `heads` (one per host, its first task).
    mutating func rebuild(_ heads: [Head]) {
        heap = heads.sorted { $0.position.precedes($1.position) }    // a sorted array is a heap
    }

    private mutating func popMin() {
        guard !heap.isEmpty else { return }
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].position.precedes(heap[smallest].position) { smallest = left }
            if right < heap.count, heap[right].position.precedes(heap[smallest].position) { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// Calls `body` with the entries in order, first position first, until it returns false. The heap is left as it
    /// is: the walk keeps its own small heap of the indices it may visit next (an entry's children come after it),
    /// so visiting k entries costs O(k log k) whatever the heap holds.
    func walk(_ body: (Head) -> Bool) {
        guard !heap.isEmpty else { return }
        var frontier = [0]
        while let index = frontier.first {
            // Pop the frontier's first index.
            frontier.swapAt(0, frontier.count - 1)
            frontier.removeLast()
            siftDown(&frontier)
            guard body(heap[index]) else { return }
            for child in 2 * index + 1...2 * index + 2 where child < heap.count {
                frontier.append(child)
                siftUp(&frontier)
            }
        }
    }

    private func siftUp(_ frontier: inout [Int]) {
        var child = frontier.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[frontier[child]].position.precedes(heap[frontier[parent]].position) else { return }
            frontier.swapAt(child, parent)
            child = parent
        }
    }

    private func siftDown(_ frontier: inout [Int]) {
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < frontier.count, heap[frontier[left]].position.precedes(heap[frontier[smallest]].position) { smallest = left }
            if right < frontier.count, heap[frontier[right]].position.precedes(heap[frontier[smallest]].position) { smallest = right }
            guard smallest != parent else { return }
            frontier.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
