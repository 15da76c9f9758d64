import Foundation

/// Hides secrets in what Haul shows or logs: a URL's `user:password@`, the values of signature, credential and
/// token query parameters (pre-signed S3, Google Cloud Storage and Azure URLs, OAuth tokens) and the values of
/// credential headers become `***`. Everything a person sees about a URL or a header passes through here; the
/// request itself keeps the real URL.
package enum Redaction {
    public static let mask = "***"

    /// Header names whose values are credentials.
    public static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// Query parameters (lower-cased names) whose values are credentials: S3's and Google's signed-URL signature,
    /// credential and session token, Azure's SAS signature `sig`, Alibaba OSS's access key id, Backblaze B2's
    /// `Authorization`, API keys (`key` as Google's, `api_key`, `apikey`), OAuth's tokens and client secret, and the
    /// generic `token`, `signature` (CloudFront signs with `Signature`), `password`, `secret` and `auth`; also OSS's
    /// `x-oss-signature`, GitLab's `private_token`, Akamai's `hdnts` and `__gda__`, nginx secure_link's `md5`, `hmac`,
    /// `jwt`, session ids (Java's `jsessionid` path parameter, PHP's `phpsessid`) and access or secret keys by their
    /// common names, Alibaba's and Tencent's CDN signature `auth_key`, and an OAuth authorization `code`. A name is
    /// compared with `-` and `_` alike (`api-key` is `api_key`).
    public static let secretQueryParameters: Set<String> = [
        "x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature", "x-goog-credential",
        "ossaccesskeyid", "authorization", "sig", "token", "access_token", "refresh_token", "id_token", "client_secret",
        "signature", "key", "api_key", "apikey", "password", "passwd", "secret", "auth",
        "x-oss-signature", "x-oss-credential", "x-oss-security-token", "private_token", "hdnts", "__gda__", "md5", "hmac",
        "jwt", "session", "sessionid", "session_id", "pwd", "access_key", "secret_key", "access_key_id", "secret_access_key",
        "auth_key", "jsessionid", "phpsessid", "code", "x_api_key",
    ]

    /// ``secretQueryParameters`` with `-` read as `_`.
    private static let foldedSecretNames = Set(secretQueryParameters.map(folded))

    /// `name` lower-cased, with `-` read as `_`.
    private static func folded(_ name: String) -> String {
        String(name.lowercased().map { $0 == "-" ? "_" : $0 })
    }

    /// `url` as it may be shown: userinfo and secret query values replaced by `***`.
    public static func url(_ url: URL) -> String {
        self.url(url.absoluteString)
    }

    /// A URL string as it may be shown: any userinfo and the value of every secret query (or fragment) parameter
    /// replaced by `***`; everything else is left exactly as it is (a string that does not parse is treated the
    /// same way, and one without `://` to find an authority by, such as `user:pw@proxy:3128` or `http:/u:pw@host`,
    /// has everything before its last `@` masked).
    public static func url(_ text: String) -> String {
        maskingQuery(maskingUserinfo(text), stoppingAt: { _ in false })
    }

    /// The value of header `name` as it may be shown: `***` for credentials.
    public static func headerValue(name: String, value: String) -> String {
        secretHeaders.contains(name.lowercased()) ? mask : value
    }

    /// Free text (an error message from a library, a header value) as it may be shown: every URL's userinfo and
    /// every secret query parameter's value (`?NAME=` or `&NAME=`, also in a relative URL) replaced by `***`.
    public static func text(_ text: String) -> String {
        var result = text
        if result.contains("@"), result.contains("://") { result = maskingAllUserinfo(result) }
        if result.contains("=") {
            result = maskingQuery(result, stoppingAt: { $0.isWhitespace || "\"'<>()".contains($0) })
        }
        return result
    }

    /// Whether `name` (a query parameter's name, percent-encoded or not) is one whose value is a secret.
    public static func isSecretQueryParameter(_ name: Substring) -> Bool {
        guard name.count <= 32 else { return false }
        let decoded = name.removingPercentEncoding ?? String(name)
        return foldedSecretNames.contains(folded(decoded))
    }

    /// `text` with the authority's userinfo of its one URL replaced.
    private static func maskingUserinfo(_ text: String) -> String {
        // Most URLs have no userinfo: looked for byte by byte first, as this runs for every download (every
        // delimiter is ASCII).
        guard let lastAt = text.utf8.lastIndex(of: UInt8(ascii: "@")) else { return text }
        guard let schemeEnd = text.firstRange(of: "://") else { return mask + String(text[lastAt...]) }
        let afterScheme = text[schemeEnd.upperBound...]
        guard let at = userinfoEnd(afterScheme) else { return text }
        return String(text[..<schemeEnd.upperBound]) + mask + "@" + String(afterScheme[afterScheme.index(after: at)...])
    }

    /// Replaces the userinfo of every URL inside free text.
    private static func maskingAllUserinfo(_ text: String) -> String {
        var result = ""
        var rest = Substring(text)
        while let schemeEnd = rest.firstRange(of: "://") {
            result += rest[..<schemeEnd.upperBound]
            rest = rest[schemeEnd.upperBound...]
            let urlEnd = rest.firstIndex { $0.isWhitespace || $0 == "\"" || $0 == "'" || $0 == "<" || $0 == ">" } ?? rest.endIndex
            if let at = userinfoEnd(rest[..<urlEnd]) {
                result += mask + "@"
                rest = rest[rest.index(after: at)...]
            }
        }
        return result + rest
    }

    /// The `@` that ends the userinfo of the URL whose authority starts `url` (the text after `://`), if it has any.
    ///
    /// Normally the authority's last `@`. A password with a `/`, `?` or `#` left unencoded (`http://u:pa/ss@host`)
    /// ends the authority early, at `u:pa`: no `host[:port]` (an invalid URL), or, when the password's start is
    /// digits, a host and port followed by an `@` in the path. Then everything up to that last `@` is masked, which
    /// may hide more than the password (`http://host:8080/@scope`) but not less. One password is still read as
    /// every URL parser reads it: digits, then `?` or `#` (`u:80?x@h` is host `u`, port 80 and a query).
    package static func userinfoEnd(_ url: Substring) -> Substring.Index? {
        let authorityEnd = url.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
        let authority = url[..<authorityEnd]
        let at = authority.lastIndex(of: "@")
        let hostAndPort = at.map { authority[authority.index(after: $0)...] } ?? authority
        // Another `@` further on, in a URL no parser reads (`u:p@%c1#x@host`): the password may run to it.
        if let at, url[url.index(after: at)...].contains("@"), URL(string: "http://" + url)?.host == nil {
            return url.lastIndex(of: "@")
        }
        switch hostPart(hostAndPort) {
        case .host: return at
        case .hostAndPort:
            // `http://u:123/x@host`: host `u`, port 123 to a parser, but a path with `@` is far rarer than this
            // password. A query's `@` (`?user=a@b`) is not taken for it.
            let queryStart = url.firstIndex { $0 == "?" || $0 == "#" } ?? url.endIndex
            return at ?? url[..<queryStart].lastIndex(of: "@")
        case .invalid: return url.lastIndex(of: "@") ?? at
        }
    }

    private enum HostPart { case host, hostAndPort, invalid }

    /// What `text` is as an authority's `host[:port]`: a port is digits, and only a bracketed IPv6 address has more
    /// colons.
    private static func hostPart(_ text: Substring) -> HostPart {
        guard !text.isEmpty else { return .invalid }
        var rest = text
        if rest.first == "[" {
            guard let close = rest.firstIndex(of: "]") else { return .invalid }
            rest = rest[rest.index(after: close)...]
            guard !rest.isEmpty else { return .host }
            guard rest.first == ":" else { return .invalid }
            return rest.dropFirst().allSatisfy(\.isASCIIDigit) ? .hostAndPort : .invalid
        }
        let colon = rest.firstIndex(of: ":")
        let name = rest[..<(colon ?? rest.endIndex)]
        guard !name.isEmpty, isRegisteredName(name) else { return .invalid }
        guard let colon else { return .host }
        return rest[rest.index(after: colon)...].allSatisfy(\.isASCIIDigit) ? .hostAndPort : .invalid
    }

    /// RFC 3986's reg-name (letters of any script, as in an IDN): unreserved characters, sub-delimiters and `%XX`
    /// escapes (an IPv4 address is one too).
    private static func isRegisteredName(_ host: Substring) -> Bool {
        var escape = 0
        for character in host {
            if escape > 0 {
                guard character.isHexDigit else { return false }
                escape -= 1
            } else if character == "%" {
                escape = 2
            } else {
                guard character.isLetter || character.isNumber || "-._~!$&'()*+,;=".contains(character) else { return false }
            }
        }
        return escape == 0
    }

    /// Masks the value of every secret parameter that follows a `?`, `#`, `&` or `;` (a fragment may carry parameters
    /// too: OAuth's `#access_token=`; `;` separates them in some queries and starts a path's, `/f;jsessionid=`): the
    /// value runs to the next `&`, `;` or `#`, or to the first character for which `isEnd` holds (the end of a URL
    /// inside text).
    private static func maskingQuery(_ text: String, stoppingAt isEnd: (Character) -> Bool) -> String {
        let values = secretQueryValues(in: Substring(text), stoppingAt: isEnd)
        guard !values.isEmpty else { return text }
        var result = ""
        var shown = text.startIndex
        for value in values {
            result += text[shown..<value.lowerBound] + mask
            shown = value.upperBound
        }
        return result + text[shown...]
    }

    /// Where the (non-empty) values of the secret parameters after a `?`, `#`, `&` or `;` in `text` are; a value runs
    /// to the next `&`, `;` or `#`, or to the first character for which `isEnd` holds. What ``url(_:)`` and
    /// ``text(_:)`` mask, for a caller that masks in place.
    package static func secretQueryValues(
        in text: Substring, stoppingAt isEnd: (Character) -> Bool = { _ in false }
    ) -> [Range<Substring.Index>] {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: ";") }) else { return [] }
        var values: [Range<Substring.Index>] = []
        var inParameters = false
        // Past a `?` or `#`: before one, parameters are a path's (`;`), whose value also ends at the query's `?`.
        var inQuery = false
        var rest = text
        while let index = rest.firstIndex(where: { $0 == "?" || $0 == "#" || $0 == ";" || $0 == "&" || (inParameters && isEnd($0)) }) {
            let character = rest[index]
            rest = rest[rest.index(after: index)...]
            if character == "?" || character == "#" || character == ";" {
                inParameters = true
                if character != ";" { inQuery = true }
            } else if character != "&" {
                // The URL ended inside text; a later `?` starts another one's query.
                inParameters = false
                continue
            }
            guard inParameters else { continue }
            let nameEnd = rest.firstIndex { $0 == "=" || $0 == "&" || $0 == ";" || $0 == "#" || isEnd($0) } ?? rest.endIndex
            guard nameEnd < rest.endIndex, rest[nameEnd] == "=", isSecretQueryParameter(rest[..<nameEnd]) else { continue }
            let valueStart = rest.index(after: nameEnd)
            let valueEnd = rest[valueStart...].firstIndex { $0 == "&" || $0 == ";" || $0 == "#" || (!inQuery && $0 == "?") || isEnd($0) } ?? rest.endIndex
            if valueStart < valueEnd { values.append(valueStart..<valueEnd) }
            rest = rest[valueEnd...]
        }
        return values
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
