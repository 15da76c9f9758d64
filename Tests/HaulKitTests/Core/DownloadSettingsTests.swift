import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

/// `DownloadSettings`: one value for a download's options, resolved once (spec over session over engine), coded by
/// its synthesized `Codable` under the protocol's names.
@Suite struct DownloadSettingsTests {
    /// Settings with every member said (a member added to `DownloadSettings` must be said here too: the first test
    /// fails until it is, and then checks its merge and its coding).
    static func everyMemberSaid() throws -> DownloadSettings {
        var settings = DownloadSettings()
        settings.overwrite = false
        settings.continuePartial = false
        settings.rateLimit = 1000
        settings.maxRetries = 2
        settings.retryWait = 0.5
        settings.minSegmentSize = 4096
        settings.maxConnectionsPerHost = 3
        settings.allowInsecureRedirects = true
        settings.maxRedirects = 4
        settings.keepsRemoteTime = false
        settings.completionCommand = "true"
        settings.proxies = ProxyChoice(explicit: try ProxyEndpoint(parsing: "socks5h://u:p@proxy:1080"), noProxy: "localhost")
        settings.tls = TLSTrust(caFile: "/ca.pem")
        settings.credentials = Credentials(user: "u", password: "p")
        settings.proxyTunnel = true
        settings.ipFamily = .v4
        settings.timestamping = true
        settings.noClobber = false
        settings.omittedHeaders = ["user-agent"]
        settings.cookies = [Cookie(domain: "example.com", includesSubdomains: true, path: "/", secure: false, expires: 9, name: "a", value: "b")]
        settings.hostLogins = ["login.example.org": Credentials(user: "u", password: "p")]
        settings.jarCookies = [Cookie(domain: "cdn.example.com", includesSubdomains: false, path: "/", secure: true, expires: 0, name: "c", value: "d")]
        return settings
    }

    @Test func everyMemberIsMergedAndCoded() throws {
        let full = try Self.everyMemberSaid()
        let unsaid = Mirror(reflecting: full).children.filter { child in
            Mirror(reflecting: child.value).displayStyle == .optional && Mirror(reflecting: child.value).children.isEmpty
        }
        #expect(unsaid.isEmpty, "say every member in everyMemberSaid(): \(unsaid.compactMap(\.label))")
        // What is said wins; what is not comes from below, member by member.
        #expect(DownloadSettings().resolved(over: full) == full)
        #expect(full.resolved(over: DownloadSettings()) == full)
        var other = DownloadSettings()
        other.maxRetries = 7
        other.proxies = ProxyChoice()
        #expect(full.resolved(over: other) == full)
        var partial = DownloadSettings()
        partial.maxRetries = 9
        var expected = full
        expected.maxRetries = 9
        #expect(partial.resolved(over: full) == expected)
        // Every member goes through the protocol's JSON and back, by both coders.
        #expect(try JSONValueDecoder.decode(DownloadSettings.self, from: JSONValueEncoder.encode(full)) == full)
        #expect(try JSONDecoder().decode(DownloadSettings.self, from: JSONEncoder().encode(full)) == full)
    }

