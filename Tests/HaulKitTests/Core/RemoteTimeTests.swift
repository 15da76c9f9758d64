import Testing
@testable import HaulKit

@Suite struct RemoteTimeTests {
    @Test func everyHTTPDateFormGivesTheSameTime() {
        // RFC 9110 §5.6.7's example, in its three forms: 1994-11-06 08:49:37 UTC.
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "  Sun, 06 Nov 1994 08:49:37 GMT "] {
            #expect(RemoteTime.modificationTime(lastModified: text) == 784_111_777, "\(text)")
        }
        #expect(RemoteTime.modificationTime(lastModified: "Wed, 21 Oct 2015 07:28:00 GMT") == 1_445_412_480)
    }

    @Test func noUsableDateLeavesTheLocalTime() {
        for text in [nil, "", "yesterday", "Sun, 06 Nov 1994 08:49:37 CET", "Sun, 32 Nov 1994 08:49:37 GMT", "1445412480"] {
            #expect(RemoteTime.modificationTime(lastModified: text) == nil, "\(text ?? "nil")")
        }
    }
}
