import Foundation

/// How a task was stored before schema v5, read once to make its ``DownloadSpec``: the columns `headers` (JSON),
/// `checksum` (`ALG:HEX`), `segments` and `options` (the former `TaskOptions` as JSON, NULL for the defaults).
enum LegacyTaskColumns {
    /// The former `TaskOptions`, with the member names it was encoded with.
    private struct Options: Decodable {
        var overwrite = false
        var continuePartial = false
        var rateLimit: Int64?
        var maxRetries: Int?
        var retryWait: Double?
        var minSegmentSize: Int64?
        var maxConnectionsPerHost: Int?
        var allowInsecureRedirects = false
        var proxies: LegacyProxies?
        var tls: TLSTrust?
        var credentials: Credentials?
        var keepsRemoteTime: Bool?
        var completionCommand: String?

        private enum CodingKeys: String, CodingKey {
            case overwrite, continuePartial, rateLimit, maxRetries, retryWait, minSegmentSize, maxConnectionsPerHost
            case allowInsecureRedirects, proxies, tls, credentials, keepsRemoteTime, completionCommand
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            overwrite = try c.decodeIfPresent(Bool.self, forKey: .overwrite) ?? false
            continuePartial = try c.decodeIfPresent(Bool.self, forKey: .continuePartial) ?? false
            rateLimit = try c.decodeIfPresent(Int64.self, forKey: .rateLimit)
            maxRetries = try c.decodeIfPresent(Int.self, forKey: .maxRetries)
            retryWait = try c.decodeIfPresent(Double.self, forKey: .retryWait)
            minSegmentSize = try c.decodeIfPresent(Int64.self, forKey: .minSegmentSize)
            maxConnectionsPerHost = try c.decodeIfPresent(Int.self, forKey: .maxConnectionsPerHost)
            allowInsecureRedirects = try c.decodeIfPresent(Bool.self, forKey: .allowInsecureRedirects) ?? false
            proxies = try c.decodeIfPresent(LegacyProxies.self, forKey: .proxies)
            tls = try c.decodeIfPresent(TLSTrust.self, forKey: .tls)
            credentials = try c.decodeIfPresent(Credentials.self, forKey: .credentials)
            keepsRemoteTime = try c.decodeIfPresent(Bool.self, forKey: .keepsRemoteTime)
            completionCommand = try c.decodeIfPresent(String.self, forKey: .completionCommand)
        }
    }

    /// The former encoding of a ``ProxyChoice`` (its members by their Swift names; the protocol's is another).
    private struct LegacyProxies: Decodable {
        var explicit: ProxyEndpoint?
        var noProxy: String?
        var environment: [String: String]

        var choice: ProxyChoice { ProxyChoice(explicit: explicit, noProxy: noProxy, environment: environment) }
    }

    /// One header field of the `headers` column: `{"name": "...", "value": "..."}`.
    private struct HeaderField: Decodable {
        var name: String
        var value: String
    }

    /// The spec those columns describe; `nil` when they cannot describe one.
    static func spec(
        url: String, kind: String, path: String, headers: String?, checksum: String?, segments: Int?, options: String?
    ) -> DownloadSpec? {
        guard let parsed = try? UserInput.url(url) else { return nil }
        var spec = DownloadSpec(url: parsed)
        switch kind {
        case "file": spec.destination = .file(path)
        case "directory": spec.destination = .directory(path)
        default: return nil
        }
        if let headers {
            guard let fields = try? JSONDecoder().decode([HeaderField].self, from: Data(headers.utf8)) else { return nil }
            spec.headers = HTTPFields(fields.map { HTTPFields.Field(name: $0.name, value: $0.value) })
        }
        if let checksum {
            guard let parsed = try? Checksum(parsing: checksum) else { return nil }
            spec.checksum = parsed
        }
        spec.segments = segments
        if let options {
            guard let old = try? JSONDecoder().decode(Options.self, from: Data(options.utf8)) else { return nil }
            if old.overwrite { spec.overwrite = true }
            if old.continuePartial { spec.continuePartial = true }
            spec.rateLimit = old.rateLimit
            spec.maxRetries = old.maxRetries
            spec.retryWait = old.retryWait
            spec.minSegmentSize = old.minSegmentSize
            spec.maxConnectionsPerHost = old.maxConnectionsPerHost
            if old.allowInsecureRedirects { spec.allowInsecureRedirects = true }
            spec.proxies = old.proxies?.choice
            spec.tls = old.tls
            spec.credentials = old.credentials
            spec.keepsRemoteTime = old.keepsRemoteTime
            spec.completionCommand = old.completionCommand
        }
        return spec
    }
}
