import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

/// Property tests draw their inputs from ``SplitMix`` with a fixed seed: the same inputs on every run and
/// machine, so a failure in CI is reproduced by running the test again; `count` bounds every property.
extension SplitMix: RandomNumberGenerator {
    /// A string of up to `maxLength` characters drawn from `alphabet`.
    mutating func string(from alphabet: [Character], maxLength: Int) -> String {
        String((0..<Int.random(in: 0...maxLength, using: &self)).map { _ in alphabet.randomElement(using: &self)! })
    }

    /// A non-negative number of a random magnitude, from 0 up to `Int64.max`.
    mutating func magnitude() -> Int64 {
        let bits = Int.random(in: 0...63, using: &self)
        return bits == 0 ? 0 : Int64.random(in: 0...(Int64.max >> (63 - bits)), using: &self)
    }
}

/// Runs `body` `count` times with one seeded generator.
func forAll(count: Int = 2000, seed: UInt64, _ body: (inout SplitMix) throws -> Void) rethrows {
    var random = SplitMix(seed: seed)
    for _ in 0..<count { try body(&random) }
}

@Suite struct PropertyTests {
    static let headerAlphabet = Array("bytes 0123456789-/*, \t=abcBYTES;\"\r\n\u{0}é")

    @Test func contentRangeRoundTripsEveryValidRange() {
        forAll(seed: 1) { random in
            let first = random.magnitude() % (Int64.max / 2)
            let last = first + random.magnitude() % (Int64.max / 4)
            let total: Int64? = Bool.random(using: &random) ? nil : last + 1 + random.magnitude() % (Int64.max / 4)
            let text = "bytes \(first)-\(last)/\(total.map(String.init) ?? "*")"
            #expect(ContentRange(text) == .satisfied(first: first, last: last, completeLength: total), "\(text)")
        }
    }

