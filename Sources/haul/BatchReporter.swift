import Foundation
import HaulKit

/// Shows a batch of downloads (`haul get` with several URLs, `haul watch`): on a terminal, a live view of the
/// downloads that move (named by their file, the URL only while there is none or where there is room) and a
/// line per finished or failed file while those fit on the screen, then only their count (every one with
/// `--verbose`); elsewhere, one line per result. Every line for a terminal fits its width (BatchReport and
/// ProgressLine decide; this class only draws).
final class BatchReporter: @unchecked Sendable {
    enum Mode { case terminal, plain, quiet, json }

    /// What is known of a task besides its progress.
    private struct Known {
        var url: String
        var path: String?
        /// Why a running task is not moving, and the bytes it held then (more bytes since clear it).
        var note: String?
        var noteBytes: Int64 = 0
    }

    private let mode: Mode
    private let listEachFile: Bool
    /// Tasks not yet running whose names are kept for the live view.
    static let knownAhead = 4_096
    private let lock = NSLock()
    private var known: [String: Known] = [:]
    private var active: [String: DownloadProgress?] = [:]
    private var order: [String] = []
    private var finished = 0
    /// How many `added` events were handled: the batch adds its list no faster than they are read (the session's
    /// event stream buffers what is not read yet, and a list of a million would otherwise wait there whole).
    private var addedHandled = 0
    private var failed = 0
    /// Tasks waiting to start, when the caller counts them (`haul watch`), and the session's downloads at once.
    private var waiting: Int?
    private var atOnce: Int?
    /// The per-host limit holding waiting tasks back while fewer run than may (a batch's session says).
    private var heldBackPerHost: Int?
    /// The held-back limit last written as a `heldBack` line (`--json`): a line is written when it changes.
    private var heldBackWritten: Int?
    /// Whether `allFinished` was written (`--json`): it stays the last line.
    private var allFinishedWritten = false
    /// The most downloads seen running at once: the live view's size, which per-file lines leave room for.
    private var mostActive: Int
    private var listed = 0
    private var countingOnly = false
    private let area = LiveArea()
    private var lastDraw = ContinuousClock.now - .seconds(1)

    /// The tasks are the daemon's (`haul watch`): a failure's next step is `haul resume ID`, not the same command.
    private let daemonTasks: Bool

    /// `live`: how many downloads may run at once (the view's expected size); `listEachFile`: a line per file on a
    /// terminal too (`--verbose`); `daemonTasks`: the tasks are the daemon's (`haul watch`).
    init(mode: Mode, live: Int = 1, listEachFile: Bool = false, daemonTasks: Bool = false) {
        self.mode = mode
        self.listEachFile = listEachFile
        self.mostActive = max(live, 1)
        self.daemonTasks = daemonTasks
    }

    /// The width lines for standard error are laid out for: the terminal's, one column short; nil when the output
    /// is not a live terminal (every line whole).
    var terminalWidth: Int? {
        lock.lock()
        defer { lock.unlock() }
        return mode == .terminal ? area.layoutSize.width : nil
    }

