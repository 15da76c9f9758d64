import ArgumentParser
import Foundation
import HaulKit
import NIOConcurrencyHelpers

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Show live progress of tasks (default: every waiting or running one) until they end.",
        discussion: HelpText.examples(
            "haul watch", "haul watch 3f2a 91bc",
            "haul watch --json            # the protocol's events, one per line"))

    @Argument(help: "Task ids (or unique prefixes).")
    var ids: [String] = []

    @Flag(help: "One JSON event per line on stdout, as `haul get --json` and the daemon's protocol write them.")
    var json = false

    @OptionGroup var daemon: DaemonClientOptions

    func run() async throws {
        let terminal = !json && LiveArea.isLiveTerminal()
        let reporter = BatchReporter(mode: json ? .json : terminal ? .terminal : .plain, daemonTasks: true)
        var lastPlain = ContinuousClock.now - .seconds(2)
        let final: [TaskSnapshot]
        do {
            final = try await TaskFollower(options: daemon, typed: ids).follow(
                seed: { reporter.seed($0) }, event: { reporter.handle($0) },
                tick: { tasks, atOnce in
                    // The list says what events do not: the file a task was named, and why a running one is not moving.
                    reporter.update(tasks, countsWaiting: true, atOnce: atOnce)
                    // Without a terminal, a progress line per running task every few seconds.
                    guard !terminal, !json, ContinuousClock.now - lastPlain >= .seconds(2) else { return }
                    lastPlain = ContinuousClock.now
                    let prefixes = Dictionary(zip(tasks.map(\.id), TaskTable.uniquePrefixes(tasks.map(\.id))), uniquingKeysWith: { a, _ in a })
                    for task in tasks where task.state == .running {
                        let line = ProgressLine.render(BatchReporter.plainState(of: task), width: .max)
                        Reporter.printError("\(prefixes[task.id] ?? task.id)  \(line)")
                    }
                })
        } catch {
            reporter.finish()
            throw CLIFailure.exit(error)
        }
        let width = reporter.terminalWidth
        reporter.finish()
        let counts = Dictionary(grouping: final, by: { $0.state }).mapValues { $0.count }
        let summary = TaskState.allCases.compactMap { state in counts[state].map { "\($0) \(state.rawValue)" } }
        var lines = [summary.isEmpty ? "no tasks to watch" : summary.joined(separator: ", ")]
        // The failures by name and reason, however many scrolled past or were only counted.
        let failures = final.filter { $0.state == .failed }.map { BatchReporter.failure(of: $0, daemonTasks: true) }
        lines += BatchReport.summary(finished: 0, failures: failures, width: width).dropFirst()
        for line in lines { Reporter.printError(width.map { TerminalText.fit(line, width: $0, cut: .end) } ?? line) }
        // As `haul wait`: a failed task's error gives the exit code, a cancelled or removed one 1.
        if let code = TaskOutcome.exitCode(final, typed: ids).code { throw ExitCode(code) }
    }
}

/// How followed tasks ended, as `haul wait` and `haul watch` report it.
enum TaskOutcome {
    /// The exit code (nil for 0: every task finished) and a line for each task that did not finish: the first
    /// failed task's error kind gives the code; a cancelled or removed task, 1.
    static func exitCode(_ final: [TaskSnapshot], typed: [String]) -> (code: Int32?, lines: [String]) {
        var code: Int32 = 0
        var lines: [String] = []
        for task in final where task.state != .finished {
            let error = task.error ?? HaulError(.usage, "was \(task.state.rawValue)")
            lines.append("haul: error: \(task.id): " + Reporter.failure(of: Redaction.url(task.url), error.line(task: task.id)))
            if code == 0 { code = task.state == .failed ? ExitStatus.code(for: error.kind) : 1 }
        }
        let present = Set(final.map(\.id))
        for id in TaskFollower.resolvedTargets(final, typed: typed) where !present.contains(id) {
            lines.append("haul: error: \(id) was removed")
            if code == 0 { code = 1 }
        }
        return (code == 0 ? nil : code, lines)
    }
}

struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Block until tasks end; exit 0 only if all finished successfully.",
        discussion: """
            Paused tasks are still waited for (they may be resumed). A failed task makes the exit code its error's; a cancelled or removed one, 1. \
            With --all, every task of the session is waited for, as pause, resume and rm --all take them: one that failed or was cancelled before counts too.

            """ + HelpText.examples(
                "haul wait 3f2a && echo done",
                "id=$(haul add https://example.com/big.iso) && haul wait \"$id\"",
                "haul add -i urls.txt && haul wait --all"
            )
    )

    @Argument(help: "Task ids (or unique prefixes).")
    var ids: [String] = []

    @Flag(help: "Every task of the session.")
    var all = false

    @OptionGroup var daemon: DaemonClientOptions

    func validate() throws {
        if all, !ids.isEmpty { throw InputError("give task ids or --all, not both") }
        if !all, ids.isEmpty { throw InputError("give at least one task id, or --all") }
    }

    func run() async throws {
        let final: [TaskSnapshot]
        do {
            final = try await TaskFollower(options: daemon, typed: ids, everyTask: all, readsSettings: false)
                .follow(seed: { _ in }, event: { _ in }, tick: { _, _ in })
        } catch {
            throw CLIFailure.exit(error)
        }
        let outcome = TaskOutcome.exitCode(final, typed: ids)
        for line in outcome.lines { Reporter.printError(line) }
        if let code = outcome.code { throw ExitCode(code) }
    }
}

