import AsyncHTTPClient
import Foundation
import NIOHTTP1
import NIOHTTP2
import NIOSSL

/// A transient failure: the next attempt may succeed.
struct TransientFailure: Error {
    /// Shown in `retrying` events: any URL's userinfo is masked.
    var reason: String
    var kind: HaulError.Kind = .network
    var retryAfter: Duration?
    /// No connection was made at all (refused, unknown host): most likely a typo, worth saying at once.
    var beforeConnecting = false
    /// The server never acted on the request (``RetryRules/Failure/notProcessed``).
    var notProcessed = false
    /// The server asks for the request over HTTP/1.1 (``RetryRules/Failure/requiresHTTP1``).
    var requiresHTTP1 = false

    init(reason: String, kind: HaulError.Kind = .network, retryAfter: Duration? = nil) {
        self.reason = Redaction.text(reason)
        self.kind = kind
        self.retryAfter = retryAfter
    }

    /// The failure as the retry rules see it.
    var ruleFailure: RetryRules.Failure {
        RetryRules.Failure(
            reason: reason, kind: kind, retryAfter: retryAfter, beforeConnecting: beforeConnecting, notProcessed: notProcessed,
            requiresHTTP1: requiresHTTP1)
    }

    /// A request the server never acted on (``RetryRules/Failure/notProcessed``): sent again at once.
    static func notProcessed(_ reason: String) -> TransientFailure {
        var failure = TransientFailure(reason: reason)
        failure.notProcessed = true
        return failure
    }

    /// A 408, 429 or 5xx answer, honouring its `Retry-After`.
    static func status(_ status: Int, _ phrase: String, from url: URL, retryAfter: String?) -> TransientFailure {
        let wait = retryAfter.flatMap { RetryPolicy.parseRetryAfter($0, now: Int64(Date().timeIntervalSince1970)) }
        return TransientFailure(reason: "\(url) answered \(status) \(phrase)", kind: .httpStatus, retryAfter: wait)
    }
}

