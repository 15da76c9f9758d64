import Foundation
import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A download written straight through to standard output, a character device, a FIFO or a socket: bytes go
/// out as they arrive, with no partial file, no resume record and no rename, and the target is never replaced
/// or removed. After a dropped connection it continues with `Range` only when a strong ETag that the new
/// response repeats ties the rest to the bytes already written, and the last bytes written (kept in memory, up to
/// ``ResumePolicy/overlapLength``), asked for again, are the same; otherwise it fails rather than write a mix.
final class StreamDownload {
    let options: DownloadOptions
    let events: @Sendable (DownloadEvent) -> Void
    let sender: RequestSender
    let logger: Logger
    /// `nil` for standard output.
    let targetPath: String?
    private let clock = ContinuousClock()
    private let startTime: ContinuousClock.Instant
    private var written: Int64 = 0
    /// The last bytes written, for the overlap a retry compares: a file rewritten in place keeps an ETag made of its
    /// size and date (nginx, apache2, lighttpd, caddy), so only the bytes show it changed.
    private var tail = TailWindow(capacity: Int(ResumePolicy.overlapLength))
    private var validators = Validators()
    private var total: Int64?
    private var hasher: Checksummer?
    /// Hashes the bytes written in the algorithm of the digest the server announced with its first answer (RFC 9530),
    /// when that is not `hasher`'s: checked at the end, as `--checksum` is.
    private var digestHasher: Checksummer?
    private let rateLimiter: RateLimiter?
    private var meter = ProgressMeter()
    private var lastProgress: ContinuousClock.Instant?
    private var announced = false

    /// Whether `destination` is written as a stream: standard output, or an existing path that is itself (not
    /// through a link) a character device, FIFO or socket; looked up in `folder` when given (a confined download's
    /// folder, reached without following a link).
    static func isStreamTarget(_ destination: DownloadOptions.Destination, in folder: OpenDirectory? = nil) -> Bool {
        switch destination {
        case .standardOutput: return true
        case .directory: return false
        case .file(let path):
            var info = stat()
            let found = if let folder { fstatat(folder.fd, POSIX.nameOf(path), &info, AT_SYMLINK_NOFOLLOW) } else { lstat(path, &info) }
            guard found == 0 else { return false }
            let type = info.st_mode & S_IFMT
            return type == S_IFCHR || type == S_IFIFO || type == S_IFSOCK
        }
    }

    /// The folder the target is opened in, for a confined download (``DownloadOptions/confinedTo``): its path is
    /// never looked up again.
    private let folder: OpenDirectory?

    init(engine: TransferEngine, options: DownloadOptions, in folder: OpenDirectory? = nil,
         events: @escaping @Sendable (DownloadEvent) -> Void) {
        self.folder = folder
        self.options = options
        self.events = events
        self.logger = engine.configuration.logger
        self.sender = RequestSender(engine: engine, options: options)
        if case .file(let path) = options.destination { targetPath = path } else { targetPath = nil }
        startTime = clock.now
        hasher = options.checksum.map { Checksummer($0.algorithm) }
        rateLimiter = options.sharedRateLimiter ?? options.rateLimit.map { RateLimiter(bytesPerSecond: $0) }
    }

    var shownPath: String { targetPath ?? "-" }

    /// Why a stream takes one connection whatever the segments asked for (said after "using one connection: ").
    var orderNote: String {
        "\(targetPath ?? "standard output") is written in order, first byte to last"
    }

    /// Opens a device, FIFO or socket for writing. A FIFO without a reader is waited for in steps of 50 ms
    /// (`O_NONBLOCK` gives `ENXIO` until one opens it) rather than in a blocking `open`, which would hold one of the few
    /// concurrency threads (two on a 2-core machine) everything else runs on, the reader perhaps among it, and
    /// could not be interrupted by Ctrl-C.
    ///
    /// With `folder`, the target is its entry of the same name (the path is not looked up).
    static func openForWriting(_ path: String, in folder: OpenDirectory? = nil) async throws -> Int32 {
        var before = stat()
        let name = POSIX.nameOf(path)
        let found = if let folder { fstatat(folder.fd, name, &before, AT_SYMLINK_NOFOLLOW) } else { lstat(path, &before) }
        guard found == 0 else { throw POSIX.error("opening", path) }
        try checkOwner(before, path)
        while true {
            let flags = O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
            let fd = if let folder { openat(folder.fd, name, flags) } else { open(path, flags) }
            if fd >= 0 {
                // The very thing checked: not another put at the name while a reader was waited for.
                var opened = stat()
                guard fstat(fd, &opened) == 0, opened.st_dev == before.st_dev, opened.st_ino == before.st_ino else {
                    _ = close(fd)
                    throw HaulError(.fileSystem, "\(PathText.shown(path)) was replaced while haul waited to write to it; nothing was written")
                }
                let flags = fcntl(fd, F_GETFL)
                if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
                return fd
            }
            guard errno == ENXIO else { throw POSIX.error("opening", path) }
            do {
                try await Task.sleep(for: .milliseconds(50))
            } catch {
                throw HaulError(.interrupted, "stopped while waiting for a reader of \(PathText.shown(path)); nothing was written", reason: .interrupted)
            }
        }
    }

