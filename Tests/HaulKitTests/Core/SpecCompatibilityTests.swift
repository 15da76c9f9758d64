import Foundation
import PropertyBased
import Testing
@testable import HaulCore
@testable import HaulKit

/// What the hand-written encoder of `DownloadSpec` (HaulKit's `DownloadSpec+JSON.swift`, removed in issue 28) wrote:
/// a faithful copy of its logic, kept so that the tests can check that every text it wrote — rows of a session's
/// store, `tasks.add` entries of older clients — reads as the same spec with the synthesized coding, and that the
/// protocol's JSON is still the same bytes.
enum LegacySpecJSON {
    static func json(_ spec: DownloadSpec) -> JSONValue {
        var object: [String: JSONValue] = ["url": .string(spec.url.absoluteString)]
        switch spec.destination {
        case .file(let path)?: object["path"] = .string(path)
        case .directory(let folder)?: object["directory"] = .string(folder)
        case .standardOutput?, nil: break
        }
        if !spec.headers.fields.isEmpty {
            object["headers"] = .array(spec.headers.fields.map { ["name": .string($0.name), "value": .string($0.value)] })
        }
        if let checksum = spec.checksum { object["checksum"] = .string(checksum.description) }
        if let segments = spec.segments { object["segments"] = JSONValue(segments) }
        let options = optionMembers(spec)
        if !options.isEmpty { object["options"] = .object(options) }
        return .object(object)
    }

    private static func optionMembers(_ spec: DownloadSpec) -> [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        if spec.overwrite == true { object["overwrite"] = true }
        if spec.continuePartial == true { object["continue"] = true }
        if let rateLimit = spec.rateLimit { object["rateLimit"] = JSONValue(rateLimit) }
        if let maxRetries = spec.maxRetries { object["retries"] = JSONValue(maxRetries) }
        if let retryWait = spec.retryWait { object["retryWait"] = .number(retryWait) }
        if let minSegmentSize = spec.minSegmentSize { object["minSegmentSize"] = JSONValue(minSegmentSize) }
        if let maxConnectionsPerHost = spec.maxConnectionsPerHost { object["maxConnectionsPerHost"] = JSONValue(maxConnectionsPerHost) }
        if spec.allowInsecureRedirects == true { object["allowInsecureRedirects"] = true }
        if let keepsRemoteTime = spec.keepsRemoteTime { object["remoteTime"] = .bool(keepsRemoteTime) }
        if let completionCommand = spec.completionCommand { object["completionCommand"] = .string(completionCommand) }
        if let proxies = spec.proxies {
            var proxy: [String: JSONValue] = [:]
            if let explicit = proxies.explicit { proxy["url"] = .string(explicit.url) }
            if let noProxy = proxies.noProxy { proxy["noProxy"] = .string(noProxy) }
            if !proxies.environment.isEmpty { proxy["environment"] = .object(proxies.environment.mapValues { .string($0) }) }
            object["proxy"] = .object(proxy)
        }
        if let tls = spec.tls {
            var trust: [String: JSONValue] = [:]
            if let file = tls.caFile { trust["caFile"] = .string(file) }
            if let folder = tls.caDirectory { trust["caDirectory"] = .string(folder) }
            if tls.insecure { trust["insecure"] = true }
            if let certificate = tls.clientCertificate { trust["clientCertificate"] = .string(certificate) }
            if let key = tls.clientKey { trust["clientKey"] = .string(key) }
            object["tls"] = .object(trust)
        }
        if spec.proxyTunnel == true { object["proxyTunnel"] = true }
        if let ipFamily = spec.ipFamily { object["ipFamily"] = .string(ipFamily.rawValue) }
        if spec.timestamping == true { object["timestamping"] = true }
        if let cookies = spec.cookies, !cookies.isEmpty {
            object["cookies"] = .array(cookies.map { cookie in
                [
                    "domain": .string(cookie.domain), "subdomains": .bool(cookie.includesSubdomains), "path": .string(cookie.path),
                    "secure": .bool(cookie.secure), "expires": JSONValue(cookie.expires), "name": .string(cookie.name),
                    "value": .string(cookie.value),
                ]
            })
        }
        if let credentials = spec.credentials {
            object["credentials"] = .object(["user": .string(credentials.user), "password": .string(credentials.password)])
        }
        return object
    }
}

