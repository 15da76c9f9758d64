import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The same download scenarios against three real servers that differ where resuming is hard:
/// apache2 and lighttpd (strong ETag, Last-Modified, If-Range honoured) and Twisted (Last-Modified only,
/// If-Range ignored). Each test starts its own server on a free 127.0.0.1 port and drives the real `haul`.
///
/// Runs against a server when it is installed, and always in CI, where a missing server fails the test.
/// The three servers' suites run side by side, each one's tests one after another: a few downloads at once
/// keep the load low enough for the timing-sensitive tests elsewhere that run in parallel with these.
/// Install: `apt-get install apache2 lighttpd` and `python3 -m pip install twisted` (see `.ci/run`).
@Suite struct CompatibilitySuite {
    @Suite(.serialized, .enabled(if: RealServer.apache.testsEnabled, "needs apache2 (apt-get install apache2; scripts/test installs it)"))
    struct Apache {
        let compat = Compat(.apache)
        @Test func serverBehavesAsAssumed() async throws { try await compat.serverBehavesAsAssumed() }
        @Test func plainDownloadIsExact() async throws { try await compat.plainDownloadIsExact() }
        @Test func segmentedDownloadIsExact() async throws { try await compat.segmentedDownloadIsExact() }
        @Test func sigkillThenRerunFetchesOnlyTheRest() async throws { try await compat.sigkillThenRerun(segmented: false) }
        @Test func segmentedSigkillThenRerunFetchesOnlyTheRest() async throws { try await compat.sigkillThenRerun(segmented: true) }
        @Test func fileChangedWhileKilledGivesTheNewVersion() async throws { try await compat.fileChangedWhileKilled(segmented: false) }
        @Test func segmentedFileChangedWhileKilledGivesTheNewVersion() async throws { try await compat.fileChangedWhileKilled(segmented: true) }
        @Test func continueForeignPrefixIsExact() async throws { try await compat.continueForeignPrefixIsExact() }
    }

    @Suite(.serialized, .enabled(if: RealServer.lighttpd.testsEnabled, "needs lighttpd (apt-get install lighttpd; scripts/test installs it)"))
    struct Lighttpd {
        let compat = Compat(.lighttpd)
        @Test func serverBehavesAsAssumed() async throws { try await compat.serverBehavesAsAssumed() }
        @Test func plainDownloadIsExact() async throws { try await compat.plainDownloadIsExact() }
        @Test func segmentedDownloadIsExact() async throws { try await compat.segmentedDownloadIsExact() }
        @Test func sigkillThenRerunFetchesOnlyTheRest() async throws { try await compat.sigkillThenRerun(segmented: false) }
        @Test func segmentedSigkillThenRerunFetchesOnlyTheRest() async throws { try await compat.sigkillThenRerun(segmented: true) }
        @Test func fileChangedWhileKilledGivesTheNewVersion() async throws { try await compat.fileChangedWhileKilled(segmented: false) }
        @Test func segmentedFileChangedWhileKilledGivesTheNewVersion() async throws { try await compat.fileChangedWhileKilled(segmented: true) }
        @Test func continueForeignPrefixIsExact() async throws { try await compat.continueForeignPrefixIsExact() }
    }

