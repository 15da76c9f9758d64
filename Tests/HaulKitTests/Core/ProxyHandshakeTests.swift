import Foundation
import PropertyBased
import Testing
@testable import HaulCore

/// The bytes of proxy handshakes (SOCKS5 with RFC 1929 authentication, HTTP CONNECT) and the addresses no_proxy
/// ranges hold, as pure values: what is sent, and what every answer means, however the bytes are split.
@Suite struct ProxyHandshakeTests {
    /// Feeds `answers` to `handshake` split at `cuts` (offsets into their concatenation), collecting what it sends.
    static func run(_ handshake: inout SOCKS5Handshake, _ answers: [UInt8], cuts: [Int]) -> (sent: [[UInt8]], last: SOCKS5Handshake.Step) {
        var sent: [[UInt8]] = []
        var last = SOCKS5Handshake.Step.needMore
        var start = 0
        for end in (cuts.filter { $0 > 0 && $0 < answers.count }.sorted() + [answers.count]) where end >= start {
            last = handshake.receive(Array(answers[start..<end]))
            while case .send(let bytes) = last {
                sent.append(bytes)
                last = handshake.receive([])
            }
            start = end
            if case .failed = last { break }
        }
        return (sent, last)
    }

    @Test func withoutCredentialsItOffersNoAuthenticationAndConnects() {
        var handshake = SOCKS5Handshake(target: .address(IPAddress("127.0.0.1")!), port: 8080, credentials: nil)
        #expect(handshake.greeting == [5, 1, 0])
        #expect(handshake.receive([5, 0]) == .send([5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90]))
        #expect(handshake.receive([5, 0, 0, 1, 10, 0, 0, 1, 0, 80]) == .established)
    }

    @Test func withCredentialsItAuthenticatesAsRFC1929Says() async {
        await propertyCheck(input: Gen.letterOrNumber.string(of: 1...40), Gen.letterOrNumber.string(of: 0...40), Gen.int(in: 1...65535), Gen.int(in: 0...30).array(of: 0...6), Gen.bool) {
            user, password, port, cuts, name in
            let target: SOCKS5Handshake.Target = name ? .name("files.example.test") : .address(IPAddress("::1")!)
            var handshake = SOCKS5Handshake(target: target, port: port, credentials: Credentials(user: user, password: password))
            #expect(handshake.greeting == [5, 2, 0, 2])
            let answers: [UInt8] = [5, 2] + [1, 0] + [5, 0, 0, 4] + [UInt8](repeating: 0, count: 16) + [0, 0]
            let (sent, last) = Self.run(&handshake, answers, cuts: cuts)
            #expect(last == .established)
            #expect(sent.first == [1, UInt8(user.utf8.count)] + Array(user.utf8) + [UInt8(password.utf8.count)] + Array(password.utf8))
            let address: [UInt8] = name ? [3, 18] + Array("files.example.test".utf8) : [4] + [UInt8](repeating: 0, count: 15) + [1]
            #expect(sent.last == [5, 1, 0] + address + [UInt8(port >> 8), UInt8(port & 0xff)])
        }
    }

    @Test(arguments: [
        ([UInt8]([5, 0xff]), nil as Credentials?, SOCKS5Handshake.Failure.noAcceptableMethod(requiresCredentials: true)),
        ([5, 2], nil, .noAcceptableMethod(requiresCredentials: true)),
        ([5, 0xff], Credentials(user: "u", password: "p"), .noAcceptableMethod(requiresCredentials: false)),
        ([5, 2, 1, 1], Credentials(user: "u", password: "p"), .authenticationRefused),
        ([5, 0, 5, 5, 0, 1], nil, .connectFailed(code: 5)),
        ([5, 0, 5, 2, 0, 1, 0, 0, 0, 0, 0, 0], nil, .connectFailed(code: 2)),
        ([4, 0], nil, .notSOCKS5),
        (Array("HTTP/1.1 400 Bad".utf8), nil, .notSOCKS5),
    ])
    func refusalsAreTypedNeverRaw(answers: [UInt8], credentials: Credentials?, failure: SOCKS5Handshake.Failure) {
        var handshake = SOCKS5Handshake(target: .name("h"), port: 80, credentials: credentials)
        #expect(Self.run(&handshake, answers, cuts: [1, 3]).last == .failed(failure))
        #expect(failure.isTransient == (failure == .connectFailed(code: 5)))
    }

