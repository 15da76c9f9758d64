import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A response whose body the event loop reads ahead of the consumer, up to a few chunks.
///
/// AsyncHTTPClient's `HTTPClientResponse.Body` keeps at most one chunk buffered, so every chunk costs
/// a pause and a resume of reading on the socket and a thread hop each way. Here AHC's delegate API
/// feeds a producer with deeper watermarks (``ReadAhead``): reading pauses only when that many chunks
/// wait, and resumes when a quarter are left.
struct StreamedResponse: Sendable {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: ResponseBody
    /// The protocol the response came over: HTTP/1.1, or HTTP/2 when the server chose it by ALPN.
    var version: HTTPVersion = .http1_1

    /// Whether the response is a stream of an HTTP/2 connection.
    var isHTTP2: Bool { version.major == 2 }
}

/// The body of a ``StreamedResponse``: iterate it once. Dropping it unread cancels the request.
struct ResponseBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Producer = NIOThrowingAsyncSequenceProducer<ByteBuffer, any Error, ReadAhead, BodyDemand>

    /// Chunks read ahead of the consumer on one connection.
    static let highWatermark = 16

    let producer: Producer
    let readAhead: ReadAhead

    /// Reads at most `chunks` ahead from now on. A segment whose range other connections may shorten
    /// reads little ahead: bytes read past a new end are fetched for nothing.
    func limitReadAhead(to chunks: Int) { readAhead.limit.withLockedValue { $0 = Swift.max(1, chunks) } }

    func makeAsyncIterator() -> Iterator { Iterator(base: producer.makeAsyncIterator()) }

    /// Throws `CancellationError` once the consuming task is cancelled (the producer would just end).
    struct Iterator: AsyncIteratorProtocol {
        var base: Producer.AsyncIterator

        mutating func next() async throws -> ByteBuffer? {
            try Task.checkCancellation()
            let element = try await base.next()
            if element == nil { try Task.checkCancellation() }
            return element
        }
    }
}

extension HTTPClient {
    /// Sends `request`; returns once the response head has arrived (or `headTimeout` passed), with its body
    /// still streaming. Cancelling the calling task cancels the request. `ended` is called once when the request
    /// ends: its response read to the end, failed or cancelled.
    func stream(
        _ request: HTTPClient.Request, headTimeout: Duration, readAheadChunks: Int, ended: @escaping @Sendable () -> Void = {}
    ) async throws -> StreamedResponse {
        let bridge = BodyBridge()
        let readAhead = ReadAhead(chunks: readAheadChunks)
        let producer = bridge.makeSequence(readAhead)
        let task = execute(request: request, delegate: bridge, eventLoop: .indifferent)
        task.futureResult.whenComplete { _ in ended() }
        bridge.attach(task)
        let timeout = HeadDeadlines.shared.add(after: headTimeout) { bridge.headTimedOut() }
        defer { HeadDeadlines.shared.remove(timeout) }
        let head = try await withTaskCancellationHandler {
            try await bridge.head()
        } onCancel: {
            task.cancel()
        }
        return StreamedResponse(
            status: head.status, headers: head.headers, body: ResponseBody(producer: producer, readAhead: readAhead), version: head.version)
    }
}

/// What feeds a ``ResponseBody``: AsyncHTTPClient's delegate (``BodyBridge``), or a proxied exchange of Haul's own.
protocol BodyFeeder: AnyObject, Sendable {
    /// The consumer wants more after a pause.
    func produceMore()
    /// The consumer has stopped (finished, dropped the body or was cancelled): stop the request too.
    func didTerminate()
}

/// The producer's delegate: passes the consumer's demand on to its feeder.
final class BodyDemand: NIOAsyncSequenceProducerDelegate, Sendable {
    let feeder: any BodyFeeder

    init(_ feeder: any BodyFeeder) { self.feeder = feeder }

    func produceMore() { feeder.produceMore() }
    func didTerminate() { feeder.didTerminate() }
}

/// Produce while fewer than `limit` chunks wait; after a pause, resume once the buffer has drained to a
/// quarter of it. The limit can change while the body streams.
struct ReadAhead: NIOAsyncSequenceProducerBackPressureStrategy {
    let limit: NIOLockedValueBox<Int>

    init(chunks: Int) { limit = NIOLockedValueBox(max(1, chunks)) }

    func didYield(bufferDepth: Int) -> Bool { bufferDepth < limit.withLockedValue { $0 } }
    func didConsume(bufferDepth: Int) -> Bool { bufferDepth < Swift.max(1, limit.withLockedValue { $0 } / 4) }
}

/// Feeds AHC's body parts into the producer, pausing AHC (by an unfinished future) while the consumer is behind.
/// AHC calls it on the request's event loop; the producer calls ``produceMore()`` and ``didTerminate()`` from anywhere.
final class BodyBridge: HTTPClientResponseDelegate, BodyFeeder {
    typealias Response = Void