    @Suite(.serialized, .enabled(if: RealServer.twisted.testsEnabled, "needs Twisted (python3 -m pip install twisted; scripts/test installs it)"))
    struct Twisted {
        let compat = Compat(.twisted)
        @Test func serverBehavesAsAssumed() async throws { try await compat.serverBehavesAsAssumed() }
        @Test func plainDownloadIsExact() async throws { try await compat.plainDownloadIsExact() }
        @Test func segmentedDownloadIsExact() async throws { try await compat.segmentedDownloadIsExact() }
        @Test func sigkillThenRerunFetchesOnlyTheRest() async throws { try await compat.sigkillThenRerun(segmented: false) }
        @Test func segmentedSigkillThenRerunFetchesOnlyTheRest() async throws { try await compat.sigkillThenRerun(segmented: true) }
        /// Same size and same mtime: Last-Modified cannot tell the versions apart; only the bytes can.
        @Test func fileChangedWhileKilledGivesTheNewVersion() async throws { try await compat.fileChangedWhileKilled(segmented: false) }
        /// Same size and same mtime, and Twisted ignores If-Range: the segment requests get 206s of the new
        /// version, so only checking the bytes held can prevent a mix of both versions.
        @Test func segmentedFileChangedWhileKilledGivesTheNewVersion() async throws { try await compat.fileChangedWhileKilled(segmented: true) }
        @Test func continueForeignPrefixIsExact() async throws { try await compat.continueForeignPrefixIsExact() }
    }
}

/// The scenarios, for one kind of server.
struct Compat: Sendable {
    let kind: RealServer

    init(_ kind: RealServer) { self.kind = kind }

