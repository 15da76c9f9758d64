import AsyncHTTPClient
import Foundation
import Logging
import NIOCore

/// The connections of one segmented download: each claims a segment, fetches it with
/// `Range: bytes=a-b` and `If-Range`, and writes at the segment's own offsets into one preallocated file.
struct SegmentedDownload: Sendable {
    /// Chunks a segment's connection reads ahead: little, since work stealing can move its end closer, and
    /// whatever was read past the new end was fetched for nothing.
    static let readAhead = 2
    /// Every segment must be discarded: the resource changed under the download, or its server caps ranges too
    /// tightly for splitting to pay (``RestartReason/smallRanges(cap:)``).
    struct ResourceChanged: Error {
        var reason: RestartReason
        /// A segment's answer named another version (validators) than the download's: the download goes on over one
        /// connection.
        var segmentsDisagree = false
    }

    let sender: RequestSender
    let url: URL
    let file: PartialFile
    let validators: Validators
    let total: Int64
    let coordinator: SegmentCoordinator
    let retry: RetryPolicy
    let events: @Sendable (DownloadEvent) -> Void
    let logger: Logger
    /// The host's connections, shared with the engine's other downloads: the first connection is the download's
    /// own; every other one is taken while the share allows and given back when another download needs it.
    let connections: HostConnections
    let connectionID: Int
    let host: String
    /// In a fleet, whether the node still holds the task (checked before every write).
    var leaseGate: LeaseGate?