extension DownloadJob {
    /// Sorts a transport error into transient (retry) or fatal, with a message a person understands.
    static func classify(_ error: any Error, url: URL) throws -> any Error {
        if Task.isCancelled || error is CancellationError { return CancellationError() }
        if let error = error as? HaulError { return error }
        if let error = error as? TransientFailure { return error }
        let defaultPort = url.scheme?.lowercased() == "https" ? 443 : 80
        // An IPv6 address in brackets, as in a URL: `[::1]:8080`, not `::1:8080`.
        let name = url.host.map { $0.contains(":") && !$0.hasPrefix("[") ? "[\($0)]" : $0 } ?? Redaction.url(url)
        let host = name + ":\(url.port ?? defaultPort)"
        if let error = error as? HTTPClientError {
            switch error {
            case .cancelled:
                // Not this download's cancellation (that was checked above): AsyncHTTPClient gives a request it
                // handed to an HTTP/2 connection that had just been told to go away (GOAWAY: nginx after
                // `keepalive_requests`) this error, before any of it was sent.
                return TransientFailure.notProcessed("\(host) closed the connection before the request was sent")
            case .readTimeout: return TransientFailure(reason: "the transfer from \(host) stalled (no data received)")
            case .connectTimeout: return TransientFailure(reason: "connecting to \(host) timed out")
            case .tlsHandshakeTimeout: return TransientFailure(reason: "the TLS handshake with \(host) timed out")
            case .socksHandshakeTimeout: return TransientFailure(reason: "the SOCKS proxy did not connect to \(host) in time")
            case .httpProxyHandshakeTimeout: return TransientFailure(reason: "the proxy did not connect to \(host) in time")
            case .writeTimeout: return TransientFailure(reason: "sending the request to \(host) timed out")
            case .deadlineExceeded: return TransientFailure(reason: "\(host) did not answer in time")
            case .remoteConnectionClosed: return TransientFailure(reason: "\(host) closed the connection")
            case .invalidProxyResponse: return TransientFailure(reason: "the proxy could not connect to \(host), or refused to")
            case .proxyAuthenticationRequired:
                return HaulError(.network, "the proxy asks for a user and password (407)", reason: .proxyAuthenticationRequired)
            default: break
            }
        }
        if let closed = error as? NIOHTTP2Errors.StreamClosed {
            let name = HTTP2ErrorName.of(closed.errorCode.networkCode)
            switch closed.errorCode {
            case .refusedStream:
                // RST_STREAM with REFUSED_STREAM: the server did no work on the request (RFC 9113 §8.7), so it may go
                // again at once, as curl sends it (Go's and h2o's servers refuse streams past their limits).
                return TransientFailure.notProcessed("\(host) refused the request before acting on it (\(name))")
            case .http11Required:
                var failure = TransientFailure(reason: "\(host) asks for this request over HTTP/1.1 (\(name))")
                failure.requiresHTTP1 = true
                return failure
            case .cancel:
                // Not this download's own cancellation (checked first): the server cancelled the stream, or closed the
                // connection under it (NIO cancels the streams of a connection that got GOAWAY with an error).
                return TransientFailure(reason: "\(host) cancelled the HTTP/2 stream or closed its connection before the transfer completed (\(name))")
            default:
                // Reset instead of ended (by the server, or by NIO for a body longer or shorter than its
                // Content-Length): in curl's words, with the code's name rather than the library's description.
                return TransientFailure(reason: "the HTTP/2 stream from \(host) was not closed cleanly: \(name)")
            }
        }
        let cause = TransportError(error)
        switch cause {
        case .notHTTP:
            // Any parse failure but an early end means the answer is not HTTP at all: an unusable server response,
            // said in words, not parser names.
            return TransientFailure(reason: "\(host) sent a response that is not valid HTTP", kind: .server)
        case .closedEarly:
            // A connection (or a TLS stream without close_notify) that ends mid-body is a drop like any other:
            // retried from the bytes held.
            return TransientFailure(reason: "the connection closed before the transfer completed (\(host))")
        case .tls:
            let reason = CertificateProblem.reason(fromLibraryText: String(describing: error))
            return HaulError(.network, "TLS failure with \(host): \(reason)")
        case .tooManyOpenFiles:
            // Retried: connections and files of other downloads close meanwhile.
            return TransientFailure(reason: POSIX.tooManyOpenFiles("to connect to \(host)"))
        default:
            var failure = TransientFailure(reason: "\(describe(error, as: cause)) (\(host))")
            failure.beforeConnecting = cause.isBeforeConnecting
            return failure
        }
    }

    /// `error` in words: its cause (``TransportError``), else the library's own words.
    static func describe(_ error: any Error) -> String {
        describe(error, as: TransportError(error))
    }

    private static func describe(_ error: any Error, as cause: TransportError) -> String {
        cause.words ?? words(String(describing: error))
    }

    /// A library's error name in words (`HTTPClientError.tlsHandshakeTimeout` → "tls handshake timeout"), never a
    /// type's name on a person's screen; any other text as it is.
    static func words(_ text: String) -> String {
        guard let dot = text.firstIndex(of: "."), text[..<dot].hasSuffix("Error"), !text[..<dot].contains(" ") else { return text }
        let name = text[text.index(after: dot)...].prefix { $0.isLetter || $0.isNumber }
        guard !name.isEmpty else { return text }
        var spaced = ""
        for character in name {
            if character.isUppercase, !spaced.isEmpty { spaced.append(" ") }
            spaced.append(Character(character.lowercased()))
        }
        return spaced
    }

