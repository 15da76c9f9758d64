import Foundation
import Testing
@testable import HaulKit

@Suite struct DownloadEventInboxTests {
    private static func started(_ n: Int) -> DownloadEvent {
        .started(url: "http://127.0.0.1/\(n)", path: "/tmp/\(n)", resumedFrom: 0, total: nil)
    }

    private static func paths(_ events: [(id: String, event: DownloadEvent)]) -> [String] {
        events.map { entry in
            guard case .started(_, let path, _, _) = entry.event else { return "?" }
            return "\(entry.id)\(path)"
        }
    }

    /// Only the first post into an inbox nobody is about to read asks for a read; a read takes everything in order,
    /// and once it finds the inbox empty, the next post asks again.
    @Test func onlyThePostAfterAnEmptyReadAsksForARead() {
        let inbox = DownloadEventInbox()
        #expect(inbox.post("a", Self.started(1)))
        #expect(!inbox.post("b", Self.started(2)))
        #expect(!inbox.post("a", Self.started(3)))
        #expect(Self.paths(inbox.take()) == ["a/tmp/1", "b/tmp/2", "a/tmp/3"])
        // Not yet found empty: a post now is read by the same reader's next take.
        #expect(!inbox.post("c", Self.started(4)))
        #expect(Self.paths(inbox.take()) == ["c/tmp/4"])
        #expect(inbox.take().isEmpty)
        #expect(inbox.post("d", Self.started(5)))
    }

    /// Posts from many threads at once: every event is taken exactly once, each download's in its order, and a read
    /// is asked for at most once per empty read.
    @Test func postsFromManyThreadsAreEachTakenOnceInTheirOrder() async {
        let inbox = DownloadEventInbox()
        let perDownload = 500
        let asked = await withTaskGroup(of: Int.self) { group in
            for download in 0..<8 {
                group.addTask {
                    var asked = 0
                    for n in 0..<perDownload where inbox.post("\(download)", Self.started(n)) { asked += 1 }
                    return asked
                }
            }
            var taken: [(id: String, event: DownloadEvent)] = []
            var emptyReads = 0
            // Reads while the posts go on, then until nothing is left.
            for _ in 0..<100_000 {
                let batch = inbox.take()
                if batch.isEmpty { emptyReads += 1 }
                taken += batch
                if taken.count == 8 * perDownload { break }
                await Task.yield()
            }
            var asked = 0
            for await count in group { asked += count }
            #expect(taken.count == 8 * perDownload)
            for download in 0..<8 {
                let own = Self.paths(taken.filter { $0.id == "\(download)" })
                #expect(own == (0..<perDownload).map { "\(download)/tmp/\($0)" })
            }
            #expect(asked <= emptyReads + 1)
            return asked
        }
        #expect(asked >= 1)
    }
}
