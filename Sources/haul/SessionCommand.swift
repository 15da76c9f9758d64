import ArgumentParser
import Foundation
import HaulKit

/// `haul session`: the settings of a daemon session.
struct SessionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session",
        abstract: "Show or change a daemon session's settings.",
        discussion: HelpText.examples(
            "haul session show",
            "haul session set --max-concurrent 5",
            "haul session set --session my-app --limit-rate 2M"
        ),
        subcommands: [SessionShowCommand.self, SessionSetCommand.self])
}

/// `haul session show`: what a session does now, and where it keeps its tasks.
struct SessionShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a session's settings: downloads at once, speed limit, completion command, and where its store is.",
        discussion: HelpText.examples(
            "haul session show",
            "haul session show --session my-app",
            "haul session show --json              # the daemon's answer, for scripts"
        ))

    @Flag(help: "The settings as one JSON object (docs/protocol.md, session.configuration).")
    var json = false

    @OptionGroup var daemon: DaemonClientOptions

    func run() async throws {
        let settings: JSONValue
        do {
            let connection = try await daemon.connect()
            settings = .object(try await connection.call(SessionSettings.self, NoParameters()))
            await connection.close()
        } catch {
            throw CLIFailure.exit(error)
        }
        if json {
            print(settings.serialized)
            return
        }
        for line in Self.lines(settings.objectValue ?? [:], session: daemon.session) { print(line) }
    }

    /// The settings one per line, their names aligned.
    static func lines(_ settings: [String: JSONValue], session: String) -> [String] {
        func seconds(_ key: String) -> String? {
            settings[key]?.doubleValue.map { String(format: "%g s", $0) }
        }
        let headers = settings["defaultHeaders"]?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue } ?? []
        let pairs: [(String, String)] = [
            ("session", session),
            ("downloads at once", settings["maxConcurrentDownloads"]?.intValue.map { $0 == 0 ? "0 (waiting tasks are held)" : String($0) } ?? "-"),
            ("per host", settings["maxDownloadsPerHost"]?.intValue.map(String.init) ?? "-"),
            ("fleet-wide per host", settings["fleetMaxConnectionsPerHost"]?.intValue.map { "\($0) connections from all nodes together" } ?? "none"),
            ("speed limit", settings["rateLimit"]?.int64Value.map { ByteFormat.string($0) + "/s for all its downloads" } ?? "none"),
            ("completion command", settings["completionCommand"]?.stringValue.map(TerminalText.sanitized) ?? "none"),
            ("default folder", settings["defaultDirectory"]?.stringValue.map(TerminalText.sanitized) ?? "none (haul add saves in the folder it runs in)"),
            ("default headers", headers.isEmpty ? "none" : headers.map(TerminalText.sanitized).joined(separator: ", ") + " (values not shown)"),
            ("stall timeout", seconds("stallTimeout") ?? "-"),
            ("resume on relaunch", settings["resumeRunningTasksOnRelaunch"]?.boolValue.map { $0 ? "yes" : "no" } ?? "-"),
            ("store", settings["store"]?.stringValue.map(TerminalText.sanitized) ?? "(not said by this daemon)"),
        ]
        let width = pairs.map { $0.0.count }.max() ?? 0
        return pairs.map { name, value in (name + ":").padding(toLength: width + 2, withPad: " ", startingAt: 0) + " " + value }
    }
}

/// `haul session set`: changes what the session does from now on (saved; running downloads carry on).
struct SessionSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Change how many downloads run at once, the session's speed limit, or its completion command.",
        discussion: """
            In a fleet (haul daemon --store) the settings are the fleet's: every node applies them, --max-concurrent \
            to itself, --fleet-max-per-host to all nodes together.

            The --on-complete command runs in the daemon after each task finishes or fails, with HAUL_TASK_ID, \
            HAUL_TASK_URL, HAUL_TASK_STATE, HAUL_TASK_PATH, HAUL_TASK_BYTES and HAUL_TASK_ERROR set; \
            --on-complete '' removes it.

            """ + HelpText.examples(
                "haul session set --max-concurrent 5",
                "haul session set --limit-rate 2M     # all its downloads together",
                "haul session set --limit-rate none",
                "haul session set --fleet-max-per-host 4  # per server, all nodes together",
                "haul session set --on-complete 'notify-send \"$HAUL_TASK_PATH\"'"
            ))

    @Option(name: .customLong("max-concurrent"), parsing: .unconditional, help: "Downloads running at once (0 holds every waiting task).")
    var maxConcurrent: Int?

    @Option(name: .customLong("limit-rate"), parsing: .unconditional, help: "Speed of all the session's downloads together, e.g. 500K, 2M, or none.")
    var limitRate: RateLimitChange?

    @Option(name: .customLong("on-complete"), help: "A shell command run after each task finishes or fails ('' for none).")
    var onComplete: String?

    @Option(name: .customLong("fleet-max-per-host"), help: "Connections to one host from every node of the fleet together (each download then uses one), or none.")
    var fleetMaxPerHost: CountOrNone?

    @OptionGroup var daemon: DaemonClientOptions

    /// The ranges, and that there is something to change, before the daemon is asked.
    func validate() throws {
        let concurrent = SessionConfiguration.maxConcurrentRange, perHost = SessionConfiguration.fleetMaxPerHostRange
        if let maxConcurrent, !concurrent.contains(maxConcurrent) {
            throw InputError("--max-concurrent must be between \(concurrent.lowerBound) and \(concurrent.upperBound)")
        }
        if case .count(let count)? = fleetMaxPerHost, !perHost.contains(count) {
            throw InputError("--fleet-max-per-host must be between \(perHost.lowerBound) and \(perHost.upperBound), or none")
        }
        guard maxConcurrent != nil || limitRate != nil || onComplete != nil || fleetMaxPerHost != nil else {
            throw InputError("nothing to change: give --max-concurrent, --limit-rate, --on-complete or --fleet-max-per-host (`haul session show` shows the settings)")
        }
    }

    /// The session's settings these flags change, as the protocol names them (docs/protocol.md).
    var changes: [String: JSONValue] {
        var changes: [String: JSONValue] = [:]
        if let maxConcurrent { changes["maxConcurrentDownloads"] = JSONValue(maxConcurrent) }
        switch limitRate {
        case .unlimited?: changes["rateLimit"] = .null
        case .limit(let rate)?: changes["rateLimit"] = JSONValue(rate.bytesPerSecond)
        case nil: break
        }
        if let onComplete { changes["completionCommand"] = onComplete.isEmpty ? .null : .string(onComplete) }
        switch fleetMaxPerHost {
        case .unlimited?: changes["fleetMaxConnectionsPerHost"] = .null
        case .count(let count)?: changes["fleetMaxConnectionsPerHost"] = JSONValue(count)
        case nil: break
        }
        return changes
    }

    func run() async throws {
        do {
            let connection = try await daemon.connect()
            // A session that does not exist yet is made with these settings (to add to it later), and said so: a
            // mistyped --session would otherwise pass unnoticed.
            let created = await connection.isNewSession()
            _ = try await connection.call(OpenSession.self, .init(configuration: changes))
            await connection.close()
            if created {
                Reporter.printError("haul: created the session \"\(daemon.session)\" with these settings (`haul session show --session \(daemon.session)`)")
            }
        } catch {
            throw CLIFailure.exit(error)
        }
    }
}
