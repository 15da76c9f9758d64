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
            emit(["event": "failed", "kind": error.kind.rawValue, "error": error.line, "exit_code": Int(exitCode)])
        }
        area.close()
        Reporter.printError("haul: \(error.kind == .interrupted ? "" : "error: ")\(error.line)")
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

    static func printError(_ line: String) {
        write(line + "\n", to: STDERR_FILENO)
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
            if result.alreadyComplete {
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
        case .started(let url, let path, let resumedFrom, let total):
            emit(["event": "started", "url": url, "path": path, "resumed_from": resumedFrom, "total": total as Any])
        case .progress(let p):
            var object: [String: Any] = [
                "event": "progress", "bytes": p.bytes, "total": p.total as Any, "bytes_per_second": p.bytesPerSecond.map { $0.rounded() } as Any,
                "eta_seconds": p.secondsRemaining.map { ($0 * 10).rounded() / 10 } as Any,
            ]
            if let segments = p.segments {
                object["segments"] = segments.map { ["start": $0.start, "end": $0.end, "done": $0.done] }
            }
            emit(object)
        case .retrying(let retry, let maxRetries, let delay, let reason):
            emit(["event": "retrying", "retry": retry, "max_retries": maxRetries, "delay_seconds": delay.seconds, "reason": reason])
        case .restarted(let reason):
            emit(["event": "restarted", "reason": reason])
        case .singleConnection(let reason):
            emit(["event": "single_connection", "reason": reason])
        case .waitingForConnection(let host):
            emit(["event": "waiting_for_connection", "host": host])
        case .finished(let r):
            emit(["event": "finished", "path": r.path, "bytes": r.bytes, "fetched_bytes": r.fetchedBytes,
                  "already_complete": r.alreadyComplete, "checksum": r.checksum?.description as Any])
        }
    }

    private func emit(_ object: [String: Any]) {
        let cleaned = object.mapValues { value -> Any in
            if let optional = value as? OptionalProtocol { return optional.unwrapped ?? NSNull() }
            return value
        }
        guard let data = try? JSONSerialization.data(withJSONObject: cleaned, options: [.sortedKeys]) else { return }
        Reporter.write(String(decoding: data, as: UTF8.self) + "\n", to: STDOUT_FILENO)
    }
}

private protocol OptionalProtocol { var unwrapped: Any? { get } }
extension Optional: OptionalProtocol {
    var unwrapped: Any? { self.map { $0 as Any } }
}

private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