    @Test func theProtocolsNamesAreTheKeys() throws {
        let keys = Set(try JSONValueEncoder.encode(Self.everyMemberSaid()).objectValue?.keys.map { $0 } ?? [])
        #expect(keys == [
            "overwrite", "continue", "rateLimit", "retries", "retryWait", "minSegmentSize", "maxConnectionsPerHost",
            "allowInsecureRedirects", "maxRedirects", "remoteTime", "completionCommand", "proxy", "tls", "credentials", "proxyTunnel",
            "ipFamily", "timestamping", "noClobber", "omitHeaders", "cookies", "hostLogins", "jarCookies",
        ])
        #expect(try JSONValueEncoder.encode(DownloadSettings()) == .object([:]), "nothing said, nothing written")
    }

    /// Spec over session over engine: a background session's settings reach the daemon with each task, a local
    /// session's through `DownloadDefaults`, and the engine's when the download runs.
    @Test func theSpecWinsOverTheSessionWhichWinsOverTheEngine() {
        var spec = DownloadSpec(url: URL(string: "https://example.com/a")!, destination: .file("/d/a"))
        spec.maxRetries = 1
        var defaults = DownloadDefaults()
        defaults.settings.maxRetries = 4
        defaults.settings.minSegmentSize = 1 << 16
        defaults.settings.proxyTunnel = true
        let options = DownloadOptions(spec, defaults: defaults)
        #expect(options.retry.maxRetries == 1 && options.minSegmentSize == 1 << 16 && options.proxyTunnel)
        var engine = DownloadSettings()
        engine.minSegmentSize = 1
        engine.maxConnectionsPerHost = 2
        let running = options.settings.resolved(over: engine)
        #expect(running.minSegmentSize == 1 << 16 && running.maxConnectionsPerHost == 2 && running.maxRetries == 1)
        // What nobody says is the engine's built-in default.
        let plain = DownloadOptions(url: spec.url, destination: .file("/d/a"))
        #expect(plain.retry.maxRetries == 5 && plain.maxConnectionsPerHost == 8 && plain.keepsRemoteTime && !plain.overwrite)
    }

    /// A session's `proxies` and `tls` are its settings' (the same value, not a copy that could differ).
    @Test func aSessionsProxiesAndTrustAreItsSettings() throws {
        var configuration = SessionConfiguration()
        #expect(configuration.downloadSettings.isEmpty)
        configuration.tls = TLSTrust(insecure: true)
        #expect(configuration.downloadSettings.tls == TLSTrust(insecure: true))
        configuration.tls = TLSTrust()
        #expect(configuration.downloadSettings.tls == nil, "the default says nothing")
        var engine = TransferEngine.Configuration()
        engine.proxies = ProxyChoice(noProxy: "*")
        #expect(engine.downloadSettings.proxies == ProxyChoice(noProxy: "*"))
    }

    /// One check of the values, whoever gives them: the protocol's messages name the member.
    @Test func theChecksAreTheSettingsWhereverTheyComeFrom() {
        var settings = DownloadSettings()
        settings.cookies = [Cookie(domain: "example.com", includesSubdomains: false, path: "/", secure: false, expires: 0, name: "a;b", value: "c")]
        #expect(throws: InputError.self) { try settings.validate() }
        settings.cookies = nil
        settings.overwrite = true
        settings.continuePartial = false
        #expect(throws: Never.self) { try settings.validate() }
        settings.continuePartial = true
        #expect(throws: InputError.self) { try settings.validate() }
        settings.continuePartial = nil
        settings.noClobber = true
        #expect(throws: InputError.self, "-nc with overwrite") { try settings.validate() }
        settings.overwrite = nil
        #expect(throws: Never.self) { try settings.validate() }
        for (options, fragment) in [
            (#"{"ipFamily": "v5"}"#, #""options.ipFamily" must be "v4" or "v6""#),
            (#"{"retries": 1001}"#, "retries must be between 0 and 1000"),
            (#"{"maxRedirects": -1}"#, "the redirect limit must be between 0 and 1000"),
            (#"{"proxy": {"url": "ftp://x"}}"#, #""proxy.url""#),
            (#"{"cookies": [{"domain": "example.com", "name": "a=b"}]}"#, "cannot be sent"),
            (#"{"credentials": {"password": "p"}}"#, #""user" is required"#),
            (#"{"jarCookies": [{"domain": "example.com", "name": "a;b"}]}"#, "cannot be sent"),
            (#"{"hostLogins": {"Example.com": {"user": "u"}}}"#, "not a lower-case host name"),
        ] {
            let text = #"{"url": "https://example.com/a", "directory": "/d", "options": "# + options + "}"
            do {
                _ = try SpecCompatibilityTests.wireDecode(text)
                Issue.record("\(options) was accepted")
            } catch {
                #expect((error as? RPCError)?.message.contains(fragment) == true, "\(options): \(error)")
            }
        }
    }
}
