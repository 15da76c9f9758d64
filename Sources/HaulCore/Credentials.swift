import struct Foundation.Data
import struct Foundation.URL
import struct Foundation.URLComponents

/// A user name and password for HTTP Basic authentication (RFC 7617), sent only to the origin they were
/// given for (the URL's own, for `user:password@` and `-u`), never after a redirect to another origin.
public struct Credentials: Codable, Equatable, Sendable {
    /// The user name, as given (not percent-encoded).
    public var user: String
    /// The password, as given; never printed or logged.
    public var password: String

    /// Credentials from a user name and a password, as given.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// The credentials in a URL's userinfo (`https://user:password@host/`), percent-decoded.
    public init?(userinfoOf url: URL) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let user = components.user, !user.isEmpty else { return nil }
        self.init(user: user, password: components.password ?? "")
    }

    /// `USER:PASSWORD` as given to `-u` (the password may contain colons).
    public init(parsing text: String) throws(InputError) {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
            throw InputError("-u needs USER:PASSWORD")
        }
        self.init(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
    }

    /// The `Authorization` header value.
    public var authorization: String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// `url` without its userinfo: what is requested (the credentials travel in a header instead).
    public static func strippingUserinfo(_ url: URL) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              components.user != nil || components.password != nil else { return url }
        components.user = nil
        components.password = nil
        return components.url ?? url
    }
}

/// The `.netrc` format (as curl and ftp read it): `machine HOST login USER password PASS`, and `default`.
public enum Netrc {
    /// The credentials for `host` in a netrc file's text: the first `machine` entry for it, else `default`. With
    /// `login` (a URL's `user@` without a password), only an entry of that login: its password, as curl and wget
    /// take it (a file may hold several logins for one host).
    public static func credentials(for host: String, login wanted: String? = nil, in text: String) -> Credentials? {
        var fallback: Credentials?
        for entry in entries(in: text) where wanted == nil || entry.credentials.user == wanted {
            if let machine = entry.machine {
                if machine.lowercased() == host.lowercased() { return entry.credentials }
            } else if fallback == nil {
                fallback = entry.credentials
            }
        }
        return fallback
    }

    /// Every host's login in a netrc file's text, by lower-cased host: the first `machine` entry of each, as
    /// ``credentials(for:login:in:)`` takes it. Not `default`: a redirect may lead anywhere, and a catch-all login
    /// goes only to the URL given.
    public static func logins(in text: String) -> [String: Credentials] {
        var found: [String: Credentials] = [:]
        for entry in entries(in: text) {
            guard let machine = entry.machine?.lowercased(), found[machine] == nil else { continue }
            found[machine] = entry.credentials
        }
        return found
    }

    /// The entries that name a login, in order: `machine` is `nil` for `default`.
    private static func entries(in text: String) -> [(machine: String?, credentials: Credentials)] {
        let tokens = tokenize(text)
        var found: [(machine: String?, credentials: Credentials)] = []
        var index = 0
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            guard token == "machine" || token == "default" else {
                if token == "macdef" { index = skipMacro(tokens, from: index) }
                continue
            }
            var machine: String?
            if token == "machine" {
                guard index < tokens.count else { break }
                machine = tokens[index]
                index += 1
            }
            var login: String?, password: String?
            while index < tokens.count, !["machine", "default", "macdef"].contains(tokens[index]) {
                let key = tokens[index]
                let value = index + 1 < tokens.count ? tokens[index + 1] : nil
                index += 2
                if key == "login" { login = value } else if key == "password" { password = value }
            }
            guard let login else { continue }
            found.append((machine, Credentials(user: login, password: password ?? "")))
        }
        return found
    }

    static func tokenize(_ text: String) -> [String] {
        var tokens: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in text {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if !quoted, character.isWhitespace {
                if !current.isEmpty { tokens.append(current) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { tokens.append(current) }
        return tokens
    }

    /// `macdef` bodies run to a blank line; their words are not netrc tokens. Tokenizing loses blank lines,
    /// so a macro is skipped up to the next `machine` or `default`.
    private static func skipMacro(_ tokens: [String], from start: Int) -> Int {
        var index = start
        while index < tokens.count, tokens[index] != "machine", tokens[index] != "default" { index += 1 }
        return index
    }
}