    /// A FIFO or socket is written to only when it is this user's, a device also when it is the system's (root's:
    /// `/dev/null`): another user's FIFO at a shared path would hand that user the download.
    private static func checkOwner(_ info: stat, _ path: String) throws(HaulError) {
        let owner = UInt32(info.st_uid), own = UInt32(geteuid())
        let isDevice = info.st_mode & S_IFMT == S_IFCHR
        guard owner == own || (isDevice && owner == 0) else {
            let kind = isDevice ? "device" : info.st_mode & S_IFMT == S_IFIFO ? "FIFO" : "socket"
            throw HaulError(.usage, "\(PathText.shown(path)) is another user's \(kind) (uid \(owner)); haul writes a download only to a FIFO, socket or device of yours: choose another -o")
        }
    }

    func run() async throws -> DownloadResult {
        let fd: Int32
        if let targetPath {
            // O_NOFOLLOW: the path was checked to be a device, FIFO or socket itself, not a link to something.
            fd = try await Self.openForWriting(targetPath, in: folder)
        } else {
            fd = STDOUT_FILENO
        }
        defer { if targetPath != nil { _ = close(fd) } }
        var url = options.url
        // The one rule book of retries, as for a file: quick failure on a typo (`haul get`), backoff with jitter,
        // `Retry-After`, a budget that progress resets.
        var rules = RetryRules(
            RetryRules.Configuration(retry: options.retry, failFastBeforeData: options.failFastBeforeData),
            seed: UInt64.random(in: 0...UInt64.max))
        while true {
            try Task.checkCancellation()
            rules.requestSent()
            let next: RetryRules.EarlyEndAction
            let failure: TransientFailure
            do {
                if try await attempt(fd: fd, url: &url, rules: &rules) { break }
                failure = TransientFailure(reason: "the server ended the response early")
                next = rules.endedEarly(held: written)
            } catch let transient as TransientFailure {
                if Task.isCancelled { throw CancellationError() }
                failure = transient
                switch rules.failed(transient.ruleFailure, held: written) {
                case .requestAgain: next = .requestAgain
                case .retry(let retry): next = .retry(retry)
                case .giveUp(let why): next = .giveUp(why)
                }
            }
            if case .giveUp(let why) = next { throw DownloadJob.error(for: why, via: sender.proxy(for: url), forwarded: sender.forwards(url)) }
            // Bytes written to a stream cannot be taken back: the rest is asked for only when a strong ETag ties it
            // to them.
            guard written == 0 || validators.strongEntityTag != nil else {
                throw HaulError(failure.kind, "\(failure.reason) after \(written) bytes were written to \(shownPath); the server gives no strong ETag to continue a stream safely")
            }
            if case .retry(let retry) = next {
                events(.retrying(retry: retry.retry, maxRetries: retry.of, delay: retry.after, reason: retry.reason))
                try await Task.sleep(for: retry.after)
            }
        }
        if let expected = options.checksum {
            let actual = hasher?.hexDigest() ?? ""
            guard actual == expected.hex else {
                throw HaulError(.checksum, "checksum mismatch for the bytes written to \(shownTarget): expected \(expected), got \(expected.algorithm.rawValue):\(actual); they were already written and cannot be taken back",
                                reason: .checksumMismatch(path: shownPath, expected: expected.description, actual: "\(expected.algorithm.rawValue):\(actual)", alreadyAtPath: false))
            }
        }
        try checkAnnouncedDigest()
        emitProgress(force: true)
        let result = DownloadResult(path: shownPath, bytes: written, fetchedBytes: written, checksum: options.checksum, alreadyComplete: false)
        events(.finished(result))
        return result
    }

    /// The server's own digest of the whole representation (RFC 9530 `Repr-Digest`, or the `Content-Digest` of an
    /// answer that carried all of it), checked against the bytes written, as a file's is before it is published. A
    /// digest first announced after bytes were written (by a resumed answer) was not hashed for, and is not checked.
    private func checkAnnouncedDigest() throws(HaulError) {
        guard let digest = validators.digest else { return }
        let running = [hasher, digestHasher].compactMap { $0 }.first { $0.algorithm == digest.algorithm }
        guard let running else {
            logger.debug("the digest \(digest) was announced after bytes were written to \(shownPath): not checked")
            return
        }
        let actual = running.hexDigest()
        guard actual == digest.hex else {
            throw HaulError(.checksum, "the bytes written to \(shownTarget) do not have the digest the server announced (\(digest.algorithm.rawValue) \(digest.hex.prefix(16))…, got \(actual.prefix(16))…); they were already written and cannot be taken back",
                            reason: .checksumMismatch(path: shownPath, expected: digest.description, actual: "\(digest.algorithm.rawValue):\(actual)", alreadyAtPath: false))
        }
    }

