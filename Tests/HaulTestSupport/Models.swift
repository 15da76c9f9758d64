// Public value types describing requests, planned responses and served resources.

import NIOConcurrencyHelpers

/// A request as received by `TestServer`.
public struct RecordedRequest: Sendable {
    public var method: String
    /// The request target as received, including any query string.
    public var uri: String
    /// `uri` without the query string.
    public var path: String
    /// Header fields in the order received.
    public var headers: [(String, String)]
    /// The request body (capped at 1 MiB).
    public var body: [UInt8]
    /// 0-based count of requests to this path received before this one.
    public var index: Int
    /// Body bytes actually written to the socket for this request's response.
    /// Only meaningful in records fetched via `TestServer.requests(_:)` / `allRequests()`
    /// after the response has (partially) been delivered.
    public var bytesSent: Int

    public init(
        method: String,
        uri: String,
        headers: [(String, String)] = [],
        body: [UInt8] = [],
        index: Int = 0,
        bytesSent: Int = 0
    ) {
        self.method = method
        self.uri = uri
        self.path = RecordedRequest.stripQuery(uri)
        self.headers = headers
        self.body = body
        self.index = index
        self.bytesSent = bytesSent
    }

    /// First value of the header `name` (case-insensitive), if present.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveEquals(name) }?.1
    }

    /// All values of the header `name` (case-insensitive), in order.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.0.caseInsensitiveEquals(name) }.map(\.1)
    }

    static func stripQuery(_ uri: String) -> String {
        var end = uri.endIndex
        if let q = uri.firstIndex(where: { $0 == "?" || $0 == "#" }) { end = q }
        return String(uri[..<end])
    }
}

/// What the server should answer, and how to deliver it.
public struct ResponsePlan: Sendable {
    public var status: Int
    /// Exactly the headers to send; the server only adds what `delivery` needs
    /// (Content-Length, Transfer-Encoding: chunked, or Connection: close).
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var delivery: Delivery

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], delivery: Delivery = .normal) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delivery = delivery
    }

    /// A short `text/plain` response, e.g. `.text(404, "not found")`.
    public static func text(_ status: Int, _ text: String, headers: [(String, String)] = []) -> ResponsePlan {
        ResponsePlan(
            status: status,
            headers: [("Content-Type", "text/plain; charset=utf-8")] + headers,
            body: Array(text.utf8)
        )
    }
}

/// How the body of a `ResponsePlan` is put on the wire.
public enum Delivery: Sendable {
    /// `Content-Length: body.count` added if the headers lack Content-Length.
    case normal
    /// `Transfer-Encoding: chunked`, no Content-Length.
    case chunked
    /// No Content-Length, no chunking; `Connection: close`; the body ends when the connection closes.
    case closeDelimited
    /// Content-Length of the full body, then only N body bytes, then the connection is closed.
    case dropAfter(Int)
    /// Headers + N body bytes, then nothing more while the connection stays open.
    case stallAfter(Int)
    /// The body in small chunks, paced to this rate.
    case throttled(bytesPerSecond: Int)
    /// The head (with Content-Length of the full body), then the connection is closed.
    case headersOnlyThenClose
    /// Any combination of framing, interruption and throttling.
    case custom(DeliveryOptions)
}

/// Composable delivery options (used by `Delivery.custom`).
public struct DeliveryOptions: Sendable {
    public enum Framing: Sendable {
        /// Content-Length of the full body (added if the headers lack one).
        case contentLength
        /// Transfer-Encoding: chunked.
        case chunked
        /// Neither; Connection: close; body ends at EOF.
        case closeDelimited
    }

    public enum Interruption: Sendable {
        /// Close the connection after this many body bytes.
        case drop(afterBytes: Int)
        /// Stop sending after this many body bytes but keep the connection open.
        case stall(afterBytes: Int)
        /// Stop sending after this many body bytes, and close the connection once `signal` fires: a drop that comes
        /// only when the test has seen the client act on the bytes sent (a client loses what it received and had not
        /// read yet when a connection closes).
        case dropWhen(afterBytes: Int, signal: DropSignal)
    }

    public var framing: Framing
    public var interruption: Interruption?
    public var bytesPerSecond: Int?

    public init(framing: Framing = .contentLength, interruption: Interruption? = nil, bytesPerSecond: Int? = nil) {
        self.framing = framing
        self.interruption = interruption
        self.bytesPerSecond = bytesPerSecond
    }
}