/// The synthesized coding reads what the hand-written one wrote, and writes the protocol's JSON as it did.
@Suite struct SpecCompatibilityTests {
    static let url = URL(string: "https://example.com/a.iso")!

    /// Texts the hand-written encoder wrote (a store's `spec` column, a `tasks.add` entry), with the specs they are.
    static func samples() throws -> [(text: String, spec: DownloadSpec)] {
        var rich = DownloadSpec(url: url, destination: .file("/d/a.iso"))
        rich.headers = ["X-A": "1"]
        rich.checksum = try Checksum(parsing: "md5:" + String(repeating: "0", count: 32))
        rich.segments = 4
        rich.maxRetries = 3
        rich.rateLimit = 1 << 20
        rich.keepsRemoteTime = false
        rich.proxies = ProxyChoice(explicit: try ProxyEndpoint(parsing: "http://proxy:3128"))
        rich.cookies = [Cookie(domain: "example.com", includesSubdomains: false, path: "/", secure: true, expires: 0, name: "sid", value: "abc")]
        var tls = DownloadSpec(url: url, destination: .directory("/d"))
        tls.tls = TLSTrust(caFile: "/ca.pem", insecure: true)
        tls.overwrite = true
        tls.retryWait = 0.25
        tls.credentials = Credentials(user: "u", password: "p w")
        tls.ipFamily = .v6
        return [
            (#"{"directory":"/d","url":"https://example.com/a.iso"}"#, DownloadSpec(url: url, destination: .directory("/d"))),
            (#"{"checksum":"md5:00000000000000000000000000000000","headers":[{"name":"X-A","value":"1"}],"options":{"#
                + #""cookies":[{"domain":"example.com","expires":0,"name":"sid","path":"/","secure":true,"subdomains":false,"value":"abc"}],"#
                + #""proxy":{"url":"http://proxy:3128"},"rateLimit":1048576,"remoteTime":false,"retries":3},"path":"/d/a.iso","#
                + #""segments":4,"url":"https://example.com/a.iso"}"#, rich),
            (#"{"directory":"/d","options":{"credentials":{"password":"p w","user":"u"},"ipFamily":"v6","overwrite":true,"#
                + #""retryWait":0.25,"tls":{"caFile":"/ca.pem","insecure":true}},"url":"https://example.com/a.iso"}"#, tls),
        ]
    }

    /// The protocol's way in: HaulKit's parser, then the spec's `Codable` through `JSONValueDecoder`.
    static func wireDecode(_ text: String) throws -> DownloadSpec {
        guard let value = JSONValue.parse(Array(text.utf8)) else { throw InputError("not JSON") }
        return try JSONValueDecoder.decode(DownloadSpec.self, from: value)
    }

    @Test func textsTheHandWrittenEncoderWroteReadAsTheSameSpecAndAreWrittenAlike() throws {
        for (text, spec) in try Self.samples() {
            #expect(LegacySpecJSON.json(spec).serialized == text, "the copy of the old encoder is faithful")
            #expect(SpecColumn.decode(text) == spec, "\(text)")
            #expect(try Self.wireDecode(text) == spec, "\(text)")
            #expect(spec.json.serialized == text, "the protocol's bytes are the same")
            #expect(JSONValue.parse(Array(SpecColumn.encode(spec).utf8)) == JSONValue.parse(Array(text.utf8)), "the store's JSON is the same")
        }
    }

    /// Specs built from `choices`: every member, each present or not, with values the checks accept.
    static func spec(_ choices: inout ArraySlice<Int>) -> DownloadSpec {
        func next() -> Int { choices.popFirst() ?? 0 }
        func maybe() -> Bool { next() % 2 == 0 }
        let words = ["a", "é", "😀", "quote\"back\\slash", "a b", "x=y", "/"]
        func word() -> String { words[next() % words.count] + String(next() % 100) }
        var spec = DownloadSpec(url: URL(string: "https://example.com/f\(next())?q=\(next())")!)
        switch next() % 3 {
        case 0: spec.destination = .file("/d/" + word())
        case 1: spec.destination = .directory("/d" + word())
        default: break
        }
        let isFile = if case .file? = spec.destination { true } else { false }
        if maybe() { spec.headers = HTTPFields((0..<(1 + next() % 3)).map { HTTPFields.Field(name: "X-H\($0)", value: word()) }) }
        if maybe() { spec.checksum = Checksum(algorithm: .sha1, hex: String(repeating: String(next() % 10), count: 40)) }
        if maybe() { spec.segments = 1 + next() % 64 }
        switch next() % 4 {
        case 1: spec.overwrite = true
        case 2 where isFile: spec.continuePartial = true
        case 3 where isFile: spec.timestamping = true
        default: break
        }
        if maybe() { spec.rateLimit = Int64(1 + next()) << (next() % 30) }
        if maybe() { spec.maxRetries = next() % 1001 }
        if maybe() { spec.retryWait = Double(next() % 86_400) / 8 }
        if maybe() { spec.minSegmentSize = Int64(1 + next()) }
        if maybe() { spec.maxConnectionsPerHost = 1 + next() % 64 }
        if maybe() { spec.allowInsecureRedirects = true }
        if maybe() { spec.keepsRemoteTime = maybe() }
        if maybe() { spec.completionCommand = "echo " + word() }
        if maybe() {
            let proxies = ["http://proxy:3128", "socks5h://u:p@10.0.0.1:1080", "http://[::1]:8080"]
            spec.proxies = ProxyChoice(
                explicit: maybe() ? try? ProxyEndpoint(parsing: proxies[next() % proxies.count]) : nil,
                noProxy: maybe() ? "localhost,10.0.0.0/8" : nil,
                environment: maybe() ? ["https_proxy": "http://p:1", "no_proxy": word()] : [:])
        }
        if maybe() {
            spec.tls = TLSTrust(
                caFile: maybe() ? "/ca/" + word() : nil, caDirectory: maybe() ? "/certs" : nil, insecure: maybe(),
                clientCertificate: "/c.pem", clientKey: maybe() ? "/k.pem" : nil)
        }
        if maybe() { spec.credentials = Credentials(user: word(), password: maybe() ? word() : "") }
        if maybe() { spec.proxyTunnel = true }
        if maybe() { spec.ipFamily = maybe() ? .v4 : .v6 }
        if maybe() {
            spec.cookies = (0..<(1 + next() % 3)).map {
                Cookie(domain: "example.com", includesSubdomains: maybe(), path: "/p\($0)", secure: maybe(),
                       expires: Int64(next()), name: "n\($0)", value: ["v", "a b", "x=y", "é"][next() % 4])
            }
        }
        return spec
    }

    /// Over random specs: the old encoder's text reads back as the spec by both ways in, and the protocol's JSON
    /// written now is the old encoder's, byte for byte.
    @Test func randomSpecsTheOldEncoderWroteReadBackAsThemselves() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...100_000).array(of: 10...60)) { choices in
            var rest = choices[...]
            let spec = Self.spec(&rest)
            #expect(throws: Never.self) { try spec.validate() }
            let text = LegacySpecJSON.json(spec).serialized
            #expect((try? Self.wireDecode(text)) == spec, "\(text)")
            if spec.destination != nil { #expect(SpecColumn.decode(text) == spec, "\(text)") }
            #expect(spec.json.serialized == text)
            let stored = SpecColumn.encode(spec)
            #expect(JSONValue.parse(Array(stored.utf8)) == JSONValue.parse(Array(text.utf8)), "\(stored)")
            // The store keeps the spec it wrote as what its text reads back as: so it must be.
            if spec.destination != nil { #expect(SpecColumn.decodeAfresh(stored) == spec, "\(stored)") }
        }
    }
}
