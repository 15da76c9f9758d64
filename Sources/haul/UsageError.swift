import ArgumentParser
import HaulKit

/// The one line `haul` prints when its command line cannot be used (exit 2): a value a typed option refused, a
/// command's `validate()`, or what ArgumentParser itself found (an unknown option, a missing value).
struct UsageError: Error, CustomStringConvertible {
    /// What is wrong and what to do, after `haul: error: `.
    var line: String

    var description: String { line }

    /// Runs `parse` (ArgumentParser's), its failure made one ``UsageError``; a request for help or the version is
    /// thrown as it was (the caller prints it).
    static func parsing<Parsed>(_ parse: () throws -> Parsed) throws -> Parsed {
        let refusals = ArgumentRefusals()
        do {
            return try ArgumentRefusals.$current.withValue(refusals) { try parse() }
        } catch where HaulCommand.exitCode(for: error) != .success {
            throw UsageError(line: line(for: error, refusal: refusals.last))
        }
    }

    /// The line for `error`, thrown while parsing; `refusal` is the last value a ``CheckedArgument`` refused.
    static func line(for error: any Error, refusal: ArgumentRefusals.Record?) -> String {
        let brief = HaulCommand.message(for: error).split(whereSeparator: \.isNewline).joined(separator: " ")
        if let refusal, brief.contains("'\(refusal.text)'") {
            let message = refusal.error.message
            // Some types name their option (`-x takes …`); the others are named as the option was typed.
            guard !message.hasPrefix("-"), let option = optionName(in: brief) else { return message }
            return "\(option): \(message)"
        }
        // A command's own check (`validate()` throws an ``InputError``, which ArgumentParser reports with exit code 1)
        // says what to change in its own words.
        if HaulCommand.exitCode(for: error) == .failure { return Redaction.text(brief) }
        var line = brief
        if let first = line.first, first.isUppercase, line.dropFirst().first?.isLowercase == true {
            line = first.lowercased() + line.dropFirst()
        }
        if let help = helpCommand(in: HaulCommand.fullMessage(for: error)) {
            line += line.last.map { ".?!".contains($0) } == true ? " See '\(help)'." : "; see '\(help)'"
        }
        return Redaction.text(line)
    }

    /// The option ArgumentParser's message names, as typed: `--min-split-size` in
    /// `The value '-1' is invalid for '--min-split-size <min-segment-size>'`.
    static func optionName(in message: String) -> String? {
        guard let start = message.range(of: "invalid for '-")?.upperBound else { return nil }
        let name = "-" + message[start...].prefix { $0 != " " && $0 != "'" }
        return name.count > 1 ? name : nil
    }

    /// The help command ArgumentParser's usage text points to (`haul get --help`).
    static func helpCommand(in fullMessage: String) -> String? {
        guard let start = fullMessage.range(of: "See '")?.upperBound,
              let end = fullMessage[start...].firstIndex(of: "'") else { return nil }
        return String(fullMessage[start..<end])
    }
}