extension Delivery {
    var options: DeliveryOptions {
        switch self {
        case .normal: return DeliveryOptions()
        case .chunked: return DeliveryOptions(framing: .chunked)
        case .closeDelimited: return DeliveryOptions(framing: .closeDelimited)
        case .dropAfter(let n): return DeliveryOptions(interruption: .drop(afterBytes: max(0, n)))
        case .stallAfter(let n): return DeliveryOptions(interruption: .stall(afterBytes: max(0, n)))
        case .throttled(let rate): return DeliveryOptions(bytesPerSecond: max(1, rate))
        case .headersOnlyThenClose: return DeliveryOptions(interruption: .drop(afterBytes: 0))
        case .custom(let options): return options
        }
    }
}

/// A downloadable resource served by `TestServer.serve(_:_:)` with Range/If-Range support.
public struct Resource: Sendable {
    public var body: [UInt8]
    /// Full header value, e.g. `"\"abc\""` or `"W/\"abc\""`.
    public var etag: String?
    /// HTTP-date string.
    public var lastModified: String?
    public var contentDisposition: String?
    /// `Content-Type` sent on 200/206 responses (nil: none).
    public var contentType: String? = "application/octet-stream"
    /// `Accept-Ranges: bytes` header present, and Range honoured.
    public var acceptRanges: Bool = true
    /// More headers sent with every 200, 206 and 416 answer (such as `Repr-Digest`).
    public var extraHeaders: [(String, String)] = []
    public var faults: Faults = .init()

    public init(body: [UInt8], etag: String? = nil, lastModified: String? = nil, contentDisposition: String? = nil) {
        self.body = body
        self.etag = etag
        self.lastModified = lastModified
        self.contentDisposition = contentDisposition
    }
}

/// Misbehaviour injected by `TestServer.serve(_:_:)`.
public struct Faults: Sendable {
    /// Always answer 200 with the full body.
    public var ignoreRange = false
    /// Apply `Range` whatever `If-Range` says (as Twisted, h2o and some object stores do).
    public var ignoreIfRange = false
    /// Drop the connection after N body bytes...
    public var dropAfterBytes: Int? = nil
    /// ...only for the first K requests to this path.
    public var dropOnRequests: Int = .max
    /// Stall after N body bytes, for the first `stallOnRequests` requests.
    public var stallAfterBytes: Int? = nil
    public var stallOnRequests: Int = .max
    public var throttleBytesPerSecond: Int? = nil
    /// Lie in the 206: the range (Content-Range and the bytes sent) is shifted by this many bytes
    /// (clamped to the resource), e.g. asked for 100-199, answer 110-209.
    public var contentRangeStartShift: Int = 0
    /// Lie in the 206: complete length in Content-Range.
    public var wrongCompleteLength: Int? = nil
    /// Answer the first `count` requests with `status` (+ Retry-After if given).
    public var statusForFirstRequests: (status: Int, count: Int, retryAfter: String?)? = nil
    /// No Content-Length on 200 (chunked).
    public var chunked = false
    /// A 206 covers at most this many bytes from the first one asked for (a correct `Content-Range` for what it
    /// sends), as servers and CDNs that cap range sizes answer (RFC 9110 §14.4 allows it).
    public var maxRangeLength: Int? = nil
    /// Behind a load balancer: request number `i` to this path is answered by backend `i % backends.count`, with its
    /// own ETag and, when given, its own bytes (of the resource's length). Empty: the resource answers itself.
    public var backends: [Backend] = []

    public init() {}
}

/// One server behind a load balancer (``Faults/backends``).
public struct Backend: Sendable {
    /// Full `ETag` value, e.g. `"\"a\""`.
    public var etag: String
    /// Its copy of the file; `nil`: the resource's bytes.
    public var body: [UInt8]?

    public init(etag: String, body: [UInt8]? = nil) {
        self.etag = etag
        self.body = body
    }
}

/// A redirect response with a `Location` header.
public func redirectPlan(status: Int = 302, to location: String) -> ResponsePlan {
    ResponsePlan(status: status, headers: [("Location", location)])
}

extension String {
    func caseInsensitiveEquals(_ other: String) -> Bool {
        self.utf8.count == other.utf8.count && self.lowercased() == other.lowercased()
    }
}

/// Fires once: every connection waiting on it (``DeliveryOptions/Interruption/dropWhen(afterBytes:signal:)``) is
/// closed then, and one that starts waiting afterwards closes at once.
public final class DropSignal: Sendable {
    private let state = NIOLockedValueBox<(fired: Bool, waiting: [@Sendable () -> Void])>((false, []))

    public init() {}

    /// Closes the connections waiting on the signal.
    public func fire() {
        let waiting = state.withLockedValue { state in
            state.fired = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for action in waiting { action() }
    }

    /// Runs `action` when the signal fires (at once if it has).
    func whenFired(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLockedValue { state -> Bool in
            if state.fired { return true }
            state.waiting.append(action)
            return false
        }
        if now { action() }
    }
}
