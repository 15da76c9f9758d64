import struct Foundation.Data
import struct Foundation.URL

/// A problem with what the user asked for, found before any network or file activity.
public struct InputError: Error, Equatable, Sendable, CustomStringConvertible {
    /// One line saying what is wrong with the input.
    public var message: String
    /// An error saying `message`.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A hash algorithm Haul can verify a download with.
public enum ChecksumAlgorithm: String, CaseIterable, Codable, Sendable {
    /// MD5 (RFC 1321): only to check against a published MD5, not for security.
    case md5
    /// SHA-1 (RFC 3174): only to check against a published SHA-1, not for security.
    case sha1
    /// SHA-256 (FIPS 180-4).
    case sha256
    /// SHA-512 (FIPS 180-4).
    case sha512

    /// Length of the digest in hex digits.
    public var hexLength: Int {
        switch self {
        case .md5: return 32
        case .sha1: return 40
        case .sha256: return 64
        case .sha512: return 128
        }
    }
}

/// An expected digest, given as `ALG:HEX` (also `ALG=HEX`; `sha-256` is accepted for `sha256`).
public struct Checksum: Equatable, Codable, Sendable, CustomStringConvertible {
    /// The hash algorithm of the digest.
    public var algorithm: ChecksumAlgorithm
    /// Lower-case hex digits.
    public var hex: String

    /// A digest of `algorithm` given as hex digits (either case); not validated, see ``init(parsing:)``.
    public init(algorithm: ChecksumAlgorithm, hex: String) {
        self.algorithm = algorithm
        self.hex = hex.lowercased()
    }

    /// Parses `ALG:HEX` or `ALG=HEX`, checking the algorithm's name and the digest's length and digits.
    public init(parsing text: String) throws(InputError) {
        guard let separator = text.firstIndex(where: { $0 == ":" || $0 == "=" }) else {
            throw InputError("checksum \"\(text)\" is not ALG:HEX (e.g. sha256:9f86d0…)")
        }
        let name = text[..<separator].lowercased().replacingOccurrences(of: "-", with: "")
        let typed = text[text.index(after: separator)...].trimmingASCIIWhitespace()
        let hex = typed.lowercased()
        guard let algorithm = ChecksumAlgorithm(rawValue: name) else {
            let known = ChecksumAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")
            throw InputError("unknown checksum algorithm \"\(text[..<separator])\"; use one of \(known)")
        }
        guard hex.count == algorithm.hexLength, hex.allSatisfy(\.isHexDigit) else {
            // The value as typed: lower-cased, a base64 digest would no longer be the one given.
            let base64 = Data(base64Encoded: String(typed))?.count == algorithm.hexLength / 2
            let hint = base64 ? " (that is base64; give the digest in hex, as \(algorithm.rawValue)sum prints it)" : ""
            throw InputError("\(algorithm.rawValue) checksum must be \(algorithm.hexLength) hex digits, got \"\(typed)\"\(hint)")
        }
        self.init(algorithm: algorithm, hex: hex)
    }

    public var description: String { "\(algorithm.rawValue):\(hex)" }
}

/// Parsing the values of command-line options.
public enum UserInput {
    /// A download URL: absolute, `http` or `https`, with a host.
    public static func url(_ text: String) throws(InputError) -> URL {
        let trimmed = text.trimmingASCIIWhitespace()
        // `example.com/file` (as a browser takes it): say which URL was probably meant, never guess silently.
        if !trimmed.isEmpty, !trimmed.contains("://"), let first = trimmed.split(separator: "/").first,
           first.contains(".") || first.hasPrefix("localhost"), !first.contains(" ") {
            let suggested = Redaction.url("https://" + trimmed)
            throw InputError("\"\(suggested.dropFirst("https://".count))\" has no scheme; did you mean \(suggested)?")
        }
        guard !trimmed.isEmpty, let url = URL(string: trimmed), let scheme = url.scheme?.lowercased() else {
            throw InputError("\"\(Redaction.url(text))\" is not a valid URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw InputError("unsupported URL scheme \"\(scheme)\" in \(Redaction.url(text)); haul downloads http:// and https:// URLs")
        }
        guard let host = url.host, !host.isEmpty else { throw InputError("URL \"\(Redaction.url(text))\" has no host") }
        if let problem = URLCheck.problem(url) { throw InputError("\(problem) in \(Redaction.url(trimmed))") }
        return url
    }

    /// A URL as a person types it — a `haul get` or `haul add` argument, a line of an `-i` list: one without a scheme
    /// is `http://`, as curl and wget take `example.com/file` and `127.0.0.1:8080/x`. A scheme is letters (then
    /// letters, digits, `+`, `-`, `.`) before `:/`, as curl reads it when it guesses, so `localhost:8080` is a host
    /// and port. A word that is clearly no URL (a path: `/x`, `./x`, `~/x`; an option) is refused. The one place
    /// that decides what a typed word means; ``url(_:)`` is the strict reading of what a program sends.
    public static func typedURL(_ text: String) throws(InputError) -> URL {
        let trimmed = text.trimmingASCIIWhitespace()
        guard !trimmed.isEmpty, !hasScheme(trimmed) else { return try url(text) }
        if looksLikePath(trimmed) || trimmed.contains(where: { $0 == " " || $0 == "\t" }) {
            throw InputError("\"\(Redaction.url(trimmed))\" is not a URL; give http:// or https:// URLs, or a file listing them with -i FILE")
        }
        return try url("http://" + trimmed)
    }

    /// Whether `text` reads as a path or an option, never as a host: it begins with `/`, `.`, `~` or `-`.
    public static func looksLikePath(_ text: String) -> Bool {
        text.first.map { "/.~-".contains($0) } ?? false
    }

    /// Whether `text` begins with a scheme and `:/` (`https://`, `ftp:/x`), as curl tells a URL with a scheme from
    /// one it guesses (`host:port/path` has none).
    public static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), let first = text.first, first.isASCII, first.isLetter else { return false }
        let scheme = text[..<colon]
        guard scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else { return false }
        return text[colon...].hasPrefix(":/")
    }