    /// Files are dated well in the past: Apache makes the ETag of a file modified within the last second weak.
    static let versionOneDate = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 7200).rounded(.down))

    /// How to make a download slow enough to be killed part-way: the path to download and haul's extra options.
    /// One connection: apache and lighttpd throttle `/slow/` themselves; Twisted cannot, so haul limits itself.
    /// Segmented: haul's `--limit-rate` for every server, as it caps all connections together; a server's
    /// per-connection throttle would make the single-connection download after a restart four times slower.
    func slowDownload(segmented: Bool) -> (path: String, arguments: [String]) {
        if segmented { return ("/file.bin", Self.segmentArguments + ["--limit-rate", "1M"]) }
        if kind.throttles { return ("/slow/file.bin", ["--segments", "1"]) }
        return ("/file.bin", ["--segments", "1", "--limit-rate", String(RealServer.slowRate)])
    }

    static let segmentArguments = ["--segments", "4", "--min-segment-size", "256K"]

    // MARK: The scenarios

    /// The premises of this suite: which validators the server sends and whether it honours If-Range.
    func serverBehavesAsAssumed() async throws {
        try await kind.with { server in
            let body = TestData.bytes(256 << 10, seed: 700)
            try server.put("file.bin", body, modified: Self.versionOneDate)
            let ranged = try #require(server.request("/file.bin", headers: ["Range: bytes=100-199"]), "no answer from \(kind)")
            let rangeIsExact = ranged.body == Array(body[100..<200])
            #expect(ranged.status == 206 && rangeIsExact, "status \(ranged.status), \(ranged.body.count) bytes")
            #expect(ranged.headers["last-modified"] == HTTPDateFormat.string(Self.versionOneDate), "headers: \(ranged.headers)")
            let etag = ranged.headers["etag"]
            if kind.sendsEntityTag {
                let tag = try #require(etag, "\(kind) sends an ETag: \(ranged.headers)")
                #expect(!tag.hasPrefix("W/"), "a strong ETag: \(tag)")
                let current = try #require(server.request("/file.bin", headers: ["Range: bytes=100-199", "If-Range: \(tag)"]))
                #expect(current.status == 206, "If-Range with the current ETag gives the range")
            } else {
                #expect(etag == nil, "\(kind) sends no ETag: \(ranged.headers)")
            }
            let stale = try #require(server.request("/file.bin", headers: ["Range: bytes=100-199", "If-Range: \"not-the-current-etag\""]))
            if kind.honoursIfRange {
                let wholeFile = stale.body == body
                #expect(stale.status == 200 && wholeFile, "\(kind) honours If-Range: a stale validator gets the whole file (status \(stale.status))")
            } else {
                #expect(stale.status == 206, "\(kind) ignores If-Range: a stale validator still gets the range")
            }
        }
    }

    func plainDownloadIsExact() async throws {
        try await kind.with { server in
            let body = TestData.bytes(3 << 20, seed: 701)
            try server.put("file.bin", body, modified: Self.versionOneDate)
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let result = try await box.run(["get", server.url("/file.bin"), "-o", destination, "--json"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
                #expect(box.workContents() == ["file.bin"], "no .haul-part may be left: \(box.workContents())")
                #expect(intValue(try finishedEvent(result)?["fetchedBytes"]) == body.count)
            }
        }
    }

    func segmentedDownloadIsExact() async throws {
        try await kind.with { server in
            let body = TestData.bytes(4 << 20, seed: 702)
            try server.put("file.bin", body, modified: Self.versionOneDate)
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let url = server.url("/file.bin")
                let result = try await box.run(["get", url, "-o", destination, "--json", "-v"] + Self.segmentArguments)
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
                #expect(box.workContents() == ["file.bin"], "no .haul-part may be left: \(box.workContents())")
                let events = try result.jsonEvents()
                #expect(!events.contains { $0["type"] as? String == "singleConnection" }, "\(kind) supports ranges: \(result.stdout)")
                let requests = loggedRequests(result.stderr, url: url)
                #expect(requests.count >= 4 && requests.allSatisfy { $0.range != nil },
                        "four connections, each with a Range request: \(requests.map(\.line))")
                if kind.hasAccessLog {
                    let lines = await accessLogLines(server, uri: "/file.bin", atLeast: requests.count)
                    #expect(lines.count >= 4 && lines.allSatisfy { $0.hasPrefix("GET /file.bin 206 ") }, "log: \(lines)")
                }
            }
        }
    }

    /// SIGKILL part-way, then the same command: exact bytes, and only the bytes not held are asked for.
    func sigkillThenRerun(segmented: Bool) async throws {
        try await kind.with { server in
            let body = TestData.bytes(segmented ? 4 << 20 : 2 << 20, seed: segmented ? 703 : 704)
            let (slowPath, options) = slowDownload(segmented: segmented)
            try server.put(String(slowPath.dropFirst()), body, modified: Self.versionOneDate)
            try await Sandbox.with { box in
                let destination = box.path("file.bin"), partial = destination + ".haul-part"
                let url = server.url(slowPath)
                let args = ["get", url, "-o", destination, "--json", "-v"] + options
                let killed = try await startAndKill(box, args, partial: partial, segmented: segmented, size: body.count)
                let logged = await waitUntilLogged(server, uri: slowPath, killed)
                let record = try #require(box.records().first)
                #expect((record["entityTag"] as? String != nil) == kind.sendsEntityTag, "record: \(record)")

                let result = try await box.run(args, timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
                #expect(box.workContents() == ["file.bin"], "no .haul-part may be left: \(box.workContents())")
                let fetched = intValue(try finishedEvent(result)?["fetchedBytes"])
                #expect(fetched == body.count - killed.held, "only the \(body.count - killed.held) bytes not held are fetched; stderr: \(result.stderr)")

                let requests = loggedRequests(result.stderr, url: url)
                #expect(!requests.isEmpty && requests.allSatisfy { $0.range != nil }, "every request is a Range request: \(requests.map(\.line))")
                if segmented {
                    // No request starts inside a range already held (each segment resumes where it stopped), except,
                    // whatever the ETag, one closed check of the last 64 KiB of each stretch held, compared before any
                    // segment continues.
                    for request in requests {
                        let asked = request.range?.start ?? 0
                        // A request repeats the bytes before its data to compare them: the 64 KiB before a held
                        // stretch's end (a segment continuing), else the 16 KiB before a segment's first byte.
                        let continued = killed.heldRanges.first { $0.upperBound > asked && $0.upperBound - min($0.upperBound, 65536) == asked }
                        let dataStart = continued?.upperBound ?? (asked == 0 ? 0 : asked + 16384)
                        let isCheck = request.range?.end.map { end in
                            killed.heldRanges.contains { $0.upperBound == end + 1 } && end + 1 - asked <= 65536
                        } == true
                        #expect(isCheck || !killed.heldRanges.contains { $0.contains(dataStart) },
                                "\(request.line) asks again for held bytes \(killed.heldRanges)")
                    }
                } else {
                    // Whatever the ETag, the last 64 KiB held are asked for again and compared (an ETag made of size
                    // and time survives an in-place rewrite); a strong ETag also goes in If-Range.
                    let start = killed.held - 65536
                    #expect(requests.count == 1 && requests.first?.range?.start == start && requests.first?.range?.end == nil,
                            "one request for bytes=\(start)-: \(requests.map(\.line))")
                }
                if kind.hasAccessLog {
                    let lines = await accessLogLines(server, uri: slowPath, after: logged, atLeast: requests.count)
                    #expect(!lines.isEmpty && lines.allSatisfy { $0.hasPrefix("GET \(slowPath) 206 ") }, "only 206 answers: \(lines)")
                    if !segmented, let etag = record["entityTag"] as? String {
                        let expected = "GET \(slowPath) 206 range=\"bytes=\(killed.held - 65536)-\""
                        let bare = etag.replacingOccurrences(of: "\"", with: "")
                        let sent = body.count - killed.held + 65536
                        #expect(lines.contains { $0.hasPrefix(expected) && $0.contains(bare) && $0.hasSuffix(" sent=\(sent)") },
                                "expected `\(expected) if_range=\(etag) sent=\(sent)`: \(lines)")
                    }
                }
            }
        }
    }

    /// Killed part-way, the file on the server replaced by another of the same size (for Twisted also with the
    /// same mtime, so the same Last-Modified), the same command again: exactly the new version, never a mix.
    func fileChangedWhileKilled(segmented: Bool) async throws {
        try await kind.with { server in
            let size = segmented ? 4 << 20 : 2 << 20
            let old = TestData.bytes(size, seed: segmented ? 705 : 706)
            let new = TestData.bytes(size, seed: segmented ? 707 : 708)
            let (slowPath, options) = slowDownload(segmented: segmented)
            let relative = String(slowPath.dropFirst())
            try server.put(relative, old, modified: Self.versionOneDate)
            try await Sandbox.with { box in
                let destination = box.path("file.bin"), partial = destination + ".haul-part"
                let url = server.url(slowPath)
                let args = ["get", url, "-o", destination, "--json", "-v"] + options
                let killed = try await startAndKill(box, args, partial: partial, segmented: segmented, size: size)
                #expect(killed.held < size)
                let before = try #require(server.request(slowPath, headers: ["Range: bytes=0-1023"]))

                // Apache and lighttpd see a new mtime (new ETag and Last-Modified); Twisted sees the same mtime.
                let modified = kind.sendsEntityTag ? Self.versionOneDate.addingTimeInterval(3600) : Self.versionOneDate
                try server.put(relative, new, modified: modified)
                var after: RawHTTPResponse?
                try await eventually("\(kind) serves the new version (last answer: \(after?.status ?? 0), \(after?.body.count ?? 0) bytes)",
                                     timeout: .seconds(10)) {
                    after = server.request(slowPath, headers: ["Range: bytes=0-1023"])
                    return after?.status == 206 && after?.body == Array(new[0..<1024])
                }
                if kind.sendsEntityTag {
                    #expect(after?.headers["etag"] != nil && after?.headers["etag"] != before.headers["etag"], "a new ETag: \(before.headers) → \(after?.headers ?? [:])")
                } else {
                    #expect(after?.headers["last-modified"] == before.headers["last-modified"] && after?.headers["etag"] == nil,
                            "the premise: nothing but the bytes tells the versions apart: \(before.headers) → \(after?.headers ?? [:])")
                }

                let result = try await box.run(args, timeout: .seconds(60))
                #expect(result.exitCode == 0, "\(result)")
                let mismatch = contentMismatch(destination, expected: new)
                #expect(mismatch == nil, """
                    must hold exactly the new version, never a mix; \(mismatch ?? ""); by 64 KiB block: \
                    \(versionMap(readBytes(destination) ?? [], old: old, new: new)); held when killed: \(killed.heldRanges); \
                    requests: \(loggedRequests(result.stderr, url: url).map(\.line))
                    """)
                #expect(box.workContents() == ["file.bin"], "no .haul-part may be left: \(box.workContents())")
            }
        }
    }

    /// A prefix written by another program at the `-o` path, then `--continue`: exact, with a Range request.
    func continueForeignPrefixIsExact() async throws {
        try await kind.with { server in
            let body = TestData.bytes(2 << 20, seed: 709)
            try server.put("file.bin", body, modified: Self.versionOneDate)
            try await Sandbox.with { box in
                let destination = box.path("file.bin")
                let held = (1 << 20) + 1234
                try writeBytes(Array(body[0..<held]), to: destination)
                let url = server.url("/file.bin")
                let result = try await box.run(["get", url, "-o", destination, "--continue", "--json", "-v"])
                #expect(result.exitCode == 0, "\(result)")
                #expect(contentMismatch(destination, expected: body) == nil)
                #expect(box.workContents() == ["file.bin"], "no .haul-part may be left: \(box.workContents())")
                #expect(intValue(try finishedEvent(result)?["fetchedBytes"]) == body.count - held)
                // A file of unknown origin has no validators: the last 64 KiB are asked for again and compared.
                let requests = loggedRequests(result.stderr, url: url)
                #expect(requests.count == 1 && requests.first?.range?.start == held - 65536, "\(requests.map(\.line))")
                if kind.hasAccessLog {
                    let lines = await accessLogLines(server, uri: "/file.bin", atLeast: 1)
                    #expect(lines.count == 1 && lines.first?.hasPrefix("GET /file.bin 206 range=\"bytes=\(held - 65536)-\"") == true,
                            "log: \(lines)")
                }
            }
        }
    }

    // MARK: Helpers

    struct Killed {
        /// The durable bytes recorded when haul was killed.
        var held: Int
        /// The byte ranges held (one from 0 for a single connection; one per segment otherwise).
        var heldRanges: [Range<Int>]
        /// The requests the killed run logged.
        var requests: Int
    }

    /// Starts `args` and SIGKILLs it once a checkpoint holds enough bytes (for a segmented download: once the
    /// record lists segments); returns what the record says is held.
    func startAndKill(_ box: Sandbox, _ args: [String], partial: String, segmented: Bool, size: Int) async throws -> Killed {
        let threshold = segmented ? 512 << 10 : 256 << 10
        let run = try box.start(args)
        try await signalWhen(run, SIGKILL, "a checkpoint records ≥ \(threshold) bytes", timeout: .seconds(30)) {
            guard (box.recordedOffset() ?? 0) >= threshold, (fileSize(partial) ?? 0) >= threshold else { return false }
            return !segmented || ((box.records().first?["segments"] as? [Any])?.count ?? 0) >= 2
        }
        let result = try await run.wait(timeout: .seconds(10))
        #expect(result.signalled && result.exitCode == SIGKILL, "haul was not killed by SIGKILL: \(result)")
        #expect(!fileExists(partial.replacingOccurrences(of: ".haul-part", with: "")), "no destination before the end")
        let record = try #require(box.records().first)
        let held = try #require(box.recordedOffset())
        #expect(held >= threshold && held < size, "record: \(record)")
        var ranges = [0..<held]
        if segmented {
            let segments = try #require(record["segments"] as? [[String: Any]], "a segmented record: \(record)")
            ranges = segments.compactMap { segment in
                guard let start = (segment["start"] as? NSNumber)?.intValue, let done = (segment["done"] as? NSNumber)?.intValue,
                      done > 0 else { return nil }
                return start..<(start + done)
            }
            #expect(ranges.reduce(0) { $0 + $1.count } == held, "the segments add up to the offset: \(record)")
        }
        return Killed(held: held, heldRanges: ranges, requests: loggedRequests(result.stderr, url: args[1]).count)
    }

    /// Waits (bounded) until the server has logged the killed run's requests for `uri`, so that later lines
    /// belong to the rerun; returns how many lines for `uri` the log has then.
    func waitUntilLogged(_ server: ExternalServer, uri: String, _ killed: Killed) async -> Int {
        guard kind.hasAccessLog else { return 0 }
        try? await eventually("\(kind) logs the \(killed.requests) requests of the killed run", timeout: .seconds(10)) {
            server.accessLog(uri: uri).count >= killed.requests
        }
        return server.accessLog(uri: uri).count
    }

    /// The access log lines for `GET uri` after the first `after`, once there are at least `count` (bounded wait).
    func accessLogLines(_ server: ExternalServer, uri: String, after: Int = 0, atLeast count: Int) async -> [String] {
        try? await eventually("\(kind) logs \(count) more requests for \(uri)", timeout: .seconds(10)) {
            server.accessLog(uri: uri).count - after >= count
        }
        return Array(server.accessLog(uri: uri).dropFirst(after))
    }
}

/// One request from haul's `-v` log: `GET URL Range: bytes=A-B, If-Range: …`.
struct LoggedRequest {
    var line: String
    var range: (start: Int, end: Int?)?
}

/// The requests for `url` in `-v` output (stderr), in order.
func loggedRequests(_ stderr: String, url: String) -> [LoggedRequest] {
    stderr.split(separator: "\n").map(String.init).compactMap { line in
        guard let found = line.range(of: "GET \(url)"),
              line[found.upperBound...].isEmpty || line[found.upperBound...].hasPrefix(" ") else { return nil }
        let rest = line[found.upperBound...]
        guard let marker = rest.range(of: "Range: bytes=") else { return LoggedRequest(line: line, range: nil) }
        let spec = rest[marker.upperBound...].prefix { $0.isNumber || $0 == "-" }
        let parts = spec.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Int(parts[0]) else { return LoggedRequest(line: line, range: nil) }
        return LoggedRequest(line: line, range: (start, Int(parts[1])))
    }
}

func intValue(_ value: Any?) -> Int? { (value as? NSNumber)?.intValue }

/// Which version each 64 KiB block of `actual` belongs to, as runs: `old 0..<1048576, new 1048576..<4194304`
/// (`other` for a block of neither).
func versionMap(_ actual: [UInt8], old: [UInt8], new: [UInt8]) -> String {
    let block = 65536
    var runs: [(String, Range<Int>)] = []
    // memcmp: an element-wise comparison of MiBs is slow in a debug build and would hold up a test thread.
    func same(_ other: [UInt8], _ range: Range<Int>) -> Bool {
        range.upperBound <= other.count && actual.withUnsafeBytes { a in
            other.withUnsafeBytes { b in memcmp(a.baseAddress! + range.lowerBound, b.baseAddress! + range.lowerBound, range.count) == 0 }
        }
    }
    for start in stride(from: 0, to: actual.count, by: block) {
        let end = min(start + block, actual.count)
        let name = same(new, start..<end) ? "new" : same(old, start..<end) ? "old" : "other"
        if let last = runs.last, last.0 == name, last.1.upperBound == start {
            runs[runs.count - 1].1 = last.1.lowerBound..<end
        } else {
            runs.append((name, start..<end))
        }
    }
    return runs.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
}

/// The `finished` event of a `--json` run.
func finishedEvent(_ result: HaulResult) throws -> [String: Any]? {
    try result.jsonEvents().last { $0["type"] as? String == "finished" }
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), as servers send Last-Modified.
enum HTTPDateFormat {
    static func string(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
