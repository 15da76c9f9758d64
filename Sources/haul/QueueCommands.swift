import ArgumentParser
import Foundation
import HaulKit
import NIOConcurrencyHelpers

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

    /// The command's own range and what the daemon cannot do, before anything runs (the file options check theirs in
    /// ``FileOptions/validate()``).
    func validate() throws {
        guard abs(priority) <= 1_000_000_000 else { throw InputError("--priority must be between -1000000000 and 1000000000") }
        if let output = file.output, FileOptions.standardOutputNames.contains(output) {
            throw InputError("the daemon saves files; -o - (standard output) works with haul get only")
        }
    }

    func run() async throws {
        let arguments = list.urls.map { InputList.Entry(url: $0, line: 0) }
        let listFile: URLListFile?
        let cookies: GivenCookies
        // Under -nc, the files the entries save to, from the first reading: the entry each keeps.
        let firstOfEachFile: ListDestinations
        do {
            listFile = try await BatchGet.open(list.inputFile, home: HaulHome(environment: ProcessEnvironment.values))
            try await file.loadNetrc()
            // Cookie jars read once: the tasks checked are the tasks sent.
            cookies = try file.givenCookies()
            // The first reading: every line checked and its task made, before anything is added; nothing is kept,
            // so that a list of a million URLs takes the memory of one part of it.
            let count: Int
            (count, firstOfEachFile) = try await check(BatchGet.Entries(arguments: arguments, list: listFile), cookies: cookies)
            if count == 0 { throw InputError(listFile.map { "\($0.name) is empty" } ?? "give at least one URL (or -i FILE)") }
            try file.checkCount(count, remoteName: file.remoteName, arguments: list.urls)
            if count > 1, id != nil { throw InputError("--id names one task; give one URL with it") }
        } catch let error as InputError {
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.usage)
        } catch let error as HaulError {
            Reporter.printError("haul: error: \(error.line)")
            throw ExitCode(ExitStatus.code(for: error.kind))
        }
        self.connection.warnIfInsecure()
        for note in [firstOfEachFile.duplicateNote, firstOfEachFile.laterNote].compactMap({ $0 }) { Reporter.printError("haul: note: " + note) }
        do {
            let connection = try await daemon.connect()
            // Adding to a session creates it: said, so that a mistyped --session does not pass unnoticed.
            let isNew = await connection.isNewSession()
            // The second reading: a part at a time, each sent in messages that fit (its ids printed as it is added).
            let entries = BatchGet.Entries(arguments: arguments, list: listFile)
            var argumentsRead = 0
            while true {
                let part = try entries.next(Self.tasksPerMessage)
                if part.isEmpty { break }
                // Under -nc, an entry whose file an earlier one saves is not added (said once, above).
                let additions = try part.compactMap { entry -> AddTasks.Addition? in
                    let (addition, spec) = try self.addition(for: entry, cookies: cookies)
                    let source = BatchGet.source(of: entry, arguments: &argumentsRead)
                    if self.file.noClobber, BatchGet.isLater(spec, from: source, in: firstOfEachFile) { return nil }
                    return addition
                }
                if additions.isEmpty { continue }
                for id in try await connection.add(additions) { print(id) }
            }
            await connection.close()
            if isNew { Reporter.printError("haul: created the session \"\(daemon.session)\" (`haul ls --session \(daemon.session)` lists its tasks)") }
        } catch {
            throw CLIFailure.exit(error)
        }
    }

    /// Tasks read and sent at a time.
    static let tasksPerMessage = 512

    /// Checks every entry as ``addition(for:cookies:)`` makes it; how many there are, and under `-nc` the files
    /// they save to: two entries of one file are wget's "keep the first", as `haul get -i` reads a list (the later one
    /// is not added, whichever download would have ended first), and two `out=` of one file are refused.
    private func check(_ entries: BatchGet.Entries, cookies: GivenCookies) async throws -> (Int, ListDestinations) {
        var count = 0
        var files = ListDestinations()
        var arguments = 0
        while true {
            let part = try entries.next(Self.tasksPerMessage)
            if part.isEmpty {
                files.forgetEntries()
                return (count, files)
            }
            for entry in part {
                let (_, spec) = try addition(for: entry, cookies: cookies)
                let source = BatchGet.source(of: entry, arguments: &arguments)
                guard self.file.noClobber, case .file? = spec.destination else { continue }
                try BatchGet.claim(spec, of: entry, from: source, in: &files, keepingFirst: true)
            }
            count += part.count
            // Long lists: the other tasks of this process (signals) get their turn.
            await Task.yield()
        }
    }

    /// The task of one entry, checked, and its spec.
    private func addition(for entry: InputList.Entry, cookies: GivenCookies) throws -> (AddTasks.Addition, spec: DownloadSpec) {
        do {
            var spec = try file.makeSpec(entry: entry, cookies: cookies)
            try connection.apply(to: &spec)
            if let onComplete, !onComplete.isEmpty { spec.completionCommand = onComplete }
            try spec.validate()
            return (AddTasks.Addition(DownloadRequest(spec, priority: priority, id: id)), spec)
        } catch let error as InputError where entry.line > 0 {
            throw InputError("line \(entry.line) of the URL list: \(error.message)")
        }
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls", abstract: "List the daemon's tasks: id, state, bytes, total, speed, path, note.",
        discussion: """
            On a terminal the table fits its width: ids are their shortest unique prefixes (8 characters at least; \
            any command takes them), paths are shortened in their folders and a long note gets a line of its own. \
            Output that is not a terminal, and --wide, keep every value whole, one task per line. A session of more \
            than 10,000 tasks is shown in blocks of 10,000, each aligned on its own (columns only widen from one to \
            the next); on a terminal it is listed twice, to find the ids' unique prefixes over the whole session.

            """ + HelpText.examples(
            "haul ls",
            "haul ls --wide                        # whole ids, paths and notes",
            "haul ls --json                        # every task as JSON, for scripts",
            "haul ls --session my-app"
        ))

    @Flag(help: "One JSON object per task and line.")
    var json = false

    @Flag(help: "Every value whole (whole ids, paths and notes), even on a terminal.")
    var wide = false

    @OptionGroup var daemon: DaemonClientOptions

    func run() async throws {
        do {
            let connection = try await daemon.connect()
            if json {
                // A page at a time, printed as it comes: a session of a million tasks is never held whole.
                try await connection.eachTaskPage { page in
                    Reporter.write(page.map { EventJSON.task($0).serialized + "\n" }.joined(), to: STDOUT_FILENO)
                }
                await connection.close()
                return
            }
            // The table: one aligned over every task up to TaskListing.blockSize of them, else in blocks; fitted to a
            // terminal, a large session is listed twice (ids first, for their unique prefixes). Never held whole.
            let listing = NIOLockedValueBox(TaskListing(width: wide ? nil : Self.terminalWidth()))
            for _ in 0..<2 {
                try await connection.eachTaskPage { page in
                    let rows = page.map(Self.row)
                    Self.show(listing.withLockedValue { $0.take(rows) })
                }
                Self.show(listing.withLockedValue { $0.end() })
                guard listing.withLockedValue(\.needsSecondListing) else { break }
            }
            await connection.close()
        } catch {
            throw CLIFailure.exit(error)
        }
    }

    /// A task as the table shows it. A fleet's tasks show the node that runs them (or ran them last); on one machine
    /// there is no such column.
    static func row(_ task: TaskSnapshot) -> TaskTable.Row {
        TaskTable.Row(
            id: task.id, state: task.state.rawValue, bytes: task.bytes, total: task.total,
            bytesPerSecond: task.bytesPerSecond, path: task.filePath ?? Redaction.url(task.url),
            // Why it failed, or why a running task is not moving.
            note: task.error.map { $0.line(task: task.id) } ?? task.note, url: Redaction.url(task.url), node: task.node)
    }

    /// Writes the lines at once, if any.
    static func show(_ lines: [String]) {
        guard !lines.isEmpty else { return }
        Reporter.write(lines.map { $0 + "\n" }.joined(), to: STDOUT_FILENO)
    }

    /// The width of the terminal standard output is, or nil when it is not one (a pipe, a file).
    static func terminalWidth() -> Int? {
        guard isatty(STDOUT_FILENO) == 1 else { return nil }
        if let size = LiveArea.terminalSize(STDOUT_FILENO) { return size.columns }
        return ProcessInfo.processInfo.environment["COLUMNS"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } ?? 80
    }
}

