/// The names RFC 9113 §7 gives HTTP/2's error codes (`RST_STREAM`, `GOAWAY`), as curl shows them
/// ("HTTP/2 stream 1 was not closed cleanly: INTERNAL_ERROR"): a person may look them up.
package enum HTTP2ErrorName {
    /// The name of error code `code`; an unknown code (RFC 9113 §7 allows extensions) in hexadecimal.
    package static func of(_ code: Int) -> String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
            "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        guard code >= 0, code < names.count else { return "error code 0x" + String(code, radix: 16) }
        return names[code]
    }
}