    /// The words for a download the lifecycle gave up on.
    /// `withheldFor`: the origin whose credentials were not sent to the refusing URL (``RequestSender/withheldCredentials(at:)``).
    static func error(
        for giveUp: RetryRules.GiveUp, refusal: (status: Int, phrase: String, url: URL)? = nil, via proxy: ProxyEndpoint? = nil,
        forwarded: Bool = false, withheldFor: Origin? = nil, connection: Int? = nil
    ) -> HaulError {
        switch giveUp {
        case .retriesExhausted(let failure, let retries, let heldBytes):
            let tries = retries == 1 ? "1 retry" : "\(retries) retries"
            let who = connection.map { "connection \($0) gave up" } ?? "gave up"
            // What to do next is the front end's to say (run the command again, resume the task), from the reason.
            // Unreachable only when the network failed: a server that answered (503, 429, an answer that is no HTTP)
            // was reached, and its retries ran out.
            let reachedNothing = failure.kind == .network && !heldBytes && connection == nil
            let reason: FailureReason = reachedNothing ? .unreachable(retries: retries) : .retriesExhausted(retries: retries)
            // With retries turned off (--retries 0) there was nothing to give up on.
            let said = retries == 0 ? connection.map { "connection \($0)" } : "\(who) after \(tries)"
            return HaulError(failure.kind, said.map { noting($0, in: failure.reason) } ?? failure.reason, reason: reason)
        case .endsAtSamePlace(let retries):
            return HaulError(.server, "the server keeps ending the response at the same place (gave up after \(retries) retries)",
                             reason: .endsAtSamePlace(retries: retries))
        case .tooManyRestarts(let count, let reason):
            return HaulError(.server, "giving up after \(count) restarts: \(reason)")
        case .refused(let status):
            let url = refusal.map { "\($0.url) answered \(status) \($0.phrase)" } ?? "the server answered \(status)"
            return refused(status, said: url, shownURL: refusal.map { Redaction.url($0.url) } ?? "", via: proxy, forwarded: forwarded,
                           withheldFor: withheldFor)
        }
    }

    /// The words for an answer that refuses the download (`said`: who answered what). Through an HTTP proxy that
    /// fetches the URL itself (`forwarded`; a tunnel's 401 is the server's), the answer may be the proxy's own:
    /// tinyproxy answers a wrong password with 401, not 407.
    /// A 401 from a URL a redirect led to, of another origin than the credentials' (`withheldFor`), says that they
    /// were not sent there: the server's refusal is of no login at all, not of the one given.
    static func refused(
        _ status: Int, said: String, shownURL: String, via proxy: ProxyEndpoint?, forwarded: Bool, withheldFor: Origin? = nil
    ) -> HaulError {
        if let proxy, proxy.user != nil, status == 401, forwarded {
            return HaulError(.httpStatus, said + " through the proxy \(proxy), which may be refusing its own user and password",
                             reason: .unauthorizedThroughProxy(url: shownURL, proxy: proxy.description))
        }
        let via = proxy.map { " (through the proxy \($0))" } ?? ""
        if status == 401, let withheldFor {
            return HaulError(.httpStatus, said + via + " after a redirect from \(withheldFor.serialization); the credentials given for that origin were not sent to this one",
                             reason: .unauthorizedAfterRedirect(url: shownURL, givenFor: withheldFor.serialization))
        }
        return HaulError(.httpStatus, said + via, reason: .httpStatus(status, url: shownURL))
    }

    /// `reason` with `note` added in parentheses, inside the ones `reason` ends with if it does: "… could not be
    /// resolved (host:80; gave up after 2 retries)", never "(host:80) (gave up after 2 retries)".
    static func noting(_ note: String, in reason: String) -> String {
        guard reason.hasSuffix(")"), reason.contains(" (") else { return "\(reason) (\(note))" }
        return "\(reason.dropLast()); \(note))"
    }

    static func describe(_ failure: RedirectPolicy.Failure, from url: URL) -> String {
        switch failure {
        case .tooManyRedirects(0): return "\(Redaction.url(url)) redirected, and the download follows no redirects"
        case .tooManyRedirects(let count):
            return "stopped after \(count) redirect\(count == 1 ? "" : "s") starting at \(Redaction.url(url))"
        case .loop(let target): return "redirect loop: \(Redaction.url(url)) leads back to \(Redaction.url(target))"
        case .invalidLocation(let location): return "\(Redaction.url(url)) redirected to an invalid location \"\(Redaction.text(location))\""
        case .unsupportedScheme(let scheme): return "\(Redaction.url(url)) redirected to an unsupported scheme \"\(scheme)\""
        case .insecureRedirect(let target): return "refused to follow a redirect from https to plain http (\(Redaction.url(target)))"
        }
    }
}

extension HaulError {
    /// A length no file can have, or none on the destination's file system (`EFBIG`): the server's error (exit 7),
    /// said as such, never as a disk to free.
    static func impossibleLength(_ claimed: Int64, onThisFileSystem: Bool = false) -> HaulError {
        HaulError(.server, ResumePolicy.impossibleLengthMessage(claimed, onThisFileSystem: onThisFileSystem),
                  reason: .impossibleLength(claimed: claimed))
    }
}