/// `pause`, `resume` and `rm`: the same selection of tasks, one method each.
struct TaskSelection: ParsableArguments {
    @Argument(help: "Task ids (or unique prefixes of them).")
    var ids: [String] = []

    @Flag(help: "Every task of the session.")
    var all = false

    func selected(_ connection: DaemonConnection) async throws -> SelectedTasks {
        if all {
            guard ids.isEmpty else { throw CLIFailure(HaulError(.usage, "give task ids or --all, not both")) }
            return SelectedTasks(all: true)
        }
        guard !ids.isEmpty else { throw CLIFailure(HaulError(.usage, "give at least one task id, or --all")) }
        return SelectedTasks(ids: try await connection.resolve(ids))
    }
}

struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause", abstract: "Pause tasks; running ones save their progress first.",
        discussion: HelpText.examples("haul pause 3f2a                       # a unique prefix of the id is enough", "haul pause --all"))
    @OptionGroup var selection: TaskSelection
    @OptionGroup var daemon: DaemonClientOptions
    func run() async throws { try await control(PauseTasks.self, selection, daemon) { $0 } }
}

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Queue paused, failed or cancelled tasks again.",
        discussion: HelpText.examples("haul resume 3f2a", "haul resume --all"))
    @OptionGroup var selection: TaskSelection
    @OptionGroup var daemon: DaemonClientOptions
    func run() async throws { try await control(ResumeTasks.self, selection, daemon) { $0 } }
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
    func run() async throws {
        do {
            let connection = try await daemon.connect()
            let answer = try await connection.call(RemoveTasks.self, .init(try await selection.selected(connection), deleteFile: deleteFile))
            await connection.close()
            // What became of files haul did not delete (or, with --delete-file, did): one line each.
            for file in answer.files ?? [] { print(TerminalText.sanitized(file.message)) }
        } catch {
            throw CLIFailure.exit(error)
        }
    }
}

