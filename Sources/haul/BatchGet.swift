import ArgumentParser
import Foundation
import HaulKit

/// `haul get` with several URLs: one download session, at most `-j` at once, resumable as a whole.
struct BatchGet {
    let command: GetCommand
    let urls: [InputList.Entry]

    func run() async throws {
        let requests: [DownloadRequest]
        do {
            requests = try command.makeSpecs(urls: urls).map { spec in
                var request = DownloadRequest(spec)
                // --limit-rate caps the whole batch: the session's limit, not each task's.
                request.rateLimit = nil
                return request
            }
        } catch let error as InputError {
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.usage)
        }
        command.connection.warnIfInsecure()
        var configuration = SessionConfiguration()
        configuration.maxConcurrentDownloads = command.jobs
        configuration.stallTimeout = .milliseconds(Int64(command.stallTimeout * 1000))
        configuration.rateLimit = try? command.file.limitRate.map { try UserInput.byteCount($0) }
        let identifier = BatchGet.identifier(for: requests)
        let hook = OnComplete(command.onComplete, toStandardError: command.json)
        if let hook { configuration.onCompletion = { hook.run(for: $0, session: identifier) } }
        let session: DownloadSession
        do {
            session = try await DownloadSession(identifier: identifier, configuration: configuration)
        } catch let error as HaulError {
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.code(for: error.kind))
        }
        let mode: BatchReporter.Mode = command.json ? .json : command.quiet ? .quiet : (LiveArea.isLiveTerminal() ? .terminal : .plain)
        let reporter = BatchReporter(mode: mode)
        let events = await session.events()
        let printer = Task { for await event in events { reporter.handle(event) } }

        // Added a few at a time, the first downloads start at once instead of after the whole list is stored, and
        // the session answers its running downloads between the parts.
        var ids = Set<String>()
        var again: [String] = []
        var start = 0
        while start < requests.count {
            let end = min(requests.count, start + (start == 0 ? 2 * command.jobs : BatchGet.tasksPerAdd))
            for task in try await session.add(Array(requests[start..<end])) {
                ids.insert(task.id)
                // Re-running the command retries what failed or was cancelled last time.
                if task.state == .failed || task.state == .cancelled || task.state == .paused { again.append(task.id) }
            }
            start = end
        }
        try await session.resume(again)

        let waiter = Task { await session.waitUntilIdle() }
        let signals = SignalForwarder { waiter.cancel() }
        await waiter.value
        signals.stop()
        let interrupted = waiter.isCancelled
        let final = try await session.tasks().filter { ids.contains($0.id) }
        await session.close()
        printer.cancel()
        // After this no event draws again: the last lines below are the summary's.
        reporter.finish()
        if !interrupted { await hook?.waitForAll() }
        if interrupted {
            Reporter.printError("haul: paused \(final.filter { $0.state != .finished }.count) downloads; run the same command again to resume")
            throw ExitCode(ExitStatus.interrupted)
        }
        let finished = final.filter { $0.state == .finished }.count
        let failed = final.filter { $0.state != .finished }
        if mode != .quiet && mode != .json {
            Reporter.printError("\(finished) finished, \(failed.count) failed")
        }
        if let first = failed.first {
            throw ExitCode(ExitStatus.code(for: first.error?.kind ?? .network))
        }
    }

    /// How many tasks each part of a long list adds (after a first part of twice `-j`).
    static let tasksPerAdd = 256

    /// The same URLs into the same place make the same session, so re-running the command resumes it.
    static func identifier(for requests: [DownloadRequest]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for request in requests {
            let destination: String
            switch request.destination {
            case .file(let path): destination = "f:" + path
            case .directory(let path): destination = "d:" + path
            case .standardOutput?, nil: destination = ""
            }
            for byte in (request.url.absoluteString + "\n" + destination + "\n").utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
        }
        return "get-" + String(hash, radix: 16)
    }
}

/// Shows a batch: on a terminal one line per active download plus a total line, else one line per result.
final class BatchReporter: @unchecked Sendable {
    enum Mode { case terminal, plain, quiet, json }

    private let mode: Mode
    private let lock = NSLock()
    private var active: [String: (name: String, progress: DownloadProgress?)] = [:]
    private var order: [String] = []
    private var names: [String: String] = [:]
    private var finished = 0
    private var failed = 0
    private let area = LiveArea()
    private var lastDraw = ContinuousClock.now - .seconds(1)
    /// The tasks are the daemon's (`haul watch`): a failure's next step is `haul resume ID`, not the same command.
    private let daemonTasks: Bool

    init(mode: Mode, daemonTasks: Bool = false) {
        self.mode = mode
        self.daemonTasks = daemonTasks
    }

    /// Starts from tasks that already exist (`haul watch`): their names, and the running ones as active.
    func seed(_ tasks: [TaskSnapshot]) {
        lock.lock()
        defer { lock.unlock() }
        for task in tasks {
            names[task.id] = BatchReporter.shortName(Redaction.url(task.url))
            if task.state == .running {
                active[task.id] = (names[task.id] ?? task.id, nil)
                order.append(task.id)
            }
        }
    }

    func handle(_ event: SessionEvent) {
        lock.lock()
        defer { lock.unlock() }
        if mode == .json { return json(event) }
        switch event {
        case .added(let task):
            names[task.id] = BatchReporter.shortName(Redaction.url(task.url))
        case .stateChanged(let id, _, let to):
            if to == .running {
                active[id] = (names[id] ?? id, nil)
                order.append(id)
            } else {
                active[id] = nil
                order.removeAll { $0 == id }
            }
        case .progress(let id, let progress):
            if active[id] != nil { active[id]?.progress = progress }
        case .finished(let task):
            finished += 1
            if mode != .quiet { say("saved \(task.filePath ?? Redaction.url(task.url)) (\(ByteFormat.string(task.bytes)))") }
        case .failed(let task):
            failed += 1
            let line = task.error.map { daemonTasks ? $0.line(task: task.id) : $0.line } ?? "failed"
            say("haul: error: " + Reporter.failure(of: Redaction.url(task.url), line))
        case .allFinished:
            break
        }
        draw()
    }

    /// Clears the live lines for good (later events draw nothing).
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        area.close()
    }

    private func say(_ line: String) {
        area.say(line)
        // The lines it replaced come back at once, not at the next frame.
        lastDraw = ContinuousClock.now - .seconds(1)
    }

    private func draw() {
        guard mode == .terminal else { return }
        let now = ContinuousClock.now
        guard now - lastDraw >= .milliseconds(200) else { return }
        lastDraw = now
        let size = area.layoutSize
        let states = order.compactMap { id in active[id].map { Reporter.state(of: $0.progress, name: $0.name) } }
        let speed = active.values.compactMap { $0.progress?.bytesPerSecond }.reduce(0, +)
        let summary = ProgressLine.summary(
            finished: finished, failed: failed, running: active.count, bytesPerSecond: speed, width: size.width)
        area.draw(ProgressLine.view(states, summary: summary, width: size.width, height: size.height))
    }

    private func json(_ event: SessionEvent) {
        Reporter.write(EventJSON.session(event, redacting: true).serialized + "\n", to: STDOUT_FILENO)
    }

    static func shortName(_ url: String) -> String {
        let last = URL(string: url)?.lastPathComponent ?? url
        return last.isEmpty || last == "/" ? url : last
    }
}
