import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

@Suite("TaskStore header JSON")
struct StoreHeaderJSONTests {
    static let samples: [[HTTPFields.Field]] = [
        [],
        [HTTPFields.Field(name: "Accept", value: "*/*")],
        [HTTPFields.Field(name: "X-Quote", value: "say \"hi\" \\ back"), HTTPFields.Field(name: "X-Empty", value: "")],
        [HTTPFields.Field(name: "X-Controls", value: "a\tb\nc\r\u{01}\u{1F}d"), HTTPFields.Field(name: "X-Slash", value: "a/b")],
        [HTTPFields.Field(name: "X-Unicode", value: "ünïcödé ✓ 🚀 \u{7F}")],
    ]

    @Test(arguments: samples)
    func roundTripsAndAgreesWithJSONDecoder(_ headers: [HTTPFields.Field]) throws {
        let text = HeaderJSON.encode(headers)
        #expect(try HeaderJSON.decode(text) == headers)
        let decoded = try JSONDecoder().decode([HeaderField].self, from: Data(text.utf8)).map(\.field)
        #expect(decoded == headers)
        let encoded = String(decoding: try JSONEncoder().encode(headers.map(HeaderField.init)), as: UTF8.self)
        #expect(try HeaderJSON.decode(encoded) == headers)
    }

    @Test func readsOtherSpellingsOfTheSameJSON() throws {
        let expected = [HTTPFields.Field(name: "A", value: "b"), HTTPFields.Field(name: "C", value: "é")]
        for text in [
            #"[{"name":"A","value":"b"},{"name":"C","value":"é"}]"#,
            #" [ { "value" : "b" , "name" : "A" } , { "name" : "C" , "value" : "\u00e9" } ] "#,
            "[\n  {\"name\": \"A\", \"value\": \"b\"},\n  {\"name\": \"C\", \"value\": \"\\u00E9\"}\n]",
        ] {
            #expect(try HeaderJSON.decode(text) == expected)
        }
        #expect(try HeaderJSON.decode(" [ ] ").isEmpty)
    }

    @Test func rejectsWhatIsNotAListOfHeaders() {
        for text in ["", "{", #"[{"name":"A"}]"#, #"[{"name":1,"value":"b"}]"#, #"[{"name":"A","value":"b"}"#, "null"] {
            #expect(throws: StoreDecodingError.self) { try HeaderJSON.decode(text) }
        }
    }
}
