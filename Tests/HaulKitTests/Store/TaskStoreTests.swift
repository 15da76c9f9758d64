import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite("TaskStore queue")
struct TaskStoreTests {
    let sandbox = StoreSandbox()

    @Test func addCreatesAWaitingTaskWithAGeneratedID() throws {
        let store = try TaskStore(path: sandbox.storePath)
        let (task, created) = try store.add(sandbox.newTask(1))
        #expect(created)
        #expect(!task.id.isEmpty)
        #expect(task.sequence == 1)
        #expect(task.state == .waiting)
        #expect(task.bytes == 0 && task.total == nil && task.filePath == nil)
        #expect(task.createdAt == task.updatedAt && task.createdAt > 0)
        #expect(try store.task(id: task.id) == task)
        #expect(try store.count() == 1)
        #expect(FileManager.default.fileExists(atPath: sandbox.storePath))
    }

    @Test func sameIDReturnsTheExistingTask() throws {
        let store = try TaskStore(path: sandbox.storePath)
        let first = try store.add(sandbox.newTask(1, id: "movie"))
        let again = try store.add(sandbox.newTask(2, id: "movie"))
        #expect(first.created && !again.created)
        #expect(again.task == first.task)
        #expect(again.task.url == "https://example.com/files/1.bin")
        #expect(try store.count() == 1)
    }

    @Test func sameURLAndDestinationReturnsTheExistingTask() throws {
        let store = try TaskStore(path: sandbox.storePath)
        let first = try store.add(sandbox.newTask(1, id: "a"))
        let again = try store.add(sandbox.newTask(1, id: "b"))
        #expect(!again.created)
        #expect(again.task.id == "a")
        #expect(try store.task(id: "b") == nil)

        var elsewhere = sandbox.newTask(1, id: "c")
        elsewhere.destination = .directory(sandbox.root + "/other")
        #expect(try store.add(elsewhere).created)
        var asFile = sandbox.newTask(1)
        asFile.destination = .file(sandbox.root + "/downloads")
        #expect(try store.add(asFile).created)
        #expect(try store.count() == 3)
        #expect(first.task.sequence == 1)
    }

    @Test func sequencesIncreaseAndListingIsFIFO() throws {
        let store = try TaskStore(path: sandbox.storePath)
        let ids = try (1...5).map { try store.add(sandbox.newTask($0, priority: 5 - $0)).task.id }
        var listed = try store.tasks()
        #expect(listed.map(\.id) == ids)
        #expect(listed.map(\.sequence) == [1, 2, 3, 4, 5])

        try store.remove(ids: [ids[1]])
        let later = try store.add(sandbox.newTask(6)).task
        #expect(later.sequence == 6)
        listed = try store.tasks()
        #expect(listed.map(\.id) == [ids[0], ids[2], ids[3], ids[4], later.id])
    }

    @Test func tasksInAStateComeByPriorityThenSequence() throws {
        let store = try TaskStore(path: sandbox.storePath)
        let low = try store.add(sandbox.newTask(1, id: "low", priority: 0)).task
        let high = try store.add(sandbox.newTask(2, id: "high", priority: 9)).task
        let low2 = try store.add(sandbox.newTask(3, id: "low2", priority: 0)).task
        let done = try store.add(sandbox.newTask(4, id: "done", priority: 99)).task
        _ = try store.update(id: done.id) { $0.state = .finished }
        #expect(try store.tasks(in: .waiting).map(\.id) == [high.id, low.id, low2.id])
        #expect(try store.tasks(in: .finished).map(\.id) == ["done"])
        #expect(try store.tasks(in: .failed).isEmpty)
    }

