import Foundation

/// Where a fleet keeps its sessions: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (also `postgresql://`), as
/// `haul daemon --store` and `HAUL_STORE` take it. The host may be a socket folder (`%2Frun%2Fpostgresql`); the only
/// query parameter is `sslmode` (`disable`, the default, or `require`: TLS with the server's certificate verified).
///
/// The password is used, never shown: ``redacted`` is the address as it may be printed or logged.
public struct PostgresAddress: Sendable, Equatable {
    /// The role to connect as.
    public var user: String
    /// The password the URL gave, if any (else PGPASSWORD or `~/.pgpass` may give one: ``PGPass``).
    public var password: String?
    /// A host name or address, or a folder holding the server's socket (starting with `/`).
    public var host: String
    /// The server's port (5432 unless given).
    public var port: Int
    /// The database.
    public var database: String
    /// Whether TLS is required (`sslmode=require`).
    public var requiresTLS: Bool

    /// Reads `text`; throws a one-line ``InputError`` saying what is wrong (the password never appears in it).
    public static func parse(_ text: String) throws(InputError) -> PostgresAddress {
        let example = "postgres://USER@HOST:PORT/DATABASE"
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "postgres" || scheme == "postgresql" else {
            throw InputError("the store must be a URL such as \(example)")
        }
        guard let user = components.user.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            throw InputError("the store's URL names no user: \(example)")
        }
        guard let host = components.host.flatMap({ $0.removingPercentEncoding }), !host.isEmpty else {
            throw InputError("the store's URL names no host: \(example)")
        }
        let database = String(components.path.drop(while: { $0 == "/" })).removingPercentEncoding ?? ""
        guard !database.isEmpty, !database.contains("/") else {
            throw InputError("the store's URL names no database: \(example)")
        }
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw InputError("the store's port must be between 1 and 65535") }
        var requiresTLS = false
        for item in components.queryItems ?? [] {
            switch (item.name, item.value) {
            case ("sslmode", "disable"?): requiresTLS = false
            case ("sslmode", "require"?), ("sslmode", "verify-full"?): requiresTLS = true
            default:
                throw InputError("the store's URL has an unknown parameter \(item.name); only sslmode=disable or sslmode=require")
            }
        }
        let password = components.password.flatMap { $0.removingPercentEncoding }
        return PostgresAddress(
            user: user, password: password, host: host, port: port, database: database, requiresTLS: requiresTLS)
    }

    /// The address without its password: safe to print and log.
    public var redacted: String {
        var components = URLComponents()
        components.scheme = "postgres"
        components.user = user
        components.host = host.hasPrefix("/") ? host.addingPercentEncoding(withAllowedCharacters: .alphanumerics) : host
        components.port = port
        components.path = "/" + database
        if requiresTLS { components.queryItems = [URLQueryItem(name: "sslmode", value: "require")] }
        let text = components.string ?? "postgres://\(user)@\(host):\(port)/\(database)"
        return host.hasPrefix("/") ? text.replacingOccurrences(of: "%25", with: "%") : text
    }
}

/// PostgreSQL's password file (`~/.pgpass`, or the file `PGPASSFILE` names), read as libpq reads it: lines of
/// `hostname:port:database:username:password`, `*` matching anything, `\` escaping `:` and `\`, `#` starting a
/// comment, the first matching line winning.
public enum PGPass {
    /// The password the file's `text` gives for `address`, if any.
    public static func password(in text: String, for address: PostgresAddress) -> String? {
        for line in text.split(whereSeparator: \.isNewline) {
            guard !line.hasPrefix("#"), let fields = fields(of: Substring(line)), fields.count == 5 else { continue }
            let host = address.host.hasPrefix("/") ? "localhost" : address.host
            let wanted = [host, String(address.port), address.database, address.user]
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// The fields of a line split at unescaped colons, escapes removed; `nil` for a line that ends in an escape.
    private static func fields(of line: Substring) -> [String]? {
        var fields: [String] = []
        var current = ""
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":", fields.count < 4 {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        guard !escaped else { return nil }
        fields.append(current)
        return fields
    }

    /// Whether a password file with these permission bits may be used: libpq ignores one that its group or
    /// others may read or write.
    public static func isPrivate(mode: UInt32) -> Bool {
        mode & 0o077 == 0
    }
}
