// The protocol's shapes of the parts of ``DownloadSettings`` (docs/protocol.md, "Add options"): what their `Codable`
// reads and writes, so that the settings' own is synthesized. Members at their defaults are left out, and read back
// as those defaults when absent.

private struct WireKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension ProxyChoice {
    private enum CodingKeys: String, CodingKey { case url, noProxy, environment }

    /// `{"url": "http://user:pass@proxy:3128", "noProxy": "…", "environment": {"https_proxy": "…"}}`, every member
    /// optional; of `environment`, only the variables that choose a proxy (``variables``) are read.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var explicit: ProxyEndpoint?
        if let text = try container.decodeIfPresent(String.self, forKey: .url) {
            do { explicit = try ProxyEndpoint(parsing: text) } catch { throw InputError("\"proxy.url\": \(error.message)") }
        }
        var environment: [String: String] = [:]
        if container.contains(.environment) {
            let variables = try container.nestedContainer(keyedBy: WireKey.self, forKey: .environment)
            for name in Self.variables {
                if let value = try variables.decodeIfPresent(String.self, forKey: WireKey(name)) { environment[name] = value }
            }
        }
        self.init(explicit: explicit, noProxy: try container.decodeIfPresent(String.self, forKey: .noProxy), environment: environment)
    }

    /// Writes the shape ``init(from:)`` reads; the proxy's URL carries its credentials.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(explicit?.url, forKey: .url)
        try container.encodeIfPresent(noProxy, forKey: .noProxy)
        if !environment.isEmpty { try container.encode(environment, forKey: .environment) }
    }
}

extension TLSTrust {
    private enum CodingKeys: String, CodingKey { case caFile, caDirectory, insecure, clientCertificate, clientKey }

    /// `{"caFile", "caDirectory", "insecure", "clientCertificate", "clientKey"}`, every member optional.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            caFile: try container.decodeIfPresent(String.self, forKey: .caFile),
            caDirectory: try container.decodeIfPresent(String.self, forKey: .caDirectory),
            insecure: try container.decodeIfPresent(Bool.self, forKey: .insecure) ?? false,
            clientCertificate: try container.decodeIfPresent(String.self, forKey: .clientCertificate),
            clientKey: try container.decodeIfPresent(String.self, forKey: .clientKey))
    }

    /// Writes the shape ``init(from:)`` reads; `insecure` only when set.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(caFile, forKey: .caFile)
        try container.encodeIfPresent(caDirectory, forKey: .caDirectory)
        if insecure { try container.encode(true, forKey: .insecure) }
        try container.encodeIfPresent(clientCertificate, forKey: .clientCertificate)
        try container.encodeIfPresent(clientKey, forKey: .clientKey)
    }
}

extension Credentials {
    private enum CodingKeys: String, CodingKey { case user, password }

    /// `{"user": "…", "password": "…"}`; `user` is required, `password` defaults to empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            user: try container.decode(String.self, forKey: .user),
            password: try container.decodeIfPresent(String.self, forKey: .password) ?? "")
    }

    /// Writes both members.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(user, forKey: .user)
        try container.encode(password, forKey: .password)
    }
}

extension Cookie {
    private enum CodingKeys: String, CodingKey { case domain, subdomains, path, secure, expires, name, value }

    /// `{"domain", "subdomains", "path", "secure", "expires", "name", "value"}`: `domain` and `name` are required,
    /// `path` defaults to `/`, `value` to empty, the others to `false` and 0.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            domain: try container.decode(String.self, forKey: .domain),
            includesSubdomains: try container.decodeIfPresent(Bool.self, forKey: .subdomains) ?? false,
            path: try container.decodeIfPresent(String.self, forKey: .path) ?? "/",
            secure: try container.decodeIfPresent(Bool.self, forKey: .secure) ?? false,
            expires: try container.decodeIfPresent(Int64.self, forKey: .expires) ?? 0,
            name: try container.decode(String.self, forKey: .name),
            value: try container.decodeIfPresent(String.self, forKey: .value) ?? "")
    }

    /// Writes every member.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(domain, forKey: .domain)
        try container.encode(includesSubdomains, forKey: .subdomains)
        try container.encode(path, forKey: .path)
        try container.encode(secure, forKey: .secure)
        try container.encode(expires, forKey: .expires)
        try container.encode(name, forKey: .name)
        try container.encode(value, forKey: .value)
    }

    /// Whether it can go in a `Cookie` header as it is: a name and a domain, and nothing that would end the field
    /// or the pair.
    package var maySend: Bool {
        !name.isEmpty && CookieJar.isHeaderSafe(name) && CookieJar.isHeaderSafe(value) && !value.contains(";")
            && !name.contains(";") && !name.contains("=") && !domain.isEmpty
    }
}

extension IPFamily {
    /// `"v4"` or `"v6"`; anything else is refused with a message that says so.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let family = IPFamily(rawValue: text) else {
            let name = decoder.codingPath.isEmpty ? "ipFamily" : decoder.codingPath.map(\.stringValue).joined(separator: ".")
            throw InputError("\"\(name)\" must be \"v4\" or \"v6\"")
        }
        self = family
    }
}
