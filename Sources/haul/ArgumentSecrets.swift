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
