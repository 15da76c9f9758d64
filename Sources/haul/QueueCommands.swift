import ArgumentParser
import Foundation
import HaulKit

struct AddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Queue downloads in the haul daemon and return at once; prints one task id per line.",
        discussion: """
            The daemon (started if none is running) downloads them after this command has exited; see `haul ls`, `haul watch`, `haul wait`.

            """ + HelpText.examples(
                "haul add https://example.com/big.iso --dir ~/Downloads",
                "haul add -i urls.txt --priority 5 --limit-rate 1M",
                "id=$(haul add https://example.com/big.iso) && haul wait \"$id\"",
                "haul add --session my-app https://example.com/a.iso"
            )
    )

    @OptionGroup var list: URLList

    @Option(parsing: .unconditional, help: "Higher runs first.")
    var priority = 0

    @Option(help: "A task id of your choosing (one URL only); adding the same id again returns the existing task.")
    var id: String?

    @Option(name: .customLong("on-complete"), help: "A shell command the daemon runs after each of these downloads finishes or fails, with HAUL_TASK_* set.")
    var onComplete: String?

    @OptionGroup(title: HelpText.addFileOptions)
    var file: FileOptions

    @OptionGroup(title: HelpText.addConnectionOptions)
    var connection: ConnectionOptions

    @OptionGroup var daemon: DaemonClientOptions

    func run() async throws {
        let requests: [JSONValue]
        do {
            requests = try makeRequests()
        } catch let error as InputError {
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.usage)
        }
        self.connection.warnIfInsecure()
        do {
            let connection = try await daemon.connect()
            // Sent in chunks that fit a message each, however many URLs there are.
            for id in try await connection.add(requests) { print(id) }
            await connection.close()
        } catch {
            throw CLIFailure.exit(error)
        }
    }

    private func makeRequests() throws -> [JSONValue] {
        let all = try list.collect()
        try file.checkCount(all.count)
        if all.count > 1, id != nil { throw InputError("--id names one task; give one URL with it") }
        if let output = file.output, FileOptions.standardOutputNames.contains(output) {
            throw InputError("the daemon saves files; -o - (standard output) works with haul get only")
        }
        guard abs(priority) <= 1_000_000_000 else { throw InputError("--priority must be between -1000000000 and 1000000000") }
        return try all.map { url in
            var spec = try file.makeSpec(url: url)
            try connection.apply(to: &spec)
            if let onComplete, !onComplete.isEmpty { spec.completionCommand = onComplete }
            let request = DownloadRequest(spec, priority: priority, id: id)
            return DaemonProtocol.encode(request)
        }
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls", abstract: "List the daemon's tasks: id, state, bytes, total, speed, path.",
        discussion: HelpText.examples(
            "haul ls",
            "haul ls --json                        # every task as JSON, for scripts",
            "haul ls --session my-app"
        ))

    @Flag(help: "One JSON object per task and line.")
    var json = false

    @OptionGroup var daemon: DaemonClientOptions

    func run() async throws {
        do {
            let connection = try await daemon.connect()
            let tasks = try await connection.tasks()
            await connection.close()
            if json {
                for task in tasks { print(EventJSON.task(task).serialized) }
                return
            }
            // A fleet's tasks show the node that runs them (or ran them last); on one machine there is no such column.
            let fleet = tasks.contains { $0.node != nil }
            let rows = tasks.map { task in
                [
                    task.id, task.state.rawValue, ByteFormat.string(task.bytes), task.total.map(ByteFormat.string) ?? "-",
                    task.bytesPerSecond.map { ByteFormat.string(Int64($0)) + "/s" } ?? "-",
                ] + (fleet ? [task.node.map(TerminalText.sanitized) ?? "-"] : []) + [
                    task.filePath ?? Redaction.url(task.url),
                    // Why it failed, or why a running task is not moving.
                    task.error?.message ?? task.note ?? "",
                ]
            }
            let header = ["ID", "STATE", "BYTES", "TOTAL", "SPEED"] + (fleet ? ["NODE"] : []) + ["PATH", "NOTE"]
            print(Self.table([header] + rows), terminator: "")
        } catch {
            throw CLIFailure.exit(error)
        }
    }

    static func table(_ rows: [[String]]) -> String {
        let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }.joined(separator: "\n") + "\n"
    }
}

/// `pause`, `resume` and `rm`: the same selection of tasks, one method each.
struct TaskSelection: ParsableArguments {
    @Argument(help: "Task ids (or unique prefixes of them).")
    var ids: [String] = []

    @Flag(help: "Every task of the session.")
    var all = false

    func params(_ connection: DaemonConnection) async throws -> [String: JSONValue] {
        if all {
            guard ids.isEmpty else { throw CLIFailure(HaulError(.usage, "give task ids or --all, not both")) }
            return ["all": true]
        }
        guard !ids.isEmpty else { throw CLIFailure(HaulError(.usage, "give at least one task id, or --all")) }
        return ["ids": .array(try await connection.resolve(ids).map(JSONValue.string))]
    }
}

struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause", abstract: "Pause tasks; running ones save their progress first.",
        discussion: HelpText.examples("haul pause 3f2a                       # a unique prefix of the id is enough", "haul pause --all"))
    @OptionGroup var selection: TaskSelection
    @OptionGroup var daemon: DaemonClientOptions
    func run() async throws { try await control(.pauseTasks, selection, daemon) }
}

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Queue paused, failed or cancelled tasks again.",
        discussion: HelpText.examples("haul resume 3f2a", "haul resume --all"))
    @OptionGroup var selection: TaskSelection
    @OptionGroup var daemon: DaemonClientOptions
    func run() async throws { try await control(.resumeTasks, selection, daemon) }
}

struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Remove tasks, cancelling running ones and deleting their partial data.",
        discussion: HelpText.examples(
            "haul rm 3f2a",
            "haul rm --delete-file 3f2a            # also the downloaded file",
            "haul rm --all"
        ))
    @OptionGroup var selection: TaskSelection
    @Flag(name: .customLong("delete-file"), help: "Also delete the downloaded files of finished tasks.")
    var deleteFile = false
    @OptionGroup var daemon: DaemonClientOptions
    func run() async throws { try await control(.removeTasks, selection, daemon, ["deleteFile": .bool(deleteFile)]) }
}

private func control(
    _ method: DaemonMethod, _ selection: TaskSelection, _ daemon: DaemonClientOptions, _ extra: [String: JSONValue] = [:]
) async throws {
    do {
        let connection = try await daemon.connect()
        let params = try await selection.params(connection).merging(extra) { first, _ in first }
        _ = try await connection.call(method, params)
        await connection.close()
    } catch {
        throw CLIFailure.exit(error)
    }
}

private extension String {
    func trimmingTrailingSpaces() -> String {
        var text = Substring(self)
        while text.last == " " { text.removeLast() }
        return String(text)
    }
}
