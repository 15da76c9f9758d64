import HaulKit

/// What the dashboard hands out, over its API and its event stream, with the secrets of tasks masked as the page
/// shows them: URLs' passwords and signatures, credential headers, cookies and logins become `***`. The daemon's
/// socket answers its own user's processes (checked by uid) in full; a dashboard credential sees no secret, whatever
/// a script or the browser's tools do with the answers.
enum WebRedaction {
    /// Members whose string value is a URL.
    static let urlMembers: Set<String> = ["url", "finalURL", "proxy", "redirectedTo", "location"]
    /// Members whose value is a secret as a whole.
    static let secretMembers: Set<String> = ["cookies", "cookie", "credentials", "password", "authorization", "hostLogins", "jarCookies"]
    /// Members of free text that may quote a URL.
    static let textMembers: Set<String> = ["error", "message", "note"]

    static func redacted(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            var result: [String: JSONValue] = [:]
            result.reserveCapacity(members.count)
            for (key, member) in members {
                result[key] = redacted(member, as: key)
            }
            return .object(result)
        case .array(let items):
            return .array(items.map(redacted))
        default:
            return value
        }
    }

    private static func redacted(_ member: JSONValue, as key: String) -> JSONValue {
        if secretMembers.contains(key), member != .null { return .string(Redaction.mask) }
        switch member {
        case .string(let text) where urlMembers.contains(key):
            return .string(Redaction.url(text))
        case .string(let text) where textMembers.contains(key):
            return .string(Redaction.text(text))
        case .array(let items) where key == "headers":
            return .array(items.map(header))
        default:
            return redacted(member)
        }
    }

    /// A header as the wire writes it: `{"name": …, "value": …}` or `"Name: value"`.
    private static func header(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(var members):
            if let name = members["name"]?.stringValue, let text = members["value"]?.stringValue {
                members["value"] = .string(Redaction.headerValue(name: name, value: text))
            }
            return .object(members)
        case .string(let line):
            guard let colon = line.firstIndex(of: ":") else { return value }
            let name = String(line[..<colon])
            return .string(name + ": " + Redaction.headerValue(name: name, value: String(line[line.index(after: colon)...])))
        default:
            return redacted(value)
        }
    }
}
