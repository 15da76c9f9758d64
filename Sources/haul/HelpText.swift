/// The help pages' wording: section titles as written, not in capitals, and the examples of each command.
enum HelpText {
    // Titles of option groups, spelled once here so the help can show them as written.
    static let fileOptions = "File options"
    static let connectionOptions = "Connection options"
    static let addFileOptions = "File options (--limit-rate caps each download)"
    static let addConnectionOptions =
        "Connection options (the proxy variables and SSL_CERT_FILE/SSL_CERT_DIR are read here, not in the daemon)"

    /// Every section title a help page may have: swift-argument-parser's own and Haul's option groups.
    static let titles = [
        "Overview", "Usage", "Arguments", "Options", "Subcommands", fileOptions, connectionOptions, addFileOptions,
        addConnectionOptions,
    ]

    /// `help` with swift-argument-parser's capitalised titles (`OPTIONS:`, `FILE OPTIONS:`, `USAGE: haul …`)
    /// written as the titles are spelled; a title it does not know keeps its first capital only. Anything that
    /// is not a help page (a completion script, a version) is returned as it is.
    static func unshouted(_ help: String) -> String {
        guard help.hasPrefix("OVERVIEW:") || help.hasPrefix("USAGE:") else { return help }
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let colon = line.firstIndex(of: ":") else { return String(line) }
            let title = line[..<colon]
            guard title.first?.isLetter == true, title.contains(where: \.isLetter), title == title.uppercased(),
                  title.allSatisfy({ $0.isLetter || $0.isNumber || " ()-/_,".contains($0) }) else { return String(line) }
            let rest = line[colon...]
            // A title on its own line (a section), or OVERVIEW:/USAGE: followed by their text.
            guard rest == ":" || title == "OVERVIEW" || title == "USAGE" else { return String(line) }
            let written = titles.first { $0.uppercased() == title } ?? (String(title.prefix(1)) + title.dropFirst().lowercased())
            return written + rest
        }
        return lines.joined(separator: "\n")
    }

    /// An `Examples:` section for a command's discussion.
    static func examples(_ lines: String...) -> String {
        "Examples:\n" + lines.map { "  " + $0 }.joined(separator: "\n")
    }
}