    @Test func connectAsksForTheAuthorityWithCredentialsAndReadsTheStatus() async {
        var tunnel = HTTPConnectHandshake(host: "::1", port: 8443, proxyAuthorization: "Basic dTpw")
        #expect(String(decoding: tunnel.request, as: UTF8.self)
            == "CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\nProxy-Authorization: Basic dTpw\r\n\r\n")
        #expect(tunnel.receive(Array("HTTP/1.1 200 Connection established\r\n".utf8)) == .needMore)
        #expect(tunnel.receive(Array("\r\n".utf8)) == .established)
        await propertyCheck(input: Gen.element(of: [200, 403, 407, 502, 503]), Gen.int(in: 1...60).array(of: 0...4)) { status, cuts in
            var handshake = HTTPConnectHandshake(host: "h", port: 443, proxyAuthorization: nil)
            let phrase = [200: "Connection established", 403: "Forbidden", 407: "Proxy Authentication Required", 502: "Bad Gateway", 503: "Service Unavailable"][status ?? 200] ?? ""
            let answer = Array("HTTP/1.1 \(status ?? 200) \(phrase)\r\nServer: squid\r\nContent-Length: 0\r\n\r\n".utf8)
            var last = HTTPConnectHandshake.Step.needMore
            var start = 0
            for end in cuts.filter({ $0 < answer.count }).sorted() + [answer.count] where end >= start {
                last = handshake.receive(Array(answer[start..<end]))
                start = end
            }
            if status == 200 {
                #expect(last == .established)
            } else {
                #expect(last == .failed(.refused(status: status ?? 0, phrase: phrase)))
                #expect(HTTPConnectHandshake.Failure.refused(status: status ?? 0, phrase: phrase).isTransient == ((status ?? 0) >= 502))
            }
        }
        var garbage = HTTPConnectHandshake(host: "h", port: 443, proxyAuthorization: nil)
        #expect(garbage.receive([5, 0xff, 13, 10, 13, 10]) == .failed(.notHTTP))
        var endless = HTTPConnectHandshake(host: "h", port: 443, proxyAuthorization: nil)
        #expect(endless.receive([UInt8](repeating: 65, count: HTTPConnectHandshake.maxHeadLength + 1)) == .failed(.notHTTP))
    }

    @Test func aRangeHoldsItsNetworkAndNothingPastItsPrefix() async {
        await propertyCheck(input: Gen.bool, Gen.int(in: 0...255).array(of: 16), Gen.int(in: 0...128), Gen.int(in: 0...127)) { v4, bytes, rawPrefix, rawBit in
            let width = v4 ? 32 : 128
            let prefix = rawPrefix % (width + 1), bit = rawBit % width
            guard let address = IPAddress(bytes: Array(bytes.prefix(v4 ? 4 : 16).map(UInt8.init))) else {
                Issue.record("no address")
                return
            }
            let range = IPRange(network: address, prefixLength: prefix)
            #expect(range.contains(address))
            #expect(IPRange(range.description) == range, "\(range)")
            #expect(IPAddress(address.description) == address, "\(address)")
            var flipped = address.bytes
            flipped[bit / 8] ^= UInt8(0x80 >> (bit % 8))
            guard let other = IPAddress(bytes: flipped) else { return }
            #expect(range.contains(other) == (bit >= prefix), "\(other) in \(range)")
        }
    }

    @Test(arguments: ["1.2.3", "1.2.3.4.5", "01.2.3.4", "256.1.1.1", "::1::", "1:2:3:4:5:6:7:8:9", "g::1", "example.com", "", "1.2.3.4/8"])
    func onlyLiteralAddressesParse(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test func timestampingAsksWithTheFileTimeAndKeepsAnUnchangedFile() async {
        await propertyCheck(input: Gen.int64(in: 0...253_402_300_799)) { time in
            let date = Timestamping.ifModifiedSince(localTime: time)
            #expect(HTTPDate.parse(date) == time, "\(date)")
            #expect(date.hasSuffix(" GMT") && date.count == 29, "\(date)")
        }
        #expect(Timestamping.ifModifiedSince(localTime: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(Timestamping.isUnchanged(status: 304, lastModified: nil, contentLength: nil, localTime: 0, localSize: 0))
        let old = "Sun, 06 Nov 1994 08:49:37 GMT"
        #expect(Timestamping.isUnchanged(status: 200, lastModified: old, contentLength: 10, localTime: 784_111_777, localSize: 10))
        #expect(!Timestamping.isUnchanged(status: 200, lastModified: old, contentLength: 11, localTime: 784_111_777, localSize: 10))
        #expect(!Timestamping.isUnchanged(status: 200, lastModified: old, contentLength: 10, localTime: 784_111_776, localSize: 10))
        #expect(!Timestamping.isUnchanged(status: 200, lastModified: nil, contentLength: 10, localTime: 784_111_777, localSize: 10))
        #expect(!Timestamping.isUnchanged(status: 404, lastModified: old, contentLength: 10, localTime: 784_111_777, localSize: 10))
    }
}