/// Follows tasks through the daemon until none of them is waiting or running, reconnecting (and so
/// restarting the daemon) when the connection drops.
struct TaskFollower {
    var options: DaemonClientOptions
    var typed: [String]
    /// Without ids: every task of the session (`haul wait --all`), not only the waiting and running ones.
    var everyTask = false
    /// Whether each tick also reads the session's downloads at once (why tasks wait, for `haul watch`).
    var readsSettings = true
    /// Reconnections allowed in a row without progress.
    static let maxReconnects = 20

    /// Returns the tasks as they ended (removed ones are missing).
    func follow(
        seed: ([TaskSnapshot]) -> Void, event: @escaping @Sendable (SessionEvent) -> Void, tick: ([TaskSnapshot], Int?) -> Void
    ) async throws -> [TaskSnapshot] {
        /// The followed tasks, in the order they were added.
        var targets: [String]?
        // Events reach `event` only for the followed tasks (and the queue-wide ones), once those are known.
        let followed = NIOLockedValueBox<Set<String>?>(nil)
        var failures = 0
        while true {
            do {
                let connection = try await options.connect()
                defer { Task { await connection.close() } }
                let wakeup = Wakeup()
                let notifications = connection.client.notifications
                // The tasks whose end was shown from its event (the rest are shown from the last list).
                let shownEnds = NIOLockedValueBox<Set<String>>([])
                let consumer = Task {
                    for await (method, params) in notifications where method == "event" {
                        guard let (decoded, _) = params["event"].flatMap(DaemonProtocol.decodeEvent) else { continue }
                        if let id = decoded.taskID, followed.withLockedValue({ $0?.contains(id) }) != true { continue }
                        switch decoded {
                        case .finished(let task), .failed(let task): shownEnds.withLockedValue { _ = $0.insert(task.id) }
                        default: break
                        }
                        event(decoded)
                        if case .progress = decoded { continue }
                        wakeup.fire()
                    }
                    wakeup.fire()
                }
                defer { consumer.cancel() }
                // Subscribed before the tasks are read: no event between the two is missed.
                let exists = try await connection.subscribe()
                if targets == nil {
                    let all = exists ? try await connection.tasks() : []
                    let chosen = typed.isEmpty
                        ? Set(all.filter { everyTask || $0.state == .waiting || $0.state == .running }.map(\.id))
                        : Set(try await connection.resolve(typed, among: all.map(\.id)))
                    targets = all.map(\.id).filter { chosen.contains($0) }
                    followed.withLockedValue { $0 = chosen }
                    seed(all.filter { chosen.contains($0.id) })
                }
                let wanted = targets ?? []
                if wanted.isEmpty || !exists { return [] }
                while true {
                    let tasks = try await connection.tasks(ids: wanted)
                    failures = 0
                    let settings = readsSettings ? try? await connection.call(SessionSettings.self, NoParameters()) : nil
                    tick(tasks, settings?["maxConcurrentDownloads"]?.intValue)
                    if !tasks.contains(where: { $0.state == .waiting || $0.state == .running || $0.state == .paused }) {
                        // The list can overtake the last events (they are read by another task): an end not shown
                        // yet is shown from the list, once, after the reader stopped.
                        consumer.cancel()
                        await consumer.value
                        let shown = shownEnds.withLockedValue { $0 }
                        for task in tasks where !shown.contains(task.id) {
                            if task.state == .finished { event(.finished(task)) }
                            if task.state == .failed { event(.failed(task)) }
                        }
                        // Their ends are shown now: their journal entries need not wait for another client.
                        await connection.acknowledgeJournal(of: tasks.filter { $0.state == .finished || $0.state == .failed }.map(\.id))
                        return tasks
                    }
                    await wakeup.wait(timeout: .seconds(1))
                    if await connection.client.isClosed { break }
                }
            } catch let failure as CLIFailure where failure.error.kind != .network {
                throw failure
            } catch {
                failures += 1
                guard failures <= Self.maxReconnects, !options.noAutostart else { throw error }
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    static func resolvedTargets(_ final: [TaskSnapshot], typed: [String]) -> [String] {
        typed.filter { prefix in !final.contains { $0.id.hasPrefix(prefix) } }
    }
}

/// Wakes one waiter, or the next one when nobody waits yet.
final class Wakeup: Sendable {
    private let state = NIOLockedValueBox<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func fire() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.fired = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    func wait(timeout: Duration) async {
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.fire()
        }
        await withCheckedContinuation { continuation in
            let now = state.withLockedValue { state -> Bool in
                if state.fired {
                    state.fired = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }
}
