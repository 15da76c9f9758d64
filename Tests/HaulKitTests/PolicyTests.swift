import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct RedirectPolicyTests {
    let policy = RedirectPolicy()
    let start = URL(string: "https://a.example/files/x")!

    @Test func resolvesRelativeAndAbsoluteLocations() throws {
        #expect(try policy.follow(from: start, location: "/y", visited: [start]).get().absoluteString == "https://a.example/y")
        #expect(try policy.follow(from: start, location: "z", visited: [start]).get().absoluteString == "https://a.example/files/z")
        #expect(try policy.follow(from: start, location: "https://b.example/q#frag", visited: [start]).get().absoluteString == "https://b.example/q")
    }

    @Test func refusesDowngradeUnlessAllowed() {
        #expect(policy.follow(from: start, location: "http://a.example/y", visited: [start]) == .failure(.insecureRedirect("http://a.example/y")))
        let lenient = RedirectPolicy(allowInsecureRedirects: true)
        #expect((try? lenient.follow(from: start, location: "http://a.example/y", visited: [start]).get()) != nil)
    }

    @Test func detectsLoopsAndCountsHops() {
        #expect(policy.follow(from: start, location: "/files/x", visited: [start]) == .failure(.loop("https://a.example/files/x")))
        let chain = (0...10).map { URL(string: "https://a.example/\($0)")! }
        #expect(policy.follow(from: start, location: "/next", visited: chain) == .failure(.tooManyRedirects(10)))
        #expect((try? policy.follow(from: start, location: "/next", visited: Array(chain.prefix(10))).get()) != nil)
    }

    /// `--max-redirs N` (curl), `--max-redirect N` (wget): N redirects are followed, the next one is refused; 0
    /// follows none.
    @Test func theLimitIsTheDownloads() {
        let chain = (0...3).map { URL(string: "https://a.example/\($0)")! }
        let three = RedirectPolicy(maxRedirects: 3)
        #expect((try? three.follow(from: start, location: "/next", visited: Array(chain.prefix(3))).get()) != nil)
        #expect(three.follow(from: start, location: "/next", visited: chain) == .failure(.tooManyRedirects(3)))
        let none = RedirectPolicy(maxRedirects: 0)
        #expect(none.follow(from: start, location: "/next", visited: [start]) == .failure(.tooManyRedirects(0)))
        #expect(RedirectPolicy().maxRedirects == RedirectPolicy.defaultMaxRedirects)
    }

    @Test func rejectsOtherSchemes() {
        #expect(policy.follow(from: start, location: "ftp://a.example/y", visited: [start]) == .failure(.unsupportedScheme("ftp")))
        #expect(policy.follow(from: start, location: "file:///etc/passwd", visited: [start]) == .failure(.unsupportedScheme("file")))
    }

    @Test func userHeadersStayOnTheirOrigin() {
        let user: HTTPFields = ["Authorization": "x", "Cookie": "c", "User-Agent": "u", "X-Api-Key": "k"]
        let origin = Origin(start)
        #expect(RedirectPolicy.headers(user, givenFor: origin, sendingTo: Origin(URL(string: "https://A.example:443/other")!)) == user)
        let moved = RedirectPolicy.headers(user, givenFor: origin, sendingTo: Origin(URL(string: "https://a.example:8443/")!))
        #expect(moved == ["User-Agent": "u"])
        #expect(RedirectPolicy.headers(user, givenFor: origin, sendingTo: Origin(URL(string: "http://a.example/")!)) == ["User-Agent": "u"])
    }
}

@Suite struct RetryPolicyTests {
    @Test func backoffDoublesWithJitterAndIsCapped() {
        let policy = RetryPolicy(maxRetries: 5, baseDelay: .seconds(1), maxDelay: .seconds(10))
        #expect(policy.delay(beforeRetry: 1, jitter: 1) == .seconds(1))
        #expect(policy.delay(beforeRetry: 1, jitter: 0) == .milliseconds(500))
        #expect(policy.delay(beforeRetry: 3, jitter: 1) == .seconds(4))
        #expect(policy.delay(beforeRetry: 30, jitter: 1) == .seconds(10))
        #expect(policy.delay(beforeRetry: 1000, jitter: 0.5) == .milliseconds(7500))
    }

    @Test func retryAfterWinsWhenLongerButIsBounded() {
        let policy = RetryPolicy(baseDelay: .seconds(1), maxRetryAfter: .seconds(60))
        #expect(policy.delay(beforeRetry: 1, retryAfter: .seconds(5), jitter: 1) == .seconds(5))
        #expect(policy.delay(beforeRetry: 1, retryAfter: .zero, jitter: 1) == .seconds(1))
        #expect(policy.delay(beforeRetry: 1, retryAfter: .seconds(3600), jitter: 1) == .seconds(60))
    }

