import ArgumentParser
import Foundation
import HaulKit

/// `haul get` with several URLs: one download session, at most `-j` at once, resumable as a whole.
///
/// A list of any length is read in bounded memory: once to name the session (the same URLs into the same place
/// make the same session, so re-running the command resumes it), then again to add its tasks a few hundred at a
/// time; standard input (or a pipe given to `-i`) is first kept in a private file of `HAUL_HOME` for the second
/// reading. The outcome is read
/// back from the session a page at a time.
struct BatchGet {
    let command: GetCommand
    /// The URLs given as arguments.
    let arguments: [InputList.Entry]
    /// The `-i` list, if any: a file, or standard input.
    let list: String?

    /// The entries of the batch (arguments first, then the list), a part at a time.
    final class Entries {
        private var arguments: ArraySlice<InputList.Entry>
        private let cursor: URLListCursor?

        init(arguments: [InputList.Entry], list: URLListFile?) {
            self.arguments = arguments[...]
            cursor = list.map(URLListCursor.init)
        }

        /// Up to `count` more entries; none at the end.
        func next(_ count: Int) throws -> [InputList.Entry] {
            var part = Array(arguments.prefix(count))
            arguments = arguments.dropFirst(part.count)
            if part.count < count, let cursor { part += try cursor.next(count - part.count) }
            return part
        }
    }

