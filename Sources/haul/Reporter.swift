import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HaulKit

/// Shows a download's events: a live line on a terminal, plain lines otherwise, JSON lines for scripts.
final class Reporter: @unchecked Sendable {
    enum Mode { case terminal, plain, quiet, json }

    private let mode: Mode
    private let url: String
    private let lock = NSLock()
    private let area = LiveArea()
    private var path = ""
    private let started = Date()
    /// Names the download in JSON events, as a task id names a batch's downloads.
    private let id = UUID().uuidString.lowercased()
    /// The bytes held at the last event, for a failure's `task.bytes`.
    private var bytes: Int64 = 0

    init(mode: Mode, url: String) {
        self.mode = mode
        self.url = url
    }

    func handle(_ event: DownloadEvent) {
        lock.lock()
        defer { lock.unlock() }
        switch mode {
        case .json: json(event)
        case .quiet: break
        case .terminal, .plain: human(event)
        }
    }

    func failed(_ error: HaulError, exitCode: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if mode == .json {
            emit(EventJSON.downloadFailed(error, id: id, url: url, path: path.isEmpty ? nil : path, bytes: bytes, exitCode: exitCode))
        }
        area.close()
        // Stopped, not failed: Ctrl-C, or a reader that had what it wanted (`| head`).
        let stopped = error.kind == .interrupted || error.reason == .outputClosed
        Reporter.printError("haul: \(stopped ? "" : "error: ")\(error.line)")
    }

    /// Writes all of `text`, giving up quietly if the reader went away (a closed pipe must not stop a download).
    static func write(_ text: String, to fd: Int32) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { systemWrite(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Writes `line` to standard error, its control characters (a server's or a URL's escape sequences, which
    /// could clear the screen or retitle the window) shown as `?`.
    static func printError(_ line: String) {
        write(TerminalText.sanitizedLines(line) + "\n", to: STDERR_FILENO)
    }

    /// `URL: message` for a download's failure, or the message alone when it names the URL already
    /// ("http://host/f answered 404 Not Found"): an error line says each thing once.
    static func failure(of url: String, _ message: String) -> String {
        message.contains(url) ? message : "\(url): \(message)"
    }

    // MARK: Human output

    private func human(_ event: DownloadEvent) {
        switch event {
        case .started(_, let path, let resumedFrom, let total):
            self.path = path
            let size = total.map { " (\(ByteFormat.string($0)))" } ?? ""
            if resumedFrom > 0 {
                note("resuming \(path) at \(ByteFormat.string(resumedFrom))\(size)")
            } else {
                note("downloading \(url) to \(path)\(size)")
            }
        case .progress(let progress):
            guard mode == .terminal else { return }
            area.draw([ProgressLine.render(Reporter.state(of: progress), width: area.layoutSize.width)])
        case .retrying(let retry, let maxRetries, let delay, let reason):
            note("\(reason); retry \(retry)/\(maxRetries) in \(String(format: "%.1f", delay.seconds))s")
        case .restarted(let reason):
            note("starting over: \(reason)")
        case .singleConnection(let reason):
            note("using one connection: \(reason)")
        case .waitingForConnection(let host):
            note("waiting for a connection to \(host) (the other downloads use them all)")
        case .finished(let result):
            if result.keptExisting {
                note("\(result.path) is already there; not retrieving it (-nc)")
            } else if result.notModified {
                let verified = result.checksum.map { ", \($0.algorithm.rawValue) verified" } ?? ""
                note("\(result.path) is up to date: the server's copy is not newer (\(ByteFormat.string(result.bytes))\(verified))")
            } else if result.alreadyComplete {
                note("\(result.path) is already complete (\(ByteFormat.string(result.bytes)))")
            } else {
                let elapsed = max(Date().timeIntervalSince(started), 0.001)
                let speed = ByteFormat.string(Int64(Double(result.fetchedBytes) / elapsed))
                let verified = result.checksum.map { ", \($0.algorithm.rawValue) verified" } ?? ""
                note("saved \(result.path) (\(ByteFormat.string(result.bytes)) in \(String(format: "%.1f", elapsed))s, \(speed)/s\(verified))")
            }
        }
    }

    private func note(_ line: String) {
        area.say(line)
    }

    /// What a progress line shows of `progress` (with `name` for one of several downloads).
    static func state(of progress: DownloadProgress?, name: String? = nil) -> ProgressLine.State {
        ProgressLine.State(
            name: name, bytes: progress?.bytes, total: progress?.total, bytesPerSecond: progress?.bytesPerSecond,
            secondsRemaining: progress?.secondsRemaining)
    }

    /// The whole progress line, for output that is not a terminal (no width to fit).
    static func progressLine(_ progress: DownloadProgress) -> String {
        ProgressLine.render(state(of: progress), width: .max)
    }

    // MARK: JSON output

    private func json(_ event: DownloadEvent) {
        switch event {
        case .started(_, let path, let resumedFrom, _):
            self.path = path
            bytes = resumedFrom
        case .progress(let progress): bytes = progress.bytes
        case .finished(let result): bytes = result.bytes
        case .retrying, .restarted, .singleConnection, .waitingForConnection: break
        }
        emit(EventJSON.download(event, id: id, url: url))
    }

    private func emit(_ object: JSONValue) {
        Reporter.write(object.serialized + "\n", to: STDOUT_FILENO)
    }
}

private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