    /// A byte rate or size such as `500K`, `1.5M`, `2MiB`, `1G` or `65536` (K = 1024).
    public static func byteCount(_ text: String) throws(InputError) -> Int64 {
        var number = text.trimmingASCIIWhitespace().lowercased()
        for suffix in ["ib/s", "b/s", "/s", "ib", "b"] where number.hasSuffix(suffix) && number.count > suffix.count {
            number.removeLast(suffix.count)
            break
        }
        var multiplier: Double = 1
        if let unit = number.last, let power = ["k": 1, "m": 2, "g": 3, "t": 4][String(unit)] {
            number.removeLast()
            for _ in 0..<power { multiplier *= 1024 }
        }
        guard let value = Double(number), value.isFinite, value > 0, number.allSatisfy({ $0.isNumber || $0 == "." }) else {
            throw InputError("\"\(text)\" is not a size or rate (e.g. 500K, 2M, 1.5G)")
        }
        let bytes = value * multiplier
        guard bytes >= 1, bytes < 9e18 else { throw InputError("\"\(text)\" is out of range") }
        return Int64(bytes)
    }

    /// Headers Haul sets itself for resuming; a user value would break the resume rules.
    static let reservedHeaders: Set<String> = ["range", "if-range", "content-length", "transfer-encoding", "connection"]

    /// What `-H` texts say, by curl's rules: `Name: value` is sent; `Name;` is sent with an empty value; `Name:` with
    /// nothing after the colon sends nothing by that name and is in `omitted` (lower-cased, each once), for the header
    /// Haul would otherwise send itself (`User-Agent`, `Accept-Encoding`, the `Cookie` and `Authorization` it makes)
    /// to be left out too. A field given with a value is sent whatever is omitted, as curl sends it.
    public static func headers(_ texts: [String]) throws(InputError) -> (fields: HTTPFields, omitted: [String]) {
        var fields = HTTPFields()
        var omitted: [String] = []
        for text in texts {
            let trimmed = text.trimmingASCIIWhitespace()
            if !trimmed.contains(":"), trimmed.hasSuffix(";") {
                // curl's `X-Empty;`: the one way to send a header with no value (never an empty Host).
                let field = try header(String(trimmed.dropLast()) + ":")
                try checkOmittable(field.name)
                fields.append(field.name, "")
                continue
            }
            let field = try header(text)
            if field.value.isEmpty {
                try checkOmittable(field.name)
                if !omitted.contains(field.name.lowercased()) { omitted.append(field.name.lowercased()) }
            } else {
                fields.append(field.name, field.value)
            }
        }
        return (fields, omitted)
    }

    /// Refuses a header that cannot be left out: `Host`, which every HTTP/1.1 request carries.
    static func checkOmittable(_ name: String) throws(InputError) {
        if name.lowercased() == "host" { throw InputError("header \"Host\" cannot be left out: every request names its server") }
    }

    /// One `Name: value` header.
    public static func header(_ text: String) throws(InputError) -> HTTPFields.Field {
        // Never quoted past its first word: `Authorization Bearer TOKEN` (a colon forgotten) is a credential.
        let firstWord = text.prefix { $0 != " " && $0 != "\t" && $0 != ":" && $0 != "=" }.prefix(40)
        guard let colon = text.firstIndex(of: ":") else {
            throw InputError("header \"\(firstWord)…\" is not 'Name: value' (the colon is missing)")
        }
        let name = String(text[..<colon])
        let value = text[text.index(after: colon)...].trimmingASCIIWhitespace()
        let tokenSymbols = Set("!#$%&'*+-.^_`|~")
        guard !name.isEmpty, name.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || tokenSymbols.contains($0) }) else {
            throw InputError("header name \"\(firstWord)\(firstWord.count < name.count ? "…" : "")\" is not a valid HTTP field name")
        }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) else {
            throw InputError("header \"\(name)\" has a control character in its value")
        }
        guard !reservedHeaders.contains(name.lowercased()) else {
            throw InputError("header \"\(name)\" is managed by haul and cannot be set")
        }
        return HTTPFields.Field(name: name, value: value)
    }
}
