import PropertyBased
import Testing
@testable import HaulCore

/// Which answer's `Content-Digest` is the file's digest (RFC 9530 §2: it covers that message's content): a 200's, and a
/// 206's whose `Content-Range` is the whole representation (`bytes 0-(N-1)/N`, as nginx, Apache and S3 answer the
/// `bytes=0-` Haul asks a fresh download with); never one of a part, whose content is only that part. A `Repr-Digest`
/// is the file's digest on any answer, and wins over a `Content-Digest`.
@Suite struct WholeAnswerDigestTests {
    static let contentA = "sha-256=:" + String(repeating: "A", count: 43) + "=:"
    static let reprB = "sha-256=:" + String(repeating: "B", count: 43) + "=:"

    /// The digest the decision keeps for the file, for an answer to `plan` with `headers`.
    func keptDigest(_ status: Int, _ headers: HTTPFields, plan: RequestPlan, held: ResumePoint = ResumePoint()) -> Checksum?? {
        switch ResumePolicy.decide(plan: plan, point: held, response: ResponseHead(status: status, headers: headers)) {
        case .append(let info, _, _), .writeWhole(let info, _): return .some(info.validators.digest)
        default: return nil
        }
    }

    @Test func aContentDigestCountsExactlyWhenTheAnswerCarriesTheWholeRepresentation() async {
        // Any length, any range asked for from byte 0 or later, answered with any last byte and a known or unknown
        // complete length; with or without a Repr-Digest beside it.
        await propertyCheck(input: Gen.int(in: 1...5_000_000), Gen.int(in: 0...100), Gen.int(in: 0...100), Gen.bool, Gen.bool) {
            length, startPercent, endPercent, lengthKnown, withRepr in
            let start = Int64(length) * Int64(startPercent) / 101
            let last = max(start, Int64(length - 1) * Int64(max(endPercent, startPercent)) / 100)
            var headers: HTTPFields = [
                "Content-Range": "bytes \(start)-\(last)/\(lengthKnown ? String(length) : "*")",
                "Content-Length": String(last - start + 1), "ETag": "\"e\"", "Content-Digest": Self.contentA,
            ]
            if withRepr { headers.append("Repr-Digest", Self.reprB) }
            let plan = RequestPlan.range(start: start, overlap: 0, ifRange: start > 0 ? "\"e\"" : nil)
            let held = ResumePoint(offset: start, validators: Validators(entityTag: EntityTag("\"e\"")))
            let whole = start == 0 && lengthKnown && last == Int64(length) - 1
            let expected = withRepr ? DigestFields.strongest(Self.reprB) : whole ? DigestFields.strongest(Self.contentA) : nil
            #expect(keptDigest(206, headers, plan: plan, held: held) == .some(expected),
                    "\(headers): whole \(whole), Repr-Digest \(withRepr)")
        }
    }

    @Test func aTwoHundredsContentDigestIsTheFilesAndARangesIsNot() {
        let whole: HTTPFields = ["Content-Length": "10", "Content-Digest": Self.contentA]
        #expect(keptDigest(200, whole, plan: .whole) == .some(DigestFields.strongest(Self.contentA)))
        #expect(keptDigest(200, whole, plan: .range(start: 0, overlap: 0, ifRange: nil)) == .some(DigestFields.strongest(Self.contentA)))
        // A segment from byte 0 that is not the whole file: its digest is of the segment.
        let segment: HTTPFields = ["Content-Range": "bytes 0-4/10", "Content-Length": "5", "Content-Digest": Self.contentA]
        #expect(keptDigest(206, segment, plan: .range(start: 0, overlap: 0, ifRange: nil, last: 4)) == .some(nil))
    }

    @Test func aWholeRangesContentDigestUnlikeTheOneHeldIsAnotherVersion() {
        // Bytes held under one digest, checked again with a range from byte 0 that is the whole file: another
        // Content-Digest in the same algorithm means other content.
        let held = ResumePoint(offset: 100, validators: Validators(digest: DigestFields.strongest(Self.reprB)), totalLength: 1000)
        let headers: HTTPFields = ["Content-Range": "bytes 0-999/1000", "Content-Length": "1000", "Content-Digest": Self.contentA]
        let decision = ResumePolicy.decide(plan: .range(start: 0, overlap: 100, ifRange: nil), point: held, response: ResponseHead(status: 206, headers: headers))
        guard case .restart(.resourceChanged) = decision else {
            Issue.record("\(decision)")
            return
        }
    }
}
