import Testing
@testable import HaulCore
@testable import HaulKit

@Suite struct ContentRangeTests {
    @Test func parsesSatisfiedRange() {
        #expect(ContentRange("bytes 40-99/100") == .satisfied(first: 40, last: 99, completeLength: 100))
        #expect(ContentRange("bytes 40-99/100")?.length == 60)
        #expect(ContentRange("BYTES 0-0/1") == .satisfied(first: 0, last: 0, completeLength: 1))
        #expect(ContentRange("  bytes 0-9/10  ") == .satisfied(first: 0, last: 9, completeLength: 10))
    }

    @Test func parsesUnknownCompleteLength() {
        #expect(ContentRange("bytes 0-9/*") == .satisfied(first: 0, last: 9, completeLength: nil))
    }

    @Test func parsesUnsatisfied() {
        #expect(ContentRange("bytes */1024") == .unsatisfied(completeLength: 1024))
        #expect(ContentRange("bytes */1024")?.length == 0)
        #expect(ContentRange("bytes */1024")?.completeLength == 1024)
    }

    @Test func handles64BitLengths() {
        let fiveGiB: Int64 = 5 * 1024 * 1024 * 1024
        #expect(ContentRange("bytes 4294967296-\(fiveGiB - 1)/\(fiveGiB)") == .satisfied(first: 4_294_967_296, last: fiveGiB - 1, completeLength: fiveGiB))
        let nearMax = Int64.max - 1
        #expect(ContentRange("bytes 0-\(nearMax - 1)/\(nearMax)")?.length == nearMax)
        #expect(ContentRange("bytes */\(Int64.max)") == .unsatisfied(completeLength: Int64.max))
    }

    @Test(arguments: [
        "bytes 0-/3", "bytes -5/10", "bytes 5-4/10", "bytes 0-10/10", "bytes 0-9/9", "bytes=0-9/10",
        "bytes0-9/10", "items 0-9/10", "bytes 0-9", "bytes */*", "bytes 1-2-3/10", "bytes +1-2/10",
        "bytes 0-9/1x", "", "bytes", "bytes 0-9223372036854775808/9223372036854775807",
        "bytes 0-99999999999999999999/100000000000000000000", "bytes 0 - 9/10", "bytes 0-9/-1",
    ])
    func rejectsMalformed(_ value: String) {
        #expect(ContentRange(value) == nil)
    }

    @Test func lastByteAtInt64MaxIsRejected() {
        #expect(ContentRange("bytes 0-\(Int64.max)/*") == nil)
    }
}
