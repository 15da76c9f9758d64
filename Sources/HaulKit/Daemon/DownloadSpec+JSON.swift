import Foundation

// The one JSON shape of a DownloadSpec (docs/protocol.md, `tasks.add`): what a client sends the daemon, what a
// session's store keeps in its `spec` column, and what `Codable` reads and writes. Defaults are left out, so a
// plain download is `{"url": "..."}`.
//
//     {"url": "https://…", "path": "/abs/file" | "directory": "/abs/folder",
//      "headers": [{"name": "…", "value": "…"}], "checksum": "sha256:…", "segments": 4,
//      "options": {"overwrite", "continue", "rateLimit", "retries", "retryWait", "minSegmentSize",
//                  "maxConnectionsPerHost", "allowInsecureRedirects", "remoteTime", "completionCommand",
//                  "proxy": {"url", "noProxy", "environment"}, "tls": {"caFile", "caDirectory", "insecure",
//                  "clientCertificate", "clientKey"}, "credentials": {"user", "password"}, "proxyTunnel",
//                  "ipFamily": "v4" | "v6", "timestamping",
//                  "cookies": [{"domain", "subdomains", "path", "secure", "expires", "name", "value"}]}}
extension DownloadSpec {
    /// The spec as JSON members (a `tasks.add` entry adds `priority` and `id` beside them).
    package var jsonMembers: [String: JSONValue] {
        var object: [String: JSONValue] = ["url": .string(url.absoluteString)]
        switch destination {
        case .file(let path)?: object["path"] = .string(path)
        case .directory(let folder)?: object["directory"] = .string(folder)
        case .standardOutput?, nil: break
        }
        if !headers.fields.isEmpty { object["headers"] = Self.json(headers) }
        if let checksum { object["checksum"] = .string(checksum.description) }
        if let segments { object["segments"] = JSONValue(segments) }
        let options = optionMembers
        if !options.isEmpty { object["options"] = .object(options) }
        return object
    }

    package var json: JSONValue { .object(jsonMembers) }

    private var optionMembers: [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        if overwrite { object["overwrite"] = true }
        if continuePartial { object["continue"] = true }
        if let rateLimit { object["rateLimit"] = JSONValue(rateLimit) }
        if let maxRetries { object["retries"] = JSONValue(maxRetries) }
        if let retryWait { object["retryWait"] = .number(retryWait) }
        if let minSegmentSize { object["minSegmentSize"] = JSONValue(minSegmentSize) }
        if let maxConnectionsPerHost { object["maxConnectionsPerHost"] = JSONValue(maxConnectionsPerHost) }
        if allowInsecureRedirects { object["allowInsecureRedirects"] = true }
        if let keepsRemoteTime { object["remoteTime"] = .bool(keepsRemoteTime) }
        if let completionCommand { object["completionCommand"] = .string(completionCommand) }
        if let proxies {
            var proxy: [String: JSONValue] = [:]
            if let explicit = proxies.explicit { proxy["url"] = .string(explicit.url) }
            if let noProxy = proxies.noProxy { proxy["noProxy"] = .string(noProxy) }
            if !proxies.environment.isEmpty { proxy["environment"] = .object(proxies.environment.mapValues { .string($0) }) }
            object["proxy"] = .object(proxy)
        }
        if let tls {
            var trust: [String: JSONValue] = [:]
            if let file = tls.caFile { trust["caFile"] = .string(file) }
            if let folder = tls.caDirectory { trust["caDirectory"] = .string(folder) }
            if tls.insecure { trust["insecure"] = true }
            if let certificate = tls.clientCertificate { trust["clientCertificate"] = .string(certificate) }
            if let key = tls.clientKey { trust["clientKey"] = .string(key) }
            object["tls"] = .object(trust)
        }
        if proxyTunnel { object["proxyTunnel"] = true }
        if let ipFamily { object["ipFamily"] = .string(ipFamily.rawValue) }
        if timestamping { object["timestamping"] = true }
        if !cookies.isEmpty {
            object["cookies"] = .array(cookies.map { cookie in
                [
                    "domain": .string(cookie.domain), "subdomains": .bool(cookie.includesSubdomains), "path": .string(cookie.path),
                    "secure": .bool(cookie.secure), "expires": JSONValue(cookie.expires), "name": .string(cookie.name),
                    "value": .string(cookie.value),
                ]
            })
        }
        if let credentials {
            object["credentials"] = .object(["user": .string(credentials.user), "password": .string(credentials.password)])
        }
        return object
    }