    @Test func parsesRetryAfterSecondsAndDates() {
        let now: Int64 = 784_111_777 // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryPolicy.parseRetryAfter("120", now: now) == .seconds(120))
        #expect(RetryPolicy.parseRetryAfter(" 3 ", now: now) == .seconds(3))
        #expect(RetryPolicy.parseRetryAfter("Sun, 06 Nov 1994 08:50:37 GMT", now: now) == .seconds(60))
        #expect(RetryPolicy.parseRetryAfter("Sun, 06 Nov 1994 08:00:00 GMT", now: now) == .zero)
        #expect(RetryPolicy.parseRetryAfter("-1", now: now) == nil)
        #expect(RetryPolicy.parseRetryAfter("soon", now: now) == nil)
    }

    @Test func parsesAllThreeHTTPDateForms() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == 784_111_777)
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDate.parse("Tue, 29 Feb 2028 12:00:00 GMT") == 1_835_438_400)
        #expect(HTTPDate.parse("Sun, 06 Foo 1994 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 25:49:37 GMT") == nil)
    }
}

@Suite struct UserInputTests {
    @Test func acceptsHTTPAndHTTPSOnly() throws {
        #expect(try UserInput.url("https://example.com/a?b=c").host == "example.com")
        #expect(throws: InputError.self) { try UserInput.url("ftp://example.com/a") }
        #expect(throws: InputError.self) { try UserInput.url("http://") }
        // No scheme: the likely URL is named, never guessed silently.
        #expect(throws: InputError("\"example.com/file\" has no scheme; did you mean https://example.com/file?")) {
            try UserInput.url("example.com/file")
        }
        #expect(throws: InputError("\"localhost:8080/f\" has no scheme; did you mean https://localhost:8080/f?")) {
            try UserInput.url("localhost:8080/f")
        }
        #expect(throws: InputError("\"nonsense\" is not a valid URL")) { try UserInput.url("nonsense") }
        #expect(throws: InputError.self) { try UserInput.url("not a url") }
        #expect(throws: InputError.self) { try UserInput.url("") }
        #expect(throws: InputError.self) { try UserInput.url("/local/path") }
    }

    /// A typed URL without a scheme is http://, as curl and wget take it; a scheme is read as curl reads it when it
    /// guesses (`host:port` is none); a path is refused; a program's URL (``UserInput/url(_:)``) is still strict.
    @Test func aTypedURLWithoutASchemeIsHTTP() throws {
        #expect(try UserInput.typedURL("example.com/file").absoluteString == "http://example.com/file")
        #expect(try UserInput.typedURL("127.0.0.1:8080/x").absoluteString == "http://127.0.0.1:8080/x")
        #expect(try UserInput.typedURL("localhost:8080/f").port == 8080)
        #expect(try UserInput.typedURL("[::1]:8080/f").host == "::1")
        #expect(try UserInput.typedURL("u:p@example.com/f").user == "u")
        #expect(try UserInput.typedURL("  https://example.com/a ").scheme == "https")
        #expect(try UserInput.typedURL("HTTP://example.com/a").host == "example.com")
        #expect(throws: InputError.self) { try UserInput.typedURL("ftp://example.com/a") }
        #expect(throws: InputError.self) { try UserInput.typedURL("ftp:/example.com/a") }
        for path in ["./x", "../x", "/x", "~/x", "-", "a b"] {
            #expect(throws: InputError.self, "\(path)") { try UserInput.typedURL(path) }
        }
        #expect(throws: InputError.self) { try UserInput.typedURL("") }
        #expect(throws: InputError.self) { try UserInput.typedURL("http:/") }
        do {
            _ = try UserInput.typedURL("./u:SEKRET@x")
            Issue.record("a path was taken")
        } catch {
            #expect(!error.message.contains("SEKRET"), "\(error.message)")
        }
        #expect(UserInput.hasScheme("https://x") && UserInput.hasScheme("file:/x") && !UserInput.hasScheme("host:80/x"))
        #expect(!UserInput.hasScheme("1http://x") && !UserInput.hasScheme("a b://x"))
    }

    /// curl's `-H` rules: `Name:` leaves the header out, `Name;` sends it empty, `Name: value` is sent.
    @Test func headersFollowCurlsRules() throws {
        let (fields, omitted) = try UserInput.headers(["Accept:", "X-Empty;", "X-A: 1", "x-a:", "User-Agent:  ", "ACCEPT:"])
        #expect(fields == ["X-Empty": "", "X-A": "1"])
        #expect(omitted == ["accept", "x-a", "user-agent"])
        #expect(throws: InputError.self) { try UserInput.headers(["Host:"]) }
        #expect(throws: InputError.self) { try UserInput.headers(["Host;"]) }
        #expect(throws: InputError.self) { try UserInput.headers(["Range:"]) }
        #expect(throws: InputError.self) { try UserInput.headers(["X-Foo;bar"]) }
        #expect(throws: InputError.self) { try UserInput.headers([";"]) }
        var settings = DownloadSettings()
        settings.omittedHeaders = ["user-agent"]
        #expect(throws: Never.self) { try settings.validate() }
        settings.omittedHeaders = ["range"]
        #expect(throws: InputError.self) { try settings.validate() }
        settings.omittedHeaders = ["a b"]
        #expect(throws: InputError.self) { try settings.validate() }
    }

    @Test func parsesChecksums() throws {
        let hex = String(repeating: "ab", count: 32)
        #expect(try Checksum(parsing: "sha256:\(hex.uppercased())") == Checksum(algorithm: .sha256, hex: hex))
        #expect(try Checksum(parsing: "SHA-256=\(hex)").algorithm == .sha256)
        #expect(try Checksum(parsing: "md5:\(String(repeating: "0", count: 32))").algorithm == .md5)
        #expect(throws: InputError.self) { try Checksum(parsing: "sha256:abc") }
        #expect(throws: InputError.self) { try Checksum(parsing: "crc32:00000000") }
        #expect(throws: InputError.self) { try Checksum(parsing: "sha1") }
        #expect(throws: InputError.self) { try Checksum(parsing: "sha1:\(String(repeating: "g", count: 40))") }
    }

    @Test func parsesRatesWithBinaryUnits() throws {
        #expect(try UserInput.byteCount("500K") == 512_000)
        #expect(try UserInput.byteCount("2M") == 2 * 1_048_576)
        #expect(try UserInput.byteCount("1.5MiB") == 1_572_864)
        #expect(try UserInput.byteCount("1g") == 1_073_741_824)
        #expect(try UserInput.byteCount("65536") == 65536)
        #expect(try UserInput.byteCount("10MB/s") == 10 * 1_048_576)
        for bad in ["", "0", "-5K", "fast", "1.2.3M", "K", "nanK", "1e400"] {
            #expect(throws: InputError.self) { try UserInput.byteCount(bad) }
        }
    }

    @Test func parsesHeaders() throws {
        #expect(try UserInput.header("Authorization: Bearer x y") == HTTPFields.Field(name: "Authorization", value: "Bearer x y"))
        #expect(try UserInput.header("X-Empty:") == HTTPFields.Field(name: "X-Empty", value: ""))
        for bad in ["NoColon", ": value", "Bad Name: v", "X: a\u{0}b", "Range: bytes=0-", "if-range: x"] {
            #expect(throws: InputError.self) { try UserInput.header(bad) }
        }
    }

    /// Whatever is wrong with a URL or a header, the error quotes none of its secrets.
    @Test(arguments: [
        "htp://user:SEKRET5@host/x", "http://u:SEKRET49@[::1", "http:/u:SEKRET53@host/x", "u:SEKRET54@host.example/x",
        "http://bob:TOP/SEKRET@127.0.0.1:1/x", "ftp://a:SEKRET@h/x?key=SEKRET",
    ])
    func anInvalidURLsErrorQuotesNoSecret(_ text: String) {
        do {
            _ = try UserInput.url(text)
            Issue.record("\(text) was taken")
        } catch {
            #expect(!error.message.contains("SEKRET"), "\(error.message)")
        }
    }

    @Test(arguments: ["Authorization Bearer SEKRET1", "Authorization=Bearer SEKRET2", "Auth orization: SEKRET3"])
    func aMalformedHeadersErrorQuotesNoValue(_ text: String) {
        do {
            _ = try UserInput.header(text)
            Issue.record("\(text) was taken")
        } catch {
            #expect(!error.message.contains("SEKRET"), "\(error.message)")
        }
    }
}

