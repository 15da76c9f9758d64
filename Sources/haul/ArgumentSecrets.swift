import HaulKit

/// Hides the secrets a command line carries from other users' `ps` (which reads `/proc/PID/cmdline`, the process's
/// own copy of its arguments), as curl hides `-u`'s: the password of `-u USER:PASSWORD` and of a URL's or proxy's
/// `user:password@`, secret query values (signatures, tokens), credential headers' values and `-b` cookies become
/// `*`, in place, once the arguments are read. Between the start and that moment they are visible, as with curl.
enum ArgumentSecrets {
    /// Overwrites the secrets in this process's arguments (read them first: `CommandLine.arguments` is a copy).
    static func blank() {
        let argv = CommandLine.unsafeArgv
        var previous = ""
        for index in 1..<Int(CommandLine.argc) {
            guard let pointer = argv[index] else { continue }
            let text = String(cString: pointer)
            let masked = self.masked(Array(text.utf8), after: previous)
            if masked != Array(text.utf8) {
                for (offset, byte) in masked.enumerated() { pointer[offset] = CChar(bitPattern: byte) }
            }
            previous = text
        }
    }

    /// `line` (a refusal of the command line, which may quote an argument) with every secret of `arguments`
    /// masked as ``blank()`` masks it: the secrets as typed (`-qubob:pw` in "unknown option '-qubob:pw'") never
    /// reach the terminal or a log.
    static func hiding(_ arguments: [String], in line: String) -> String {
        var shown = line
        var previous = ""
        for argument in arguments {
            let original = Array(argument.utf8)
            let masked = self.masked(original, after: previous)
            previous = argument
            guard masked != original, let first = masked.indices.first(where: { masked[$0] != original[$0] }),
                  let last = masked.indices.last(where: { masked[$0] != original[$0] }) else { continue }
            shown = shown.replacingOccurrences(of: argument, with: String(decoding: masked, as: UTF8.self))
            // The secret alone, wherever the message quotes part of the argument (one long enough not to be any
            // other word of the line: a one-letter password would mask every such letter).
            guard last - first + 1 >= 6 else { continue }
            let secret = String(decoding: original[first...last], as: UTF8.self)
            shown = shown.replacingOccurrences(of: secret, with: String(repeating: "*", count: last - first + 1))
        }
        return shown
    }

    /// `argument` (given after `option`, the argument before it) with every secret byte replaced by `*`: the same
    /// length, so that it can be written over the original.
    static func masked(_ argument: [UInt8], after option: String) -> [UInt8] {
        var bytes = argument
        let star = UInt8(ascii: "*")
        func mask(_ range: Range<Int>) { for index in range where index < bytes.count { bytes[index] = star } }
        let text = String(decoding: argument, as: UTF8.self)
        // Offsets below are the text's: an argument that is no UTF-8 is left as it is.
        guard text.utf8.count == argument.count else { return argument }
        // `--user=u:p`, `--header=…`, `--cookie=…`: the option and its value in one argument.
        var value = 0..<bytes.count
        var name = option
        if text.hasPrefix("--"), let equals = argument.firstIndex(of: UInt8(ascii: "=")) {
            name = String(decoding: argument[..<equals], as: UTF8.self)
            value = (equals + 1)..<bytes.count
        } else if text.hasPrefix("-"), !text.hasPrefix("--"), bytes.count > 2 {
            // `-ubob:pw`, `-bsid=…`, `-HAuthorization: …`, `-qubob:pw`: letters clustered, the first that takes a
            // value takes the rest of the argument.
            for index in 1..<bytes.count {
                let letter = "-" + String(decoding: bytes[index...index], as: UTF8.self)
                guard bytes[index] < 0x80, FlagCompatibility.valueOptions.contains(letter) else { continue }
                name = letter
                value = (index + 1)..<bytes.count
                break
            }
        }
        let valueBytes = Array(bytes[value])
        switch name {
        case "-u", "--user", "--proxy-user":
            let colon = valueBytes.firstIndex(of: UInt8(ascii: ":")) ?? -1
            mask((value.lowerBound + colon + 1)..<value.upperBound)
        case "-H", "--header":
            if let colon = valueBytes.firstIndex(of: UInt8(ascii: ":")),
               Redaction.secretHeaders.contains(String(decoding: valueBytes[..<colon], as: UTF8.self).lowercased().trimmingSpaces) {
                mask((value.lowerBound + colon + 1)..<value.upperBound)
            }
        case "-b", "--cookie":
            // A cookie string (`NAME=VALUE`, as curl decides); a file name is no secret.
            if let equals = valueBytes.firstIndex(of: UInt8(ascii: "=")) { mask((value.lowerBound + equals + 1)..<value.upperBound) }
        default:
            break
        }
        // Any URL: its userinfo, and the values of its secret query parameters. A URL without a scheme (an argument
        // taken as http://, a proxy's `user:password@host:port`) from its start.
        let schemeEnd = text.range(of: "://").map { text.utf8.distance(from: text.utf8.startIndex, to: $0.upperBound) }
        let bare = !text.hasPrefix("-") && (!FlagCompatibility.valueOptions.contains(option) || ["--proxy", "--all-proxy"].contains(option))
        if let start = schemeEnd ?? (bare ? 0 : nil) {
            let rest = Substring(String(decoding: bytes[start...], as: UTF8.self))
            func offset(_ index: Substring.Index) -> Int { start + rest.utf8.distance(from: rest.utf8.startIndex, to: index) }
            if let at = Redaction.userinfoEnd(rest) { mask(start..<offset(at)) }
            for value in Redaction.secretQueryValues(in: rest) { mask(offset(value.lowerBound)..<offset(value.upperBound)) }
        }
        return bytes
    }
}

private extension String {
    var trimmingSpaces: String { String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }
}