    /// Reads the spec from its JSON members, checking every one (``validate()`` included); the message of the error
    /// names the offending member.
    package init(json params: Params) throws(RPCError) {
        let text = try params.requiredString("url")
        let url: URL
        do { url = try UserInput.url(text) } catch { throw .invalidParams("\"url\": \(error.message)") }
        self.init(url: url)
        switch (try params.string("path"), try params.string("directory")) {
        case (let path?, nil): destination = .file(path)
        case (nil, let folder?): destination = .directory(folder)
        case (nil, nil): break
        case (.some, .some): throw .invalidParams("give \"path\" or \"directory\", not both")
        }
        if let objects = try params.objects("headers") { headers = try Self.headers(objects, "headers") }
        if let text = try params.string("checksum") {
            do { checksum = try Checksum(parsing: text) } catch { throw .invalidParams("\"checksum\": \(error.message)") }
        }
        if let count = try params.int("segments") {
            guard Self.segmentRange.contains(count) else { throw .invalidParams("\"segments\" must be between 1 and 64") }
            segments = count
        }
        if let options = try params.object("options") { try readOptions(options) }
        do { try validate() } catch { throw .invalidParams("\"options\": \(error.message)") }
    }

    private mutating func readOptions(_ params: Params) throws(RPCError) {
        overwrite = try params.bool("overwrite") ?? false
        continuePartial = try params.bool("continue") ?? false
        rateLimit = try params.int64("rateLimit")
        maxRetries = try params.int("retries")
        retryWait = try params.double("retryWait")
        minSegmentSize = try params.int64("minSegmentSize")
        maxConnectionsPerHost = try params.int("maxConnectionsPerHost")
        allowInsecureRedirects = try params.bool("allowInsecureRedirects") ?? false
        keepsRemoteTime = try params.bool("remoteTime")
        completionCommand = try params.string("completionCommand")
        if let proxy = try params.object("proxy") {
            var environment: [String: String] = [:]
            if let variables = try proxy.object("environment") {
                for name in ProxyChoice.variables {
                    if let value = try variables.string(name) { environment[name] = value }
                }
            }
            var explicit: ProxyEndpoint?
            if let text = try proxy.string("url") {
                do { explicit = try ProxyEndpoint(parsing: text) } catch { throw .invalidParams("\"proxy.url\": \(error.message)") }
            }
            proxies = ProxyChoice(explicit: explicit, noProxy: try proxy.string("noProxy"), environment: environment)
        }
        if let trust = try params.object("tls") {
            tls = TLSTrust(
                caFile: try trust.string("caFile"), caDirectory: try trust.string("caDirectory"),
                insecure: try trust.bool("insecure") ?? false,
                clientCertificate: try trust.string("clientCertificate"), clientKey: try trust.string("clientKey"))
        }
        if let object = try params.object("credentials") {
            credentials = Credentials(user: try object.requiredString("user"), password: try object.string("password") ?? "")
        }
        proxyTunnel = try params.bool("proxyTunnel") ?? false
        if let family = try params.string("ipFamily") {
            guard let known = IPFamily(rawValue: family) else { throw .invalidParams("\"options.ipFamily\" must be \"v4\" or \"v6\"") }
            ipFamily = known
        }
        timestamping = try params.bool("timestamping") ?? false
        if let objects = try params.objects("cookies") {
            cookies = try objects.map { (object: Params) throws(RPCError) -> Cookie in
                let name = try object.requiredString("name"), value = try object.string("value") ?? ""
                let domain = try object.requiredString("domain"), path = try object.string("path") ?? "/"
                guard !name.isEmpty, CookieJar.isHeaderSafe(name), CookieJar.isHeaderSafe(value), !value.contains(";"),
                      !name.contains(";"), !name.contains("="), !domain.isEmpty else {
                    throw .invalidParams("\"options.cookies\" holds a cookie that cannot be sent")
                }
                return Cookie(
                    domain: domain, includesSubdomains: try object.bool("subdomains") ?? false, path: path,
                    secure: try object.bool("secure") ?? false, expires: try object.int64("expires") ?? 0, name: name, value: value)
            }
        }
    }

    static func json(_ headers: HTTPFields) -> JSONValue {
        .array(headers.fields.map { ["name": .string($0.name), "value": .string($0.value)] })
    }

    /// Header fields from `{"name", "value"}` objects; a name or value that could not be sent is refused.
    static func headers(_ objects: [Params], _ key: String) throws(RPCError) -> HTTPFields {
        var fields = HTTPFields()
        for object in objects {
            let name = try object.requiredString("name"), value = try object.requiredString("value")
            guard !name.isEmpty, !name.contains(where: { $0 == ":" || $0.isWhitespace || $0.isNewline }),
                  !value.contains(where: \.isNewline) else {
                throw .invalidParams("\"\(key)\" holds an invalid header field \"\(name)\"")
            }
            fields.append(name, value)
        }
        return fields
    }

    /// Reads a spec from its JSON text (a store's column); `nil` when it is not a valid spec.
    package static func parse(_ text: String) -> DownloadSpec? {
        guard case .object(let members)? = JSONValue.parse(Array(text.utf8)) else { return nil }
        return try? DownloadSpec(json: Params(members))
    }
}

extension DownloadSpec: Codable {
    /// Reads the JSON shape above, with every check of `tasks.add`.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        guard case .object(let members) = value else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a download spec is a JSON object"))
        }
        do {
            try self.init(json: Params(members))
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    /// Writes the JSON shape above.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}