    @Test func contentRangeNeverAcceptsInvalidArithmetic() {
        forAll(seed: 2) { random in
            let text = random.string(from: Self.headerAlphabet, maxLength: 40)
            guard let range = ContentRange(text) else { return }
            switch range {
            case .satisfied(let first, let last, let total):
                #expect(first >= 0 && first <= last, "\(text)")
                if let total { #expect(total > last, "\(text)") }
                #expect(range.length == last - first + 1)
            case .unsatisfied(let total):
                #expect(total >= 0, "\(text)")
            }
        }
    }

    @Test func suggestedNamesAreAlwaysOnePlainFileName() throws {
        let alphabet = Array("abc./\\..%2F%00\u{0}\u{202E}\u{7F} \"';=*UTF-8''filename") + ["é", "😀", "\n"]
        let base = try #require(URL(string: "http://127.0.0.1/dir/"))
        forAll(seed: 3) { random in
            let header = "attachment; filename" + (Bool.random(using: &random) ? "*=UTF-8''" : "=\"") + random.string(from: alphabet, maxLength: 60)
            let path = random.string(from: alphabet, maxLength: 30).addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "x"
            let url = URL(string: path, relativeTo: base)?.absoluteURL ?? base
            let name = FileNaming.suggestedName(contentDisposition: header, url: url)
            #expect(!name.isEmpty)
            #expect(!name.contains("/") && !name.contains("\u{0}") && !name.contains("\n"), "\(name)")
            #expect(!name.hasPrefix("."), "\(name)")
            #expect(name.utf8.count <= FileNaming.maxNameBytes, "\(name)")
        }
    }

    @Test func urlCheckAcceptsExactlyThePortsFrom1To65535() throws {
        forAll(count: 1000, seed: 4) { random in
            let port = Int.random(in: -5...200_000, using: &random)
            let text = Bool.random(using: &random) ? "http://127.0.0.1:\(port)/x" : "https://[::1]:\(port)/x"
            let accepted = (try? UserInput.url(text)) != nil
            #expect(accepted == (1...65535).contains(port), "\(text)")
        }
    }

    @Test func arbitraryInputNeverTrapsTheURLParser() {
        let alphabet = Array("htps:/[]@:?#%0123456789.-abc \u{0}\t") + ["é"]
        forAll(seed: 5) { random in
            let text = random.string(from: alphabet, maxLength: 40)
            if let url = try? UserInput.url(text) {
                #expect(URLCheck.problem(url) == nil, "\(text)")
            }
            _ = Redaction.url(text)
            _ = Redaction.text(text)
        }
    }

    @Test func retryAfterIsAnIntegerOrADateOrNothing() {
        forAll(seed: 6) { random in
            let seconds = random.magnitude()
            #expect(RetryPolicy.parseRetryAfter(" \(seconds) ", now: 0) == .seconds(seconds))
            let junk = random.string(from: Array("0123456789 -+.eGMTSun,Nov"), maxLength: 20)
            if let wait = RetryPolicy.parseRetryAfter(junk, now: 1_000_000_000) { #expect(wait >= .zero, "\(junk)") }
            let delay = RetryPolicy().delay(beforeRetry: Int.random(in: 0...10_000, using: &random), retryAfter: RetryPolicy.parseRetryAfter(junk, now: 0), jitter: Double.random(in: -1...2, using: &random))
            #expect(delay >= .zero && delay <= .seconds(3600), "\(junk)")
        }
    }

    @Test func jsonRPCDecodingNeverTrapsAndValidRequestsRoundTrip() {
        let alphabet = Array("{}[]\":,0123456789.-+eE truefalsnl\\u00\u{0}é") + ["\n"]
        forAll(seed: 7) { random in
            let junk = random.string(from: alphabet, maxLength: 60)
            _ = JSONRPC.decodeRequest(Array(junk.utf8))
            _ = JSONRPC.decodeIncoming(Array(junk.utf8))
            let id = Int.random(in: 0...1_000_000, using: &random)
            let method = random.string(from: Array("abcdefgh."), maxLength: 12)
            let value = random.string(from: alphabet, maxLength: 20)
            let line = JSONRPC.request(id: .number(Double(id)), method: method, params: ["s": .string(value)])
            guard case .success(let request) = JSONRPC.decodeRequest(Array(line.utf8)) else {
                Issue.record("a request Haul wrote did not decode: \(line)")
                return
            }
            #expect(request.method == method)
            #expect((try? request.params.string("s")) == value)
        }
    }

    @Test func segmentPlansKeepTheirInvariantUnderAnySchedule() {
        forAll(count: 500, seed: 8) { random in
            let total = Int64.random(in: 1...(64 << 20), using: &random)
            let minimum = Int64.random(in: 1...(4 << 20), using: &random)
            var plan = SegmentPlan(total: total, parts: Int.random(in: 1...32, using: &random), minSegmentSize: minimum)
            var claimed: [Int] = []
            for _ in 0..<Int.random(in: 0...200, using: &random) {
                switch Int.random(in: 0...2, using: &random) {
                case 0: if let segment = plan.claim() { claimed.append(segment.id) }
                case 1: if let id = claimed.randomElement(using: &random) { plan.advance(id, by: random.magnitude() % (total + 1)) }
                default: if let index = claimed.indices.randomElement(using: &random) { plan.release(claimed.remove(at: index)) }
                }
                #expect(SegmentPlan(restoring: plan.segments, total: total, minSegmentSize: minimum) != nil, "coverage broken: \(plan.segments)")
                #expect(plan.heldRuns.reduce(0) { $0 + Int64($1.count) } == plan.doneBytes)
                #expect(zip(plan.heldRuns, plan.heldRuns.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound })
            }
        }
    }

    @Test func noResponseEverAppendsBytesThatDoNotContinueTheHeldOnes() {
        let statuses = [200, 206, 206, 206, 416]
        forAll(seed: 9) { random in
            let total = Int64.random(in: 1...1_000_000, using: &random)
            let offset = Int64.random(in: 0...total, using: &random)
            let tags = ["\"a\"", "\"b\"", "W/\"a\"", nil]
            let held = Validators(entityTag: tags.randomElement(using: &random)!.flatMap(EntityTag.init), contentEncoding: Bool.random(using: &random) ? "gzip" : nil)
            let point = ResumePoint(offset: offset, validators: held, totalLength: Bool.random(using: &random) ? total : nil)
            let plan = ResumePolicy.plan(for: point, verifyOverlap: Bool.random(using: &random))
            var fields: [HTTPFields.Field] = []
            let first = Int64.random(in: 0...total, using: &random), last = Int64.random(in: first...max(first, total), using: &random)
            fields.append(.init(name: "Content-Range", value: Bool.random(using: &random) ? "bytes \(first)-\(last)/\(Bool.random(using: &random) ? String(total) : "*")" : "bytes */\(total)"))
            if let tag = tags.randomElement(using: &random)! { fields.append(.init(name: "ETag", value: tag)) }
            if Bool.random(using: &random) { fields.append(.init(name: "Content-Encoding", value: "gzip")) }
            let response = ResponseHead(status: statuses.randomElement(using: &random)!, headers: HTTPFields(fields))
            let decision = ResumePolicy.decide(plan: plan, point: point, response: response)
            guard case .append(let info, let length, let overlap) = decision else { return }
            // Appending means: the answer starts where asked, covers at least the overlap, keeps the coding and
            // (without an overlap to compare) repeats the strong ETag.
            guard case .satisfied(let answeredFirst, _, _)? = response.headers["content-range"].flatMap(ContentRange.init) else {
                Issue.record("appended without a Content-Range: \(response)")
                return
            }
            #expect(answeredFirst == plan.start)
            #expect(length >= overlap)
            if offset > 0 { #expect(info.validators.contentEncoding == held.contentEncoding, "\(response)") }
            if overlap == 0, plan.start > 0, let tag = held.strongEntityTag {
                #expect(response.headers["etag"] == tag.rawValue, "\(response)")
            }
        }
    }
}
