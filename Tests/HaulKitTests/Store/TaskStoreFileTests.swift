import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite("TaskStore file")
struct TaskStoreFileTests {
    let sandbox = StoreSandbox()

    func garbage(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    }

    @Test func garbageFileIsReportedAsDamaged() throws {
        for size in [16, 4096, 20000] {
            let path = sandbox.root + "/garbage\(size)/tasks.sqlite"
            try sandbox.writeFile(path, garbage(size))
            let error = try #require(StoreSandbox.thrown { try TaskStore(path: path) })
            #expect(error.kind == .fileSystem)
            #expect(error.message.hasPrefix("the session store at \(path) is damaged ("))
            #expect(error.message.hasSuffix("); move it away to start over"))
            #expect(!error.message.contains("\n"))
        }
    }

    @Test func overwrittenPagesAreReportedAsDamaged() throws {
        let path = sandbox.storePath
        do {
            let store = try TaskStore(path: path)
            _ = try store.add((1...300).map { sandbox.newTask($0) })
        }
        // Tear the first page after the 100-byte header: the schema can no longer be read.
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: 100)
        try handle.write(contentsOf: Data(garbage(3996)))
        try handle.close()
        let error = StoreSandbox.thrown { try TaskStore(path: path).tasks() }
        #expect(error?.message.hasPrefix("the session store at \(path) is damaged (") == true)
    }

    @Test func truncatedFileIsReportedAsDamaged() throws {
        let path = sandbox.storePath
        do {
            let store = try TaskStore(path: path)
            _ = try store.add((1...2000).map { sandbox.newTask($0) })
        }
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.truncate(atOffset: UInt64(size / 2))
        try handle.close()
        let error = StoreSandbox.thrown { try TaskStore(path: path).tasks() }
        #expect(error?.message.hasPrefix("the session store at \(path) is damaged (") == true)
    }

    @Test func unreadableRowsAreReportedAsDamaged() throws {
        let store = try TaskStore(path: sandbox.storePath)
        _ = try store.add(sandbox.newTask(1, id: "a"))
        try store.execute(sql: "UPDATE task SET state = 'exploded'")
        #expect(StoreSandbox.thrown { try store.tasks() }?.message
            == "the session store at \(sandbox.storePath) is damaged (unknown task state \"exploded\"); move it away to start over")
        try store.execute(sql: "UPDATE task SET state = 'waiting', spec = '{\"url\": \"https://example.com/a\", \"headers\": [{'")
        #expect(StoreSandbox.thrown { try store.task(id: "a") }?.message.contains("is damaged (a task's spec") == true)
        try store.execute(sql: "UPDATE task SET spec = '{\"url\": \"ftp://example.com/a\", \"directory\": \"/d\"}'")
        #expect(StoreSandbox.thrown { try store.task(id: "a") }?.message.contains("is damaged (a task's spec") == true)
    }

    @Test func emptyFileBecomesANewStore() throws {
        try sandbox.writeFile(sandbox.storePath, [])
        let store = try TaskStore(path: sandbox.storePath)
        #expect(try store.add(sandbox.newTask(1)).created)
    }

    @Test func newerUserVersionIsRefused() throws {
        do {
            let store = try TaskStore(path: sandbox.storePath)
            _ = try store.add(sandbox.newTask(1))
            try store.execute(sql: "PRAGMA user_version = 7")
        }
        let error = try #require(StoreSandbox.thrown { try TaskStore(path: sandbox.storePath) })
        #expect(error.kind == .fileSystem)
        #expect(error.message == "the session store at \(sandbox.storePath) was written by a newer version of haul (schema 7); upgrade haul")
    }

    @Test func unknownMigrationIsRefused() throws {
        do {
            let store = try TaskStore(path: sandbox.storePath)
            try store.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99')")
        }
        let error = try #require(StoreSandbox.thrown { try TaskStore(path: sandbox.storePath) })
        #expect(error.message == "the session store at \(sandbox.storePath) was written by a newer version of haul (schema \(TaskStore.schemaVersion + 1)); upgrade haul")
    }

    @Test func currentSchemaReopensWithoutChanges() throws {
        do { _ = try TaskStore(path: sandbox.storePath) }
        let store = try TaskStore(path: sandbox.storePath)
        #expect(try store.value(sql: "PRAGMA user_version") == "\(TaskStore.schemaVersion)")
        #expect(try store.value(sql: "PRAGMA journal_mode") == "wal")
        #expect(try store.value(sql: "SELECT COUNT(*) FROM grdb_migrations") == "\(TaskStore.schemaVersion)")
    }

    @Test func unwritableFolderIsAFileSystemError() throws {
        // A plain file where the folder should be.
        try sandbox.writeFile(sandbox.root + "/sessions", [1, 2, 3])
        let error = try #require(StoreSandbox.thrown { try TaskStore(path: sandbox.storePath) })
        #expect(error.kind == .fileSystem)
    }

    @Test func secondStoreOnTheSameFileSeesUncheckpointedWrites() throws {
        let first = try TaskStore(path: sandbox.storePath)
        for n in 1...20 { _ = try first.add(sandbox.newTask(n, id: "t\(n)")) }
        _ = try first.update(id: "t5") { $0.state = .running; $0.bytes = 10 }
        #expect(FileManager.default.fileExists(atPath: sandbox.storePath + "-wal"))

        let second = try TaskStore(path: sandbox.storePath)
        #expect(try second.tasks() == first.tasks())
        #expect(try second.task(id: "t5")?.bytes == 10)

        _ = try second.update(id: "t5") { $0.bytes = 20 }
        _ = try second.add(sandbox.newTask(21, id: "t21"))
        #expect(try first.task(id: "t5")?.bytes == 20)
        #expect(try first.count() == 21)
        #expect(try first.add(sandbox.newTask(22)).task.sequence == 22)
    }

    @Test func copyOfFileAndWALAfterACrashHasEveryCommit() throws {
        let store = try TaskStore(path: sandbox.storePath)
        for n in 1...50 { _ = try store.add(sandbox.newTask(n, id: "t\(n)")) }
        _ = try store.update(id: "t50") { $0.state = .paused }
        // What a crash leaves on disk: the main file and the WAL, copied while the store is still open.
        let copy = sandbox.root + "/crash/tasks.sqlite"
        try FileManager.default.createDirectory(atPath: sandbox.root + "/crash", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: sandbox.storePath, toPath: copy)
        try FileManager.default.copyItem(atPath: sandbox.storePath + "-wal", toPath: copy + "-wal")

        let recovered = try TaskStore(path: copy)
        #expect(try recovered.count() == 50)
        #expect(try recovered.tasks() == store.tasks())
        #expect(try recovered.task(id: "t50")?.state == .paused)
    }

    @Test func tenThousandTasks() throws {
        let store = try TaskStore(path: sandbox.storePath)
        let batch = (1...10_000).map { sandbox.newTask($0, priority: $0 % 3) }
        let results = try store.add(batch)
        #expect(results.allSatisfy { $0.created })
        #expect(try store.count() == 10_000)

        let listed = try store.tasks()
        #expect(listed.count == 10_000)
        #expect(listed.map(\.sequence) == Array(1...10_000))
        #expect(listed.map(\.url) == batch.map { $0.url.absoluteString })

        // Adding the same batch again creates nothing.
        #expect(try store.add(batch).allSatisfy { !$0.created })
        let one = try store.add(sandbox.newTask(10_001))
        #expect(one.created && one.task.sequence == 10_001)
        let waiting = try store.tasks(in: .waiting)
        #expect(waiting.count == 10_001)
        #expect(waiting.first?.priority == 2 && waiting.last?.priority == 0)
    }
}
