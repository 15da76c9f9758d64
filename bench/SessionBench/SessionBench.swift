import Foundation
import HaulKit

/// Measures a download session holding many queued tasks (see bench/README.md, `session-scale.sh`).
///
///     haul-session-bench --home DIR [--count 10000]
///
/// With `maxConcurrentDownloads = 0` nothing starts, and the URLs (`http://127.0.0.1:9/file-N.bin`)
/// are never contacted. It adds COUNT tasks one by one with `DownloadSession.add`, lists them with
/// `DownloadSession.tasks()` (median of 5), reads the peak RSS, and prints one line of JSON.
///
/// Keys: `count`, `add_seconds` (the add loop, as the caller sees it), `list_ms`, `peak_rss_mb` (VmHWM
/// after the session part), then `settle_seconds` (add loop until the session's own follow-up work
/// has run; see below), `reopen_seconds` (opening the session again with COUNT tasks),
/// `session_batch_add_seconds` (one `DownloadSession.add(_: [DownloadRequest])`), and two store-level
/// references that bypass the session, on a separate store file: `store_add_seconds` (COUNT
/// `TaskStore.add(_:)` calls) and `store_batch_add_seconds` (one `TaskStore.add(_: [NewTask])`).
@main
struct SessionBench {
    static let identifier = "scale-bench"
    static let listRuns = 5

    static func main() async {
        do {
            let (home, count) = try parseArguments(Array(CommandLine.arguments.dropFirst()))
            try await run(home: home, count: count)
        } catch let error as UsageError {
            FileHandle.standardError.write(Data("haul-session-bench: \(error.message)\n".utf8))
            FileHandle.standardError.write(Data("usage: haul-session-bench --home DIR [--count N]\n".utf8))
            exit(2)
        } catch {
            FileHandle.standardError.write(Data("haul-session-bench: error: \(error)\n".utf8))
            exit(1)
        }
    }

    struct UsageError: Error { let message: String }

    static func parseArguments(_ arguments: [String]) throws -> (home: String, count: Int) {
        var home: String?
        var count = 10_000
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--home":
                guard let value = rest.popFirst() else { throw UsageError(message: "--home needs a value") }
                home = value
            case "--count":
                guard let value = rest.popFirst(), let n = Int(value), n > 0 else {
                    throw UsageError(message: "--count needs a positive integer")
                }
                count = n
            case "-h", "--help":
                print("usage: haul-session-bench --home DIR [--count N]")
                exit(0)
            default:
                throw UsageError(message: "unknown argument \(argument)")
            }
        }
        guard var path = home, !path.isEmpty else { throw UsageError(message: "--home is required") }
        if !path.hasPrefix("/") { path = FileManager.default.currentDirectoryPath + "/" + path }
        return (path, count)
    }

    static func run(home: String, count: Int) async throws {
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        var configuration = SessionConfiguration()
        configuration.home = HaulHome(path: home)
        configuration.maxConcurrentDownloads = 0
        configuration.defaultDirectory = home + "/downloads"
        let requests = (1...count).map { n in
            DownloadRequest(url: URL(string: "http://127.0.0.1:9/file-\(n).bin")!)
        }

        // ---- session: add one by one, list, peak RSS
        let session = try await DownloadSession(identifier: identifier, configuration: configuration)
        guard try await session.tasks().isEmpty else {
            throw UsageError(message: "\(home) already holds a session \"\(identifier)\" with tasks; use an empty --home")
        }
        let clock = ContinuousClock()
        let addStart = clock.now
        for request in requests {
            let task = try await session.add(request)
            guard task.state == .waiting else { throw Failure("task \(task.id) is \(task.state), expected waiting") }
        }
        let addEnd = clock.now
        // Each add also queues a schedule pass on the session actor. An actor call after the loop
        // (this one runs a schedule pass itself) returns once those queued ahead of it have run.
        try await session.setMaxConcurrentDownloads(0)
        let settleEnd = clock.now

        var listTimes: [Duration] = []
        for _ in 0..<listRuns {
            let start = clock.now
            let tasks = try await session.tasks()
            listTimes.append(clock.now - start)
            guard tasks.count == count, tasks.allSatisfy({ $0.state == .waiting }) else {
                throw Failure("listed \(tasks.count) tasks (\(tasks.filter { $0.state != .waiting }.count) not waiting), expected \(count) waiting")
            }
        }
        let peakRSS = peakRSSMegabytes()
        await session.close()

        // ---- reopening the session with COUNT tasks in it
        let reopenStart = clock.now
        let reopened = try await DownloadSession(identifier: identifier, configuration: configuration)
        let reopenEnd = clock.now
        let reopenedCount = try await reopened.tasks().count
        await reopened.close()
        guard reopenedCount == count else { throw Failure("reopened session has \(reopenedCount) tasks, expected \(count)") }

        // ---- the session's batch add: the same tasks in one call, into a second session
        let batchSession = try await DownloadSession(identifier: identifier + "-batch", configuration: configuration)
        let batchAddStart = clock.now
        let batchAdded = try await batchSession.add(requests)
        let batchAddEnd = clock.now
        await batchSession.close()
        guard batchAdded.count == count else { throw Failure("the batch add returned \(batchAdded.count) tasks, expected \(count)") }

        // ---- store-level references (not the session API), each on a fresh store file
        let destination = home + "/downloads/127.0.0.1"
        let newTasks = requests.map { DownloadRequest(url: $0.url, destination: .directory(destination)) }
        let single = try TaskStore(path: home + "/store-reference/single.sqlite")
        let singleStart = clock.now
        for task in newTasks { _ = try single.add(task) }
        let singleEnd = clock.now
        let batch = try TaskStore(path: home + "/store-reference/batch.sqlite")
        let batchStart = clock.now
        let added = try batch.add(newTasks)
        let batchEnd = clock.now
        guard try single.count() == count, try batch.count() == count, added.allSatisfy(\.created) else {
            throw Failure("store references did not add \(count) tasks")
        }

        let fields: [(String, String)] = [
            ("count", String(count)),
            ("add_seconds", fixed(seconds(addEnd - addStart), 3)),
            ("list_ms", fixed(seconds(median(listTimes)) * 1000, 1)),
            ("peak_rss_mb", peakRSS.map { fixed($0, 1) } ?? "null"),
            ("settle_seconds", fixed(seconds(settleEnd - addStart), 3)),
            ("reopen_seconds", fixed(seconds(reopenEnd - reopenStart), 3)),
            ("session_batch_add_seconds", fixed(seconds(batchAddEnd - batchAddStart), 3)),
            ("store_add_seconds", fixed(seconds(singleEnd - singleStart), 3)),
            ("store_batch_add_seconds", fixed(seconds(batchEnd - batchStart), 3)),
        ]
        print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (s, attoseconds) = duration.components
        return Double(s) + Double(attoseconds) / 1e18
    }

    static func median(_ values: [Duration]) -> Duration {
        let sorted = values.sorted()
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    static func fixed(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }

    /// VmHWM (peak resident set) of this process in MiB, from /proc/self/status (Linux only).
    static func peakRSSMegabytes() -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if parts.count >= 2, let kib = Double(parts[1]) { return kib / 1024 }
        }
        return nil
    }
}