@Suite struct TransferRateTests {
    @Test func tokenBucketAveragesToTheLimit() {
        var bucket = TokenBucket(bytesPerSecond: 1000, burst: .milliseconds(100))
        var now = Duration.zero
        var total = 0
        for _ in 0..<100 {
            now += bucket.consume(50, at: now)
            total += 50
        }
        // 5000 bytes at 1000 B/s: never faster than the limit.
        #expect(abs(now.seconds - 5.0) < 0.05)
        #expect(total == 5000)
    }

    @Test func tokenBucketDoesNotHoardIdleTime() {
        var bucket = TokenBucket(bytesPerSecond: 1000, burst: .milliseconds(100))
        #expect(bucket.consume(100, at: .zero) == .milliseconds(100))
        // A long pause earns at most the burst (100 ms worth), not a minute's worth.
        #expect(bucket.consume(1000, at: .seconds(60)) == .milliseconds(900))
    }

    @Test func meterReportsSpeedAndETA() {
        var meter = ProgressMeter(window: .seconds(5))
        #expect(meter.bytesPerSecond == nil)
        meter.record(bytes: 0, at: .zero)
        meter.record(bytes: 1000, at: .seconds(1))
        meter.record(bytes: 2000, at: .seconds(2))
        #expect(meter.bytesPerSecond == 1000)
        #expect(meter.secondsRemaining(total: 10_000) == 8)
        #expect(meter.secondsRemaining(total: nil) == nil)
        meter.record(bytes: 12_000, at: .seconds(12))
        #expect(meter.bytesPerSecond == 1000)
    }
}