    @Test func updateChangesFieldsButNotIdentity() throws {
        let store = try TaskStore(path: sandbox.storePath)
        let original = try store.add(sandbox.newTask(1, id: "t")).task
        let updated = try #require(
            try store.update(id: "t") { task in
                task.state = .running
                task.bytes = 1234
                task.total = 5000
                task.filePath = "/tmp/x.bin"
                task.id = "hijacked"
                task.sequence = 99
                task.createdAt = 0
            })
        #expect(updated.id == "t" && updated.sequence == original.sequence && updated.createdAt == original.createdAt)
        #expect(updated.state == .running && updated.bytes == 1234 && updated.total == 5000)
        #expect(updated.updatedAt >= original.updatedAt)
        #expect(try store.task(id: "t") == updated)
        #expect(try store.task(id: "hijacked") == nil)
        #expect(try store.update(id: "missing") { $0.state = .failed } == nil)

        let failed = try #require(try store.update(id: "t") { $0.fail(HaulError(.network, "the server stopped answering")) })
        #expect(failed.state == .failed && failed.errorKind == "network")
        #expect(failed.errorMessage == "the server stopped answering")
    }

    @Test func updateAllChangesManyInOneCall() throws {
        let store = try TaskStore(path: sandbox.storePath)
        for n in 1...4 { _ = try store.add(sandbox.newTask(n, id: "t\(n)")) }
        let paused = try store.updateAll(ids: ["t3", "nope", "t1"]) { $0.state = .paused }
        #expect(paused.map(\.id) == ["t3", "t1"])
        #expect(try store.tasks().map(\.state) == [.paused, .waiting, .paused, .waiting])
        #expect(try store.updateAll(ids: []) { $0.state = .failed }.isEmpty)
    }

    @Test func removeDeletesOnlyTheGivenTasks() throws {
        let store = try TaskStore(path: sandbox.storePath)
        for n in 1...4 { _ = try store.add(sandbox.newTask(n, id: "t\(n)")) }
        try store.remove(ids: ["t2", "t4", "unknown"])
        try store.remove(ids: [])
        #expect(try store.tasks().map(\.id) == ["t1", "t3"])
        #expect(try store.count() == 2)
        // A removed task can be added again.
        #expect(try store.add(sandbox.newTask(2, id: "t2")).created)
    }

    @Test func headersChecksumAndSegmentsRoundTrip() throws {
        let headers = [
            HTTPFields.Field(name: "Authorization", value: "Bearer a\"b\\c"),
            HTTPFields.Field(name: "Accept", value: "text/html, */*"),
            HTTPFields.Field(name: "accept", value: "ünïcödé ✓"),
            HTTPFields.Field(name: "X-Empty", value: ""),
        ]
        var new = sandbox.newTask(1, id: "h")
        new.headers = HTTPFields(headers)
        new.checksum = Checksum(algorithm: .sha256, hex: String(repeating: "ab", count: 32))
        new.segments = 4
        do {
            let store = try TaskStore(path: sandbox.storePath)
            #expect(try store.add(new).task.spec.headers.fields == headers)
        }
        let reopened = try TaskStore(path: sandbox.storePath)
        let task = try #require(try reopened.task(id: "h"))
        #expect(task.spec.headers.fields == headers)
        #expect(task.spec.checksum?.description == "sha256:" + String(repeating: "ab", count: 32))
        #expect(task.spec.segments == 4)
        #expect(task.spec == new.spec)

        let json = try JSONEncoder().encode(task.spec)
        #expect(try JSONDecoder().decode(DownloadSpec.self, from: json) == task.spec)
    }

    @Test func aTaskIsItsSpecInOneColumn() throws {
        var spec = DownloadSpec(url: URL(string: "https://example.com/a.iso")!, destination: .file("/data/a.iso"))
        spec.headers = ["Cookie": "k=v"]
        spec.segments = 2
        let store = try TaskStore(path: sandbox.storePath)
        let task = try store.add(DownloadRequest(spec, priority: 3)).task
        #expect(task.destination == .file("/data/a.iso") && task.priority == 3 && task.spec == spec)
        let column = try #require(try store.value(sql: "SELECT spec FROM task"))
        #expect(JSONValue.parse(Array(column.utf8)) == spec.json, "the column holds the protocol's JSON shape")
        #expect(try store.value(sql: "SELECT destinationPath FROM task") == "/data/a.iso", "the unique key repeats the destination")
        // Updates change where the task stands, never what it is.
        let updated = try store.update(id: task.id) { $0.spec.url = URL(string: "https://example.com/other")!; $0.bytes = 5 }
        #expect(updated?.spec == spec && updated?.bytes == 5)
        #expect(try store.task(id: task.id)?.spec == spec)

        var standardOutput = spec
        standardOutput.destination = .standardOutput
        #expect(StoreSandbox.thrown { try store.add(DownloadRequest(standardOutput)) }?.kind == .usage)
        var relative = spec
        relative.destination = .file("a.iso")
        #expect(StoreSandbox.thrown { try store.add(DownloadRequest(relative)) }?.kind == .usage)
    }

    @Test func stateSurvivesReopening() throws {
        var before: [StoredTask] = []
        do {
            let store = try TaskStore(path: sandbox.storePath)
            for n in 1...3 { _ = try store.add(sandbox.newTask(n, id: "t\(n)")) }
            _ = try store.update(id: "t2") { $0.state = .paused; $0.bytes = 77 }
            _ = try store.update(id: "t3") { $0.state = .finished; $0.filePath = "/done/3.bin" }
            before = try store.tasks()
        }
        let store = try TaskStore(path: sandbox.storePath)
        #expect(try store.tasks() == before)
        #expect(try store.add(sandbox.newTask(4)).task.sequence == 4)
    }

    @Test func batchAddIsOneCallWithInBatchDuplicates() throws {
        let store = try TaskStore(path: sandbox.storePath)
        _ = try store.add(sandbox.newTask(0, id: "old"))
        let results = try store.add([
            sandbox.newTask(1, id: "a"), sandbox.newTask(2, id: "a"), sandbox.newTask(1, id: "b"),
            sandbox.newTask(0), sandbox.newTask(3),
        ])
        #expect(results.map(\.created) == [true, false, false, false, true])
        #expect(results.map(\.task.id).prefix(4) == ["a", "a", "a", "old"])
        #expect(try store.tasks().map(\.sequence) == [1, 2, 3])
        #expect(try store.add([]).isEmpty)
    }

    @Test func invalidTasksAreRefused() throws {
        let store = try TaskStore(path: sandbox.storePath)
        var relative = sandbox.newTask(1)
        relative.destination = .directory("downloads")
        var badKind = sandbox.newTask(2)
        badKind.destination = .standardOutput
        let emptyID = sandbox.newTask(3, id: "")
        for task in [relative, badKind, emptyID] {
            #expect(StoreSandbox.thrown { try store.add(task) }?.kind == .usage)
        }
        // A bad task in a batch adds nothing.
        #expect(StoreSandbox.thrown { try store.add([sandbox.newTask(4), relative]) }?.kind == .usage)
        #expect(try store.count() == 0)
    }
}

@Suite("TaskStore start counts")
struct TaskStoreStartCountTests {
    let sandbox = StoreSandbox()

    /// A store that counts starts keeps one per start until the task ends; one that does not (a person's `haul get`,
    /// which never reads them) keeps none, whether the task starts alone or in the transaction of another's end.
    @Test(arguments: [true, false])
    func startsAreCountedOnlyWhenAsked(counting: Bool) throws {
        let store = try TaskStore(path: sandbox.storePath, countsStarts: counting)
        let first = try store.add(sandbox.newTask(1)).task.id
        let second = try store.add(sandbox.newTask(2)).task.id
        #expect(try store.startIfWaiting(id: first)?.started == true)
        #expect(try store.unendedStarts(ids: [first]) == (counting ? [first: 1] : [:]))
        let both = try store.conclude(
            id: first, lease: nil, journaling: nil, payload: { _ in "" }, finalRecord: nil, thenStarting: second,
            { $0.state = .finished })
        #expect(both.next?.started == true)
        #expect(try store.unendedStarts(ids: [first, second]) == (counting ? [second: 1] : [:]))
    }
}