    /// The ids of the tasks shown as running.
    /// The `added` events handled so far.
    var addedCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return addedHandled
    }

    var activeIDs: [String] {
        lock.lock()
        defer { lock.unlock() }
        return order
    }

    /// Starts from tasks that already exist (`haul watch`).
    func seed(_ tasks: [TaskSnapshot]) {
        update(tasks, countsWaiting: true)
    }

    /// What a fresh list of tasks says: their files' paths, why running ones are not moving, which run; with
    /// `countsWaiting` the list is every followed task and gives the number waiting.
    func update(_ tasks: [TaskSnapshot], countsWaiting: Bool, atOnce: Int? = nil) {
        update(tasks, countsWaiting: countsWaiting, atOnce: atOnce, summary: nil)
    }

    /// ``update(_:countsWaiting:atOnce:)`` with what the session says of its waiting tasks (`haul get` of several):
    /// their number when it knows it, and the per-host limit holding them back.
    func update(_ tasks: [TaskSnapshot], summary: WaitingSummary?) {
        update(tasks, countsWaiting: false, atOnce: nil, summary: summary)
    }

    private func update(_ tasks: [TaskSnapshot], countsWaiting: Bool, atOnce: Int?, summary: WaitingSummary?) {
        lock.lock()
        defer { lock.unlock() }
        guard mode != .json else {
            if let summary { jsonHeldBack(summary) }
            return
        }
        for task in tasks {
            var entry = known[task.id] ?? Known(url: Redaction.url(task.url))
            if let path = task.filePath { entry.path = path }
            entry.note = task.state == .running ? task.note : nil
            entry.noteBytes = task.bytes
            known[task.id] = entry
            if task.state == .running, active[task.id] == nil {
                start(task.id)
                if task.bytes > 0 || task.bytesPerSecond != nil {
                    active[task.id] = DownloadProgress(bytes: task.bytes, total: task.total, bytesPerSecond: task.bytesPerSecond, secondsRemaining: nil)
                }
            }
        }
        if countsWaiting {
            // Every followed task (`haul watch`): the waiting ones say when their host's limit holds them back.
            waiting = tasks.filter { $0.state == .waiting }.count
            heldBackPerHost = tasks.lazy.filter { $0.state == .waiting }.compactMap { HeldBackNote.limit(in: $0.note) }.max()
        }
        if let atOnce { self.atOnce = atOnce }
        if let summary {
            waiting = summary.waiting
            heldBackPerHost = summary.heldBackPerHost
        }
        lastDraw = ContinuousClock.now - .seconds(1)
        draw()
    }

    func handle(_ event: SessionEvent) {
        lock.lock()
        defer { lock.unlock() }
        if case .added = event { addedHandled += 1 }
        if mode == .json {
            if case .allFinished = event { allFinishedWritten = true }
            return json(event)
        }
        switch event {
        case .added(let task):
            // Only what a live view may show soon: a batch of a million tasks is not held whole (a task that starts
            // unknown is named by the next reading of the running tasks, within a second).
            if mode == .terminal, known.count < Self.knownAhead { known[task.id] = Known(url: Redaction.url(task.url), path: task.filePath) }
            if task.state == .waiting, let count = waiting { waiting = count + 1 }
        case .stateChanged(let id, let from, let to):
            if from == .waiting, let count = waiting { waiting = max(count - 1, 0) }
            if to == .waiting, let count = waiting { waiting = count + 1 }
            if to == .running {
                start(id)
            } else {
                active[id] = nil
                order.removeAll { $0 == id }
                if to == .waiting || to == .paused { known[id]?.note = nil } else { known[id] = nil }
            }
        case .progress(let id, let progress):
            if active[id] != nil { active[id] = progress }
            if let entry = known[id], entry.note != nil, progress.bytes > entry.noteBytes { known[id]?.note = nil }
        case .finished(let task):
            finished += 1
            known[task.id] = nil
            if mode != .quiet {
                let path = task.filePath ?? Redaction.url(task.url)
                let size = ByteFormat.string(task.bytes)
                if task.keptExisting {
                    perFile { BatchReport.keptLine(path: path, width: $0) }
                } else {
                    perFile { BatchReport.savedLine(path: path, size: size, width: $0) }
                }
            }
        case .failed(let task):
            failed += 1
            known[task.id] = nil
            let failure = Self.failure(of: task, daemonTasks: daemonTasks)
            perFile { BatchReport.failureLine(failure, lead: "haul: error: ", width: $0) }
        case .removed(let id):
            active[id] = nil
            order.removeAll { $0 == id }
            known[id] = nil
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

    /// A failed task as the summary names it.
    static func failure(of task: TaskSnapshot, daemonTasks: Bool = false) -> BatchReport.Failure {
        let line = task.error.map { daemonTasks ? $0.line(task: task.id) : $0.line }
        return BatchReport.Failure(url: Redaction.url(task.url), path: task.filePath, message: line ?? "was \(task.state.rawValue)")
    }

    private func start(_ id: String) {
        guard active[id] == nil else { return }
        active[id] = .some(nil)
        order.append(id)
        mostActive = max(mostActive, order.count)
    }

    /// A line for one file: always when not on a terminal or with --verbose; on a terminal while such lines fit
    /// above the live view, then once a line saying the rest are counted.
    private func perFile(_ line: (Int?) -> String) {
        guard mode == .terminal else { return say(line(nil)) }
        let width = area.layoutSize.width
        if listEachFile { return say(line(width)) }
        if listed < BatchReport.listedLines(rows: area.layoutSize.height, live: mostActive) {
            listed += 1
            say(line(width))
        } else if !countingOnly {
            countingOnly = true
            say(TerminalText.fit(BatchReport.countedNotice, width: width, cut: .end))
        }
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
        let states = order.map { id in state(of: id) }
        let speed = active.values.compactMap { $0?.bytesPerSecond }.reduce(0, +)
        let summary = ProgressLine.summary(
            finished: finished, failed: failed, running: active.count, waiting: waiting ?? 0, atOnce: atOnce,
            heldBackPerHost: heldBackPerHost, bytesPerSecond: speed, width: size.width)
        area.draw(ProgressLine.view(states, summary: summary, width: size.width, height: size.height))
    }

    /// A running task's line: its file's name (the URL while it has none; beside the name where there is room),
    /// its figures once bytes move, or why it is not moving.
    private func state(of id: String) -> ProgressLine.State {
        let entry = known[id]
        let url = entry?.url ?? id
        let name = entry?.path.map(Self.fileName) ?? url
        let progress = active[id] ?? nil
        // Nothing held and nothing measured yet is still starting.
        let moving = progress.map { $0.bytes > 0 || ($0.bytesPerSecond ?? 0) > 0 } ?? false
        return ProgressLine.State(
            name: name, bytes: moving ? progress?.bytes : nil, total: progress?.total, bytesPerSecond: progress?.bytesPerSecond,
            secondsRemaining: progress?.secondsRemaining, note: entry?.note.map { BatchReport.withoutURL($0, url) },
            detail: entry?.path == nil ? nil : url)
    }

    /// What a plain progress line shows of a running task (`haul watch` without a terminal).
    static func plainState(of task: TaskSnapshot) -> ProgressLine.State {
        let url = Redaction.url(task.url)
        return ProgressLine.State(
            name: task.filePath.map(fileName) ?? url, bytes: task.bytes, total: task.total, bytesPerSecond: task.bytesPerSecond,
            note: task.note)
    }

    /// `--json`: a `heldBack` line whenever the per-host limit starts or stops holding waiting downloads back (or
    /// another limit does), as the total line says it on a terminal.
    private func jsonHeldBack(_ summary: WaitingSummary) {
        guard summary.heldBackPerHost != heldBackWritten, !allFinishedWritten else { return }
        heldBackWritten = summary.heldBackPerHost
        let line = BatchReporter.heldBackJSON(summary)
        Reporter.write(line.serialized + "\n", to: STDOUT_FILENO)
    }

    /// `{"type":"heldBack","limit":8,"waiting":120}`; `limit` null once nothing is held back any more, `waiting` null
    /// when the session does not count its waiting tasks (a long list).
    static func heldBackJSON(_ summary: WaitingSummary) -> JSONValue {
        [
            "type": "heldBack",
            "limit": summary.heldBackPerHost.map { JSONValue($0) } ?? .null,
            "waiting": summary.waiting.map { JSONValue($0) } ?? .null,
        ]
    }

    private func json(_ event: SessionEvent) {
        Reporter.write(EventJSON.session(event, redacting: true).serialized + "\n", to: STDOUT_FILENO)
    }

    static func fileName(_ path: String) -> String {
        let name = (path as NSString).lastPathComponent
        return name.isEmpty ? path : name
    }
}