    /// What the bytes were written to, in words: standard output, or the device, FIFO or socket's path.
    private var shownTarget: String { targetPath ?? "standard output" }

    /// One request; `true` when the whole body has been written. The bytes it writes are counted in `rules`.
    private func attempt(fd: Int32, url: inout URL, rules: inout RetryRules) async throws -> Bool {
        let point = ResumePoint(offset: written, validators: validators, totalLength: total)
        let overlap = min(Int64(tail.count), written)
        let plan: RequestPlan = written == 0
            ? .whole : .range(start: written - overlap, overlap: overlap, ifRange: validators.strongEntityTag?.rawValue)
        let (response, answered) = try await sender.send(plan, to: url)
        url = answered
        let head = RequestSender.head(response)
        let decision = ResumePolicy.decide(plan: plan, point: point, response: head)
        logger.debug("\(head.status) from \(Redaction.url(answered)): \(RequestSender.summary(head.headers)) -> \(decision)")
        switch decision {
        case .writeWhole(let info, _):
            guard written == 0 else {
                throw HaulError(.server, "the server sent the whole file again after \(written) bytes were written to \(shownPath), which cannot be taken back; run the download again")
            }
            validators = info.validators
            total = info.totalLength
        case .append(let info, _, _):
            validators = info.validators
            total = info.totalLength
        case .restart(let reason):
            throw HaulError(.server, "\(reason.description) after \(written) bytes were written to \(shownPath); run the download again")
        case .retry(let status, let retryAfter):
            throw TransientFailure.status(status, response.status.reasonPhrase, from: answered, retryAfter: retryAfter)
        case .fail(let status):
            let shown = Redaction.url(answered)
            throw DownloadJob.refused(
                status, said: "\(shown) answered \(status) \(response.status.reasonPhrase)", shownURL: shown,
                via: sender.proxy(for: answered), forwarded: sender.forwards(answered), withheldFor: sender.withheldCredentials(at: answered))
        case .alreadyComplete:
            return true
        case .redirect(let location):
            throw HaulError(.httpStatus, "\(Redaction.url(answered)) redirected to \(Redaction.url(location)), which could not be followed")
        case .protocolViolation(let why):
            throw TransientFailure(reason: "\(Redaction.url(answered)): \(why)", kind: .server)
        case .impossibleLength(let claimed):
            throw HaulError.impossibleLength(claimed)
        }
        if written == 0 {
            // The digest the first bytes are hashed for (a retry before any byte starts it again).
            digestHasher = validators.digest.flatMap { $0.algorithm == hasher?.algorithm ? nil : Checksummer($0.algorithm) }
        }
        if !announced {
            announced = true
            events(.started(url: Redaction.url(options.url), path: shownPath, resumedFrom: written, total: total))
            // Several connections were asked for: say why there is one (curl writes a stream over one; aria2c has no
            // `-o -` at all), rather than refuse a pipe that works.
            if let segments = options.segments, segments > 1 { events(.singleConnection(reason: orderNote)) }
        }
        // The first `overlap` bytes repeat the last ones written: compared, never written again.
        var repeated = OverlapPrefix(expected: tail.last(Int(overlap)))
        do {
            for try await buffer in response.body {
                var count = 0
                try buffer.withUnsafeReadableBytes { whole throws(HaulError) in
                    guard let taken = repeated.take(whole) else {
                        throw HaulError(.server, "\(RestartReason.overlapMismatch.description) after \(written) bytes were written to \(shownPath), which cannot be taken back; run the download again")
                    }
                    let raw = UnsafeRawBufferPointer(rebasing: whole[taken...])
                    count = raw.count
                    guard count > 0 else { return }
                    try writeAll(fd, raw)
                    hasher?.update(raw)
                    digestHasher?.update(raw)
                    tail.append(raw)
                }
                guard count > 0 else { continue }
                written += Int64(count)
                rules.received(Int64(count))
                if let pause = rateLimiter?.consume(count), pause > .zero { try await Task.sleep(for: pause) }
                emitProgress(force: false)
            }
        } catch let error as HaulError {
            throw error
        } catch {
            throw try DownloadJob.classify(error, url: answered)
        }
        guard let total else { return true }
        return written >= total
    }

    private func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(HaulError) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = write(fd, base + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                let target = shownTarget
                if errno == EPIPE {
                    // `| head`: the reader has what it wanted. Nothing is kept (a stream has no partial file).
                    throw HaulError(.fileSystem, "\(target) was closed by its reader after \(written + Int64(done)) bytes; stopped",
                                    reason: .outputClosed)
                }
                throw POSIX.error("writing", target)
            }
            done += n
        }
    }

    private func emitProgress(force: Bool) {
        let now = clock.now
        if !force, let last = lastProgress, now - last < options.progressInterval { return }
        lastProgress = now
        meter.record(bytes: written, at: now - startTime)
        events(.progress(DownloadProgress(
            bytes: written, total: total, bytesPerSecond: meter.bytesPerSecond, secondsRemaining: meter.secondsRemaining(total: total))))
    }
}