    func run() async throws {
        // --max-time bounds the whole command, as it bounds one URL's: from now, whatever part of the list is added.
        let stopAt = command.maxTime.map { ContinuousClock.now + $0.duration }
        let home = HaulHome(environment: ProcessInfo.processInfo.environment)
        let identifier: String
        let count: Int
        var destinations: ListDestinations
        let listFile: URLListFile?
        do {
            listFile = try await BatchGet.open(list, home: home)
            // The first reading: every line checked and every spec made, before anything is added or fetched.
            let reading = try await BatchGet.name(command: command, entries: Entries(arguments: arguments, list: listFile))
            (identifier, count, destinations) = (reading.identifier, reading.count, reading.destinations)
            if count == 0 { throw InputError("\(listFile?.name ?? "the URL list") is empty") }
            try command.file.checkCount(count, remoteName: command.file.remoteName, arguments: command.list.urls)
        } catch let error as InputError {
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.usage)
        } catch let error as HaulError {
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.code(for: error.kind))
        }
        command.connection.warnIfInsecure()
        if let note = destinations.duplicateNote, !command.quiet { Reporter.printError("haul: note: " + note) }
        if let note = destinations.laterNote, !command.quiet { Reporter.printError("haul: note: " + note) }
        var configuration = SessionConfiguration()
        // A --dir download does not take a name another entry names (out=): that entry's, wherever its line is.
        destinations.forgetEntries()
        let files = destinations
        configuration.isReservedPath = { files.isClaimed($0) }
        configuration.maxConcurrentDownloads = command.jobs
        // --max-connections-per-host is the batch's per-host limit (over HTTP/1.1; an HTTP/2 host runs -j as streams).
        configuration.maxDownloadsPerHost = command.file.connectionsPerHost
        configuration.stallTimeout = command.stallTimeout.duration
        configuration.connectTimeout = command.connectTimeout.duration
        // A person waits at the terminal, as for one URL: a host that refuses or does not resolve fails each of its
        // URLs within about a second (as curl and wget do at once), instead of after a minute of backoff each.
        configuration.failsFastBeforeData = true
        configuration.rateLimit = command.file.limitRate
        if command.verbose { configuration.logger = GetCommand.verboseLogger() }
        let hook = OnComplete(command.onComplete, toStandardError: command.json)
        if let hook { configuration.onCompletion = { hook.run(for: $0, session: identifier) } }
        let session: DownloadSession
        do {
            session = try await DownloadSession(identifier: identifier, configuration: configuration)
        } catch let error as HaulError {
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.code(for: error.kind))
        }
        // The live view needs the terminal to itself: not with --verbose's log lines (a line per file instead).
        let mode: BatchReporter.Mode = command.json ? .json : command.quiet ? .quiet : (LiveArea.isLiveTerminal() && !command.verbose ? .terminal : .plain)
        let reporter = BatchReporter(mode: mode, live: command.jobs, listEachFile: command.verbose)
        let events = await session.events()
        let printer = Task { for await event in events { reporter.handle(event) } }
        // On a terminal, the running tasks are read again every second: the file a --dir download was named, and
        // why one is not moving (a retry, a connection it waits for), which no event says. With --json, whether the
        // per-host limit holds downloads back (a `heldBack` line when that changes).
        let poller = mode == .terminal || mode == .json ? Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                var shown: [TaskSnapshot] = []
                for id in reporter.activeIDs { if let task = try? await session.task(id) { shown.append(task) } }
                let summary = await session.waitingSummary()
                if !Task.isCancelled { reporter.update(shown, summary: summary) }
            }
        } : nil

        // Added a few at a time, the first downloads start at once instead of after the whole list is stored, and
        // the session answers its running downloads between the parts. Re-running the command retries what failed
        // or was cancelled last time, and what stopped paused.
        do {
            let entries = Entries(arguments: arguments, list: listFile)
            let maker = try command.specMaker()
            var first = true
            var added = 0
            var argumentsAdded = 0
            while true {
                // The events of what was added are read before much more is added: the session's event stream keeps
                // what is not read yet. Bounded, and it stops waiting when no more come (a task the list had added in
                // an earlier run is not new, and says nothing).
                var seen = -1
                for _ in 0..<10_000 where added - reporter.addedCount > BatchGet.eventsAhead && reporter.addedCount != seen {
                    seen = reporter.addedCount
                    try? await Task.sleep(for: .milliseconds(5))
                }
                if let stopAt, ContinuousClock.now >= stopAt { break }
                let part = try entries.next(first ? 2 * command.jobs : BatchGet.tasksPerAdd)
                first = false
                if part.isEmpty { break }
                let requests = try part.compactMap { entry -> DownloadRequest? in
                    var request = DownloadRequest(try maker.spec(for: entry))
                    // Under -nc, an entry whose file an earlier one saves is not retrieved (said once, above).
                    let source = BatchGet.source(of: entry, arguments: &argumentsAdded)
                    if command.file.noClobber, BatchGet.isLater(request.spec, from: source, in: files) { return nil }
                    // --limit-rate caps the whole batch: the session's limit, not each task's.
                    request.rateLimit = nil
                    return request
                }
                if requests.isEmpty { continue }
                var again: [String] = []
                var gone: [(id: String, request: DownloadRequest)] = []
                let tasks = try await session.add(requests)
                added += tasks.filter { $0.state == .waiting }.count
                for (task, request) in zip(tasks, requests) {
                    if task.state == .failed || task.state == .cancelled || task.state == .paused { again.append(task.id) }
                    // Finished in an earlier run, but its file is gone since (deleted, moved) or is not the file
                    // saved (truncated, rewritten): fetched again, as wget and curl would, instead of counted as
                    // finished. A changed file is left as it is.
                    if task.state == .finished, let path = task.filePath {
                        switch BatchReport.savedFile(found: BatchGet.found(at: path), saved: task.bytes) {
                        case .intact:
                            break
                        case .gone:
                            gone.append((task.id, request))
                        case .changed(let length):
                            gone.append((task.id, request))
                            if mode != .quiet {
                                Reporter.printError("haul: warning: " + BatchReport.changedLine(path: path, length: length, saved: task.bytes))
                            }
                        }
                    }
                }
                if !again.isEmpty { try await session.resume(again) }
                if !gone.isEmpty {
                    try await session.remove(gone.map(\.id))
                    _ = try await session.add(gone.map(\.request))
                }
            }
        } catch let error as InputError {
            // The list changed since its first reading.
            await session.close()
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.usage)
        }

        let waiter = Task { await session.waitUntilIdle() }
        let signals = SignalForwarder { waiter.cancel() }
        let deadline = stopAt.map { stopAt in
            Task {
                try await Task.sleep(until: stopAt, clock: .continuous)
                waiter.cancel()
            }
        }
        await waiter.value
        deadline?.cancel()
        signals.stop()
        let interrupted = waiter.isCancelled
        // As for one URL: the deadline's task ended without being cancelled only when it stopped the batch.
        let stoppedByMaxTime = (try? await deadline?.value) != nil && interrupted
        // The outcome, read a page at a time: counts, the first failures and the first one's kind.
        var finished = 0, unfinished = 0, failed = 0
        var failures: [TaskSnapshot] = []
        try await session.forEachTask { task in
            if task.state == .finished {
                finished += 1
            } else {
                unfinished += 1
                if task.state == .failed { failed += 1 }
                if failures.count < BatchReport.namedFailures { failures.append(task) }
            }
        }
        poller?.cancel()
        await poller?.value
        await session.close()
        printer.cancel()
        // After this no event draws again: the last lines below are the summary's.
        reporter.finish()
        if !interrupted { await hook?.waitForAll() }
        if interrupted {
            let line = BatchReport.interruptedLine(paused: unfinished - failed, failed: failed)
            if stoppedByMaxTime, let maxTime = command.maxTime {
                // As one URL stopped by --max-time: a network failure (exit 3), its state kept for a rerun.
                Reporter.printError("haul: stopped after --max-time \(maxTime.value.formatted()) s: " + line)
                throw ExitCode(ExitStatus.code(for: .network))
            }
            Reporter.printError("haul: " + line)
            throw ExitCode(ExitStatus.interrupted)
        }
        if mode != .quiet && mode != .json {
            // The failures by name and reason (the first ten), however many lines scrolled past or were only counted.
            let lines = BatchReport.summary(
                finished: finished, failures: failures.map { BatchReporter.failure(of: $0) }, failed: unfinished, width: reporter.terminalWidth)
            for line in lines { Reporter.printError(line) }
        }
        if let first = failures.first {
            throw ExitCode(ExitStatus.code(for: first.error?.kind ?? .network))
        }
    }

    /// What the first reading of a batch found.
    struct FirstReading {
        /// The session's name: the same URLs into the same places make the same session.
        var identifier: String
        /// How many entries the batch has.
        var count: Int
        /// The files its entries name, and the entries that repeat another.
        var destinations: ListDestinations
    }

    /// The session's name for the batch's entries, how many there are, and the files they name: each entry's spec is
    /// made (so a bad line is refused before anything is fetched), its URL and destination hashed, and two entries
    /// saving to one file refused.
    static func name(command: GetCommand, entries: Entries) async throws -> FirstReading {
        let maker = try command.specMaker()
        var hash = Hash()
        var destinations = ListDestinations()
        var count = 0
        var arguments = 0
        while true {
            let part = try entries.next(tasksPerAdd)
            if part.isEmpty { break }
            for entry in part {
                let spec = try maker.spec(for: entry)
                try BatchGet.claim(spec, of: entry, from: BatchGet.source(of: entry, arguments: &arguments), in: &destinations,
                                   keepingFirst: command.file.noClobber)
                hash.add(spec)
            }
            count += part.count
            // Long lists: the other tasks of this process (signals, the terminal) get their turn.
            await Task.yield()
        }
        return FirstReading(identifier: hash.identifier, count: count, destinations: destinations)
    }

    /// Notes in `destinations` the file `spec` (of `entry`, from `source`) saves to, as a batch's first reading does
    /// (`haul get -i` and `haul add -i`): known before any request, it is its `out=`, or the name its URL gives under
    /// -c, -N, -nc or --overwrite. Two entries of one file are refused; under -nc (`keepingFirst`) they are wget's
    /// "keep the first", the later one in the list not retrieved, whichever download would have ended first.
    static func claim(
        _ spec: DownloadSpec, of entry: InputList.Entry, from source: ListDestinations.Source, in destinations: inout ListDestinations,
        keepingFirst: Bool
    ) throws {
        var file: String?
        if case .file(let path)? = spec.destination { file = path }
        let claim = destinations.claim(
            url: spec.url.absoluteString, destination: Hash.destination(of: spec), file: file, source: source,
            named: entry.output != nil, keepingFirst: keepingFirst)
        if case .conflict(let earlier) = claim, let file {
            throw InputError(ListDestinations.conflict(earlier: earlier, entry: source, path: file))
        }
    }

    /// Under -nc, whether `spec` (from `source`) saves to a file an earlier entry of the batch saves to: it is not
    /// retrieved (``claim(_:of:from:in:keepingFirst:)`` said so once).
    static func isLater(_ spec: DownloadSpec, from source: ListDestinations.Source, in destinations: ListDestinations) -> Bool {
        guard case .file(let path)? = spec.destination else { return false }
        return !destinations.isFirst(source, toSave: path)
    }

    /// Where `entry` comes from, for messages and for `-nc`'s "first of a file": a line of the list, or (line 0) the
    /// next URL given as an argument, `arguments` counting them in the order read. Both readings of a batch count so.
    static func source(of entry: InputList.Entry, arguments: inout Int) -> ListDestinations.Source {
        guard entry.line == 0 else { return .line(entry.line) }
        arguments += 1
        return .argument(arguments)
    }

    /// The `-i` list `list` (a file, or `-` for standard input), held open for the two readings of a batch: standard
    /// input, a pipe or a FIFO (`-i <(command)`) kept first in a private file of `home`, read as it arrives within the
    /// limits of a list.
    static func open(_ list: String?, home: HaulHome) async throws -> URLListFile? {
        guard let list else { return nil }
        let standardInput = URLList.standardInputNames.contains(list)
        let name = standardInput ? "the URL list on standard input" : "the URL list \(list)"
        return try await URLListFile.open(standardInput ? nil : list, name: name) {
            try home.prepare()
            let folder = home.path + "/tmp"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            return folder
        }
    }

    /// How many tasks each part of a long list adds (after a first part of twice `-j`).
    /// What is at `path`, not following a final symbolic link: whether a regular file, and its length; `nil` when
    /// nothing is.
    static func found(at path: String) -> (isRegular: Bool, length: Int64)? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
        let isRegular = (attributes[.type] as? FileAttributeType) == .typeRegular
        return (isRegular, (attributes[.size] as? NSNumber)?.int64Value ?? -1)
    }

    static let tasksPerAdd = 256
    /// Added tasks whose events may wait to be read.
    static let eventsAhead = 2048

    /// The name of a batch's session: the same URLs into the same place make the same session, so re-running the
    /// command resumes it (FNV-1a over each URL and destination, as earlier versions named it).
    struct Hash {
        private var value: UInt64 = 0xcbf2_9ce4_8422_2325

        /// Where `spec` saves, as a key: its file, its folder, or nothing (standard output).
        static func destination(of spec: DownloadSpec) -> String {
            switch spec.destination {
            case .file(let path): "f:" + path
            case .directory(let path): "d:" + path
            case .standardOutput?, nil: ""
            }
        }

        mutating func add(_ spec: DownloadSpec) {
            for byte in (spec.url.absoluteString + "\n" + Self.destination(of: spec) + "\n").utf8 {
                value = (value ^ UInt64(byte)) &* 0x100_0000_01b3
            }
        }

        var identifier: String { "get-" + String(value, radix: 16) }
    }
}
