import NIOCore
import NIOHTTP1

/// One response being written on a connection.
final class ResponseState {
    let recordID: Int
    let body: [UInt8]
    let framing: DeliveryOptions.Framing
    let interruption: DeliveryOptions.Interruption?
    let bytesPerSecond: Int?
    /// Whether a body is sent at all (false for HEAD, 1xx, 204, 304).
    let sendsBody: Bool
    /// Whether the connection may be reused after a completed response.
    let keepAlive: Bool
    /// Body bytes to send before finishing (interruption point or full body).
    let limit: Int
    /// Body bytes handed to the channel so far.
    var offset = 0
    /// Set once the last body write completed (or the response was stopped).
    var finished = false
    var stalled = false
    var startTime = NIODeadline.now()
    var nextSendTime = NIODeadline.now()
    var scheduledPump: Scheduled<Void>?

    init(recordID: Int, plan: ResponsePlan, requestMethod: String, requestKeepAlive: Bool) {
        let options = plan.delivery.options
        self.recordID = recordID
        self.body = plan.body
        self.framing = options.framing
        self.interruption = options.interruption
        self.bytesPerSecond = options.bytesPerSecond.map { max(1, $0) }
        let statusAllowsBody = !(100..<200 ~= plan.status || plan.status == 204 || plan.status == 304)
        self.sendsBody = statusAllowsBody && requestMethod != "HEAD"
        let planSaysClose = plan.headers.contains {
            $0.0.caseInsensitiveEquals("Connection") && $0.1.lowercased().contains("close")
        }
        self.keepAlive = requestKeepAlive && !planSaysClose && options.framing != .closeDelimited
        var limit = sendsBody ? plan.body.count : 0
        switch options.interruption {
        case .drop(let n), .stall(let n), .dropWhen(let n, _): limit = min(limit, max(0, n))
        case nil: break
        }
        self.limit = limit
    }

    /// Size of the next body slice.
    var sliceSize: Int {
        guard let rate = bytesPerSecond else { return 64 * 1024 }
        return max(1, min(64 * 1024, rate / 20))
    }

    /// Serialises the status line and headers, adding only what the framing needs.
    static func encodeHead(_ plan: ResponsePlan, framing: DeliveryOptions.Framing, into buffer: inout ByteBuffer) {
        let reason = HTTPResponseStatus(statusCode: plan.status).reasonPhrase
        buffer.writeString("HTTP/1.1 \(plan.status) \(reason)\r\n")
        var headers = plan.headers
        func has(_ name: String) -> Bool { headers.contains { $0.0.caseInsensitiveEquals(name) } }
        let statusAllowsBody = !(100..<200 ~= plan.status || plan.status == 204 || plan.status == 304)
        switch framing {
        case .contentLength:
            if statusAllowsBody && !has("Content-Length") && !has("Transfer-Encoding") {
                headers.append(("Content-Length", String(plan.body.count)))
            }
        case .chunked:
            if statusAllowsBody && !has("Transfer-Encoding") { headers.append(("Transfer-Encoding", "chunked")) }
        case .closeDelimited:
            if !has("Connection") { headers.append(("Connection", "close")) }
        }
        for (name, value) in headers {
            buffer.writeString(name)
            buffer.writeString(": ")
            buffer.writeString(value)
            buffer.writeString("\r\n")
        }
        buffer.writeString("\r\n")
    }
}