private func control<Call: DaemonCall>(
    _ call: Call.Type, _ selection: TaskSelection, _ daemon: DaemonClientOptions,
    _ parameters: (SelectedTasks) -> Call.Parameters
) async throws {
    do {
        let connection = try await daemon.connect()
        _ = try await connection.call(Call.self, parameters(try await selection.selected(connection)))
        await connection.close()
    } catch {
        throw CLIFailure.exit(error)
    }
}

struct PriorityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "priority", abstract: "Change the priority of queued tasks: higher runs first (0 when added without --priority).",
        discussion: HelpText.examples(
            "haul priority 10 3f2a 9b1c            # these start before the rest",
            "haul priority -5 3f2a                 # after the rest"
        ) + "\n\nA running task keeps running; the priority decides which waiting task starts next.")
    /// The priority, then the ids: read as words, so that a negative priority (`-5`) is a value and not an option.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The new priority (-1000000000 to 1000000000), then task ids (or unique prefixes of them).", valueName: "priority> <ids"))
    var words: [String] = []
    @OptionGroup var daemon: DaemonClientOptions

    /// The words after a `--` that separates them (`haul priority -- -5 ID`, the habit for negative values).
    private var values: [String] { words.filter { $0 != "--" } }
    var priority: Int { values.first.flatMap { Int($0) } ?? 0 }
    var ids: [String] { Array(values.dropFirst()) }

    func validate() throws {
        guard let first = values.first, let priority = Int(first) else {
            throw InputError("give the priority first, a whole number (a negative one too: haul priority -5 ID), then task ids")
        }
        guard abs(priority) <= 1_000_000_000 else { throw InputError("the priority must be between -1000000000 and 1000000000") }
        guard !ids.isEmpty else { throw InputError("give at least one task id after the priority") }
        if let option = ids.first(where: { $0.hasPrefix("-") }) { throw InputError("\(option) is not an option of haul priority (haul help priority)") }
    }

    func run() async throws {
        do {
            let connection = try await daemon.connect()
            _ = try await connection.call(SetPriority.self, .init(priority: priority, ids: try await connection.resolve(ids)))
            await connection.close()
        } catch {
            throw CLIFailure.exit(error)
        }
    }
}
