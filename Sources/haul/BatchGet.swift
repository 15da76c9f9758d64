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
        // --max-connections-per-host is the batch's per-host limit (over HTTP/1.1; an HTTP/2 host runs -j as streams).
        configuration.maxDownloadsPerHost = (try? command.file.connectionsPerHost()) ?? 8
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
        let reporter = BatchReporter(mode: mode, live: command.jobs, listEachFile: command.verbose)
        let events = await session.events()
        let printer = Task { for await event in events { reporter.handle(event) } }
        // On a terminal, the running tasks are read again every second: the file a --dir download was named, and
        // why one is not moving (a retry, a connection it waits for), which no event says.
        let poller = mode == .terminal ? Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                var shown: [TaskSnapshot] = []
                for id in reporter.activeIDs { if let task = try? await session.task(id) { shown.append(task) } }
                if !Task.isCancelled { reporter.update(shown, countsWaiting: false) }
            }
        } : nil

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
        poller?.cancel()
        await poller?.value
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
            // The failures by name and reason (the first ten), however many lines scrolled past or were only counted.
            let lines = BatchReport.summary(finished: finished, failures: failed.map { BatchReporter.failure(of: $0) }, width: reporter.terminalWidth)
            for line in lines { Reporter.printError(line) }
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
