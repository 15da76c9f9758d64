import struct Foundation.URL

/// Hides secrets in what Haul shows or logs: a URL's `user:password@` and the values of credential headers
/// become `***`. Everything a person sees about a URL or a header passes through here.
package enum Redaction {
    public static let mask = "***"

    /// Header names whose values are credentials.
    public static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// `url` with any userinfo replaced by `***`.
    public static func url(_ url: URL) -> String {
        self.url(url.absoluteString)
    }

    /// A URL string with any userinfo replaced by `***` (left as it is when it has none or does not parse).
    public static func url(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://") else { return text }
        let afterScheme = text[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@") else { return text }
        return String(text[..<schemeEnd.upperBound]) + mask + "@" + String(afterScheme[authority.index(after: at)...])
    }

    /// The value of header `name` as it may be shown: `***` for credentials.
    public static func headerValue(name: String, value: String) -> String {
        secretHeaders.contains(name.lowercased()) ? mask : value
    }

    /// Replaces every URL userinfo inside free text (an error message from a library) with `***`.
    public static func text(_ text: String) -> String {
        guard text.contains("@"), text.contains("://") else { return text }
        var result = ""
        var rest = Substring(text)
        while let schemeEnd = rest.range(of: "://") {
            result += rest[..<schemeEnd.upperBound]
            rest = rest[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" || $0 == " " || $0 == "\"" || $0 == "'" || $0 == ")" } ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@") {
                result += mask + "@"
                rest = rest[rest.index(after: at)...]
            }
        }
        return result + rest
    }
}