    private struct State {
        var task: HTTPClient.Task<Void>?
        var source: ResponseBody.Producer.Source?
        /// AHC waits on this until the consumer wants more.
        var paused: EventLoopPromise<Void>?
        /// The consumer asked for more while AHC was not paused.
        var demanded = false
        /// The consumer has stopped.
        var terminated = false
        /// The response head, or why there is none, once known.
        var head: Result<HTTPResponseHead, any Error>?
        /// Who waits for the head.
        var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
        /// AHC finished the request or reported its error: there is nothing left to cancel.
        var requestEnded = false
    }

    private let state = NIOLockedValueBox(State())

    deinit {
        // Every promise is completed, whichever way the request ended.
        state.withLockedValue { $0.paused }?.fail(HTTPClientError.cancelled)
    }

    /// The response head, once it arrives; throws when the request failed (or timed out) first.
    ///
    /// Not an event loop's future: waiting on one from a task registers a callback on its loop, and completing it
    /// from another loop wakes that loop, two thread wake-ups per request for a value that one lock can hand over.
    func head() async throws -> HTTPResponseHead {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPResponseHead, any Error>) in
            let known = state.withLockedValue { state -> Result<HTTPResponseHead, any Error>? in
                if let head = state.head { return head }
                state.headWaiter = continuation
                return nil
            }
            if let known { continuation.resume(with: known) }
        }
    }

    /// Settles the head the first time only.
    private func completeHead(_ result: Result<HTTPResponseHead, any Error>) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<HTTPResponseHead, any Error>? in
            guard state.head == nil else { return nil }
            state.head = result
            defer { state.headWaiter = nil }
            return state.headWaiter
        }
        waiter?.resume(with: result)
    }

    /// Makes the body's producer; call before the request starts, so that no body part finds it missing.
    func makeSequence(_ readAhead: ReadAhead) -> ResponseBody.Producer {
        let made = ResponseBody.Producer.makeSequence(
            elementType: ByteBuffer.self, failureType: (any Error).self, backPressureStrategy: readAhead,
            finishOnDeinit: false, delegate: BodyDemand(self))
        state.withLockedValue { $0.source = made.source }
        return made.sequence
    }

    /// The running request, to cancel when the consumer stops (at once, if it already has).
    func attach(_ task: HTTPClient.Task<Void>) {
        let cancelNow = state.withLockedValue { state -> Bool in
            state.task = task
            return state.terminated
        }
        if cancelNow { task.cancel() }
    }

    func headTimedOut() {
        completeHead(.failure(HTTPClientError.deadlineExceeded))
        state.withLockedValue { $0.task }?.cancel()
    }

    // MARK: HTTPClientResponseDelegate (on the event loop)

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        completeHead(.success(head))
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        guard let source = state.withLockedValue({ $0.source }) else { return task.eventLoop.makeFailedFuture(HTTPClientError.cancelled) }
        switch source.yield(buffer) {
        case .produceMore:
            return task.eventLoop.makeSucceededVoidFuture()
        case .stopProducing:
            let promise = task.eventLoop.makePromise(of: Void.self)
            let resumeNow = state.withLockedValue { state -> Bool in
                if state.demanded {
                    state.demanded = false
                    return true
                }
                state.paused = promise
                return false
            }
            if resumeNow { promise.succeed() }
            return promise.futureResult
        case .dropped:
            return task.eventLoop.makeFailedFuture(HTTPClientError.cancelled)
        }
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        ended()?.finish()
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        completeHead(.failure(error))
        ended()?.finish(error)
    }

    /// The request is over: nothing waits for demand any more. Returns the source to finish.
    private func ended() -> ResponseBody.Producer.Source? {
        let (source, paused) = state.withLockedValue { state in
            defer {
                state.paused = nil
                state.requestEnded = true
            }
            return (state.source, state.paused)
        }
        paused?.fail(HTTPClientError.cancelled)
        return source
    }

    // MARK: BodyFeeder (anywhere)

    func produceMore() {
        let paused = state.withLockedValue { state -> EventLoopPromise<Void>? in
            guard let paused = state.paused else {
                state.demanded = true
                return nil
            }
            state.paused = nil
            return paused
        }
        paused?.succeed()
    }

    func didTerminate() {
        // The consumer stopped (finished, dropped the body or was cancelled): stop the request too.
        let (task, paused) = state.withLockedValue { state in
            defer {
                state.paused = nil
                state.terminated = true
            }
            // A request that already ended needs no cancelling (which would wake its event loop for nothing).
            return (state.requestEnded ? nil : state.task, state.paused)
        }
        task?.cancel()
        paused?.fail(HTTPClientError.cancelled)
    }
}