    /// Runs `connections` workers until every byte is written. `first` is an open response body for an
    /// already-claimed segment (the answer to the range probe). `monitor` is called every `interval`
    /// with the plan while workers run (progress and checkpoints); a failure it throws ends the download like a
    /// worker's. Once this returns, the monitor has returned for good.
    func run(
        connections: Int,
        first: (Segment, ResponseBody)?,
        interval: Duration,
        monitor: @escaping @Sendable (SegmentPlan) async throws -> Void
    ) async throws {
        let coordinator = self.coordinator
        self.connections.setWants(connectionID, host: host, connections)
        let workers = max(1, connections)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<workers {
                let opening = index == 0 ? first : nil
                group.addTask {
                    try await self.worker(index, opening: opening)
                    return true
                }
            }
            group.addTask {
                while true {
                    do {
                        try await Task.sleep(for: interval)
                    } catch {
                        return false
                    }
                    try await monitor(await coordinator.snapshot)
                }
            }
            // The first failure ends the group, which cancels the other connections (and the monitor) at once; when
            // the last connection is done, the monitor stops.
            var running = workers
            while let isWorker = try await group.next() {
                if isWorker { running -= 1 }
                if running == 0 { group.cancelAll() }
            }
        }
        // Every window written by now is compared (each was when its last byte was recorded: this only makes sure).
        try await coordinator.compareWritten()
    }

    /// One connection: claims segments until there is nothing left to take, retrying its own failures by the
    /// same rule book as a download over one connection (``RetryRules``), with a budget of its own.
    private func worker(_ index: Int, opening: (Segment, ResponseBody)?) async throws {
        var pending = opening
        var rules = RetryRules(.segmentConnection(retry: retry), seed: UInt64.random(in: 0...UInt64.max))
        // Bytes this connection wrote, over all its segments: what its retry budget measures progress by.
        var written: Int64 = 0
        // Connection 1 is the download's own; the others are extra ones of the host's, held while this is true.
        let extra = index > 0
        var holdsConnection = !extra
        defer { if extra, holdsConnection { connections.releaseExtra(connectionID, host: host) } }
        while true {
            try Task.checkCancellation()
            if !holdsConnection {
                guard try await waitForConnection() else { return }
                holdsConnection = true
            }
            let segment: Segment
            var body: ResponseBody?
            if let (claimed, opened) = pending {
                segment = claimed
                body = opened
                pending = nil
            } else {
                guard let claimed = await coordinator.claim() else { return }
                segment = claimed
            }
            rules.requestSent()
            let next: RetryRules.EarlyEndAction
            let before = written
            do {
                let ending = try await fetch(segment, body: body, written: &written, mayGiveBack: extra)
                rules.received(written - before)
                await coordinator.release(segment.id)
                if ending == .gaveBack {
                    // Another download needs a connection to this host: this one is its now; the rest of the
                    // segment goes back to the plan for the connections that remain.
                    connections.releaseExtra(connectionID, host: host)
                    holdsConnection = false
                }
                // A capped answer brought only bytes to compare: the next request asks for fewer of them (``RangeCap``).
                if ending == .narrowed { continue }
                // A segment whose end was stolen before a byte arrived simply ends: nothing to judge.
                guard written > before else { continue }
                next = rules.endedEarly(held: written)
            } catch let failure as TransientFailure {
                rules.received(written - before)
                await coordinator.release(segment.id)
                if Task.isCancelled { throw CancellationError() }
                switch rules.failed(failure.ruleFailure, held: written) {
                case .requestAgain: next = .requestAgain
                case .retry(let retry): next = .retry(retry)
                case .giveUp(let why): next = .giveUp(why)
                }
            } catch {
                await coordinator.release(segment.id)
                throw error
            }
            switch next {
            case .requestAgain:
                continue
            case .retry(let retry):
                events(.retrying(retry: retry.retry, maxRetries: retry.of, delay: retry.after,
                                 reason: "\(retry.reason) (segment at byte \(segment.next), connection \(index + 1))"))
                try await Task.sleep(for: retry.after)
            case .giveUp(let why):
                throw DownloadJob.error(for: why, via: sender.proxy(for: url), forwarded: sender.forwards(url), connection: index + 1)
            }
        }
    }

    /// Waits until the host's sharing allows this download another connection (`true`), or until there is nothing
    /// left to claim (`false`).
    private func waitForConnection() async throws -> Bool {
        while true {
            guard await coordinator.hasWorkToClaim else { return false }
            if connections.extra(connectionID, host: host) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// How a segment's response ended.
    private enum Ending {
        /// At the segment's end, or earlier (a short answer, RFC 9110 §14.4) after bytes of its own: the rest, if any,
        /// is asked for again.
        case done
        /// Early, to give the connection back to another download (`mayGiveBack`: an extra connection).
        case gaveBack
        /// A short answer that brought only bytes to compare, while the next request asks for fewer of them.
        case narrowed
    }

    /// Fetches what is left of `segment` (using `body` if already open), adding the bytes it writes to `written`.
    private func fetch(_ segment: Segment, body opened: ResponseBody?, written connectionBytes: inout Int64, mayGiveBack: Bool) async throws -> Ending {
        let next = segment.next
        let body: ResponseBody
        // Bytes before `next` asked for too, compared with the bytes written there once they are (``BoundaryChecks``).
        var overlap: Int64 = 0
        if let opened {
            body = opened
        } else {
            overlap = await coordinator.overlap(next: next, segmentStart: segment.start)
            let plan = RequestPlan.range(start: next - overlap, overlap: overlap, ifRange: validators.ifRangeValue, last: segment.end - 1)
            let (response, answered) = try await sender.send(plan, to: url, readAhead: Self.readAhead)
            let head = RequestSender.head(response)
            let point = ResumePoint(offset: next, validators: validators, totalLength: total)
            let decision = ResumePolicy.decide(plan: plan, point: point, response: head)
            logger.debug("\(head.status) from \(Redaction.url(answered)): \(RequestSender.summary(head.headers)) -> \(decision)")
            switch RangeAnswer.classify(decision, validators: validators) {
            case .range:
                body = response.body
            case .changed(let reason):
                if case .resourceChanged = reason { throw ResourceChanged(reason: reason, segmentsDisagree: true) }
                throw ResourceChanged(reason: reason)
            case .rangesIgnored:
                throw ResourceChanged(reason: .invalidPartialResponse("the server answered a range request with the whole file"))
            case .inconsistent(let reason):
                throw TransientFailure(reason: reason.description, kind: .server)
            case .retry(let status, let retryAfter):
                throw TransientFailure.status(status, response.status.reasonPhrase, from: answered, retryAfter: retryAfter)
            case .refused(let status) where status == 401 || status == 403:
                // The download's first request was let in, this one is not (a link good for one request, a gate that
                // counts connections): splitting does not work here, one connection may.
                throw ResourceChanged(reason: .invalidPartialResponse(
                    "another connection's range request was refused with \(status) \(response.status.reasonPhrase)"))
            case .refused(let status):
                throw HaulError(.httpStatus, "\(answered) answered \(status) \(response.status.reasonPhrase) to a range request",
                                reason: .httpStatus(status, url: Redaction.url(answered)))
            case .unusable(let why):
                throw TransientFailure(reason: "\(answered): unexpected answer (\(why))", kind: .server)
            }
        }
        var allowance = await coordinator.remaining(segment.id)
        var written: Int64 = 0
        // Every byte of the answer (those compared too): what a short answer shows of the server's cap.
        var received: Int64 = 0
        var position = next
        var overlapBytes: [UInt8] = []
        defer { connectionBytes += written }
        do {
            for try await buffer in body {
                received += Int64(buffer.readableBytes)
                var skip = 0
                if overlapBytes.count < Int(overlap) {
                    skip = min(Int(overlap) - overlapBytes.count, buffer.readableBytes)
                    overlapBytes += buffer.readableBytesView.prefix(skip)
                    if overlapBytes.count == Int(overlap) {
                        try await coordinator.expect(BoundaryChecks.Check(window: (next - overlap)..<next, bytes: overlapBytes))
                    }
                }
                let count = min(Int64(buffer.readableBytes - skip), allowance)
                if count > 0 {
                    try leaseGate?.check()
                    try buffer.withUnsafeReadableBytes { raw in
                        try file.write(UnsafeRawBufferPointer(rebasing: raw[skip..<(skip + Int(count))]), at: position)
                    }
                    position += count
                    written += count
                    let (remaining, pause) = try await coordinator.advance(segment.id, by: count)
                    allowance = remaining
                    if pause > .zero { try await Task.sleep(for: pause) }
                }
                if allowance <= 0 { break }
                if mayGiveBack, connections.shouldGiveBack(connectionID, host: host) { return .gaveBack }
            }
        } catch let error as HaulError {
            throw error
        } catch let changed as ResourceChanged {
            throw changed
        } catch {
            throw try DownloadJob.classify(error, url: url)
        }
        guard allowance > 0 else { return .done }
        // The answer ended cleanly before the segment's end: a server that caps its ranges. The bytes written stay; the
        // bytes before `next` that came are compared even if fewer than asked; the rest is asked for again.
        if !overlapBytes.isEmpty, overlapBytes.count < Int(overlap) {
            let start = next - overlap
            try await coordinator.expect(BoundaryChecks.Check(window: start..<(start + Int64(overlapBytes.count)), bytes: overlapBytes))
        }
        if let cap = await coordinator.shortAnswer(received: received) {
            // A request per few bytes on every connection: one plain request, which no cap limits, is faster.
            throw ResourceChanged(reason: .smallRanges(cap: cap))
        }
        guard written == 0 else { return .done }
        if overlap > 0, await coordinator.asksAgainAtOnce(next: next, segmentStart: segment.start, usedOverlap: overlap) {
            logger.debug("a range answer of \(received) bytes brought none past byte \(next): asking again with fewer bytes before it")
            return .narrowed
        }
        throw TransientFailure(reason: "the server ended a segment's response early")
    }
}
