import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Sends one GET and follows redirects by ``RedirectPolicy``, sending the user's headers only to their origin.
struct RequestSender: Sendable {
    let engine: TransferEngine
    let configuration: TransferEngine.Configuration
    let userHeaders: HTTPFields
    /// The origin of the URL the user gave: the only one their headers go to.
    let userOrigin: Origin?
    let policy: RedirectPolicy
    let logger: Logger
    /// The download's proxy settings (`nil`: the engine's).
    let proxies: ProxyChoice?
    /// The download's TLS trust (`nil`: the engine's).
    let tls: TLSTrust?

    /// The sender of the download `options` describe.
    init(engine: TransferEngine, options: DownloadOptions) {
        self.engine = engine
        self.configuration = engine.configuration
        var headers = options.headers
        // user:password@ in the URL (or given apart) becomes Basic authentication, for the URL's origin only.
        if let credentials = options.credentials ?? Credentials(userinfoOf: options.url), !headers.contains("authorization") {
            headers.append("Authorization", credentials.authorization)
        }
        self.userHeaders = headers
        self.userOrigin = Origin(options.url)
        self.policy = RedirectPolicy(allowInsecureRedirects: options.allowInsecureRedirects)
        self.logger = engine.configuration.logger
        self.proxies = options.proxies
        self.tls = options.tls
    }


    /// Sends `plan` to `start`; returns the first non-redirect response and the URL that gave it.
    /// `readAhead`: chunks the event loop may read ahead of the consumer. `multiplexed`: through the engine's client
    /// that offers HTTP/2 (``TransferEngine/Configuration/multiplexesHTTP2``), else over HTTP/1.1.
    func send(_ plan: RequestPlan, to start: URL, readAhead: Int = ResponseBody.highWatermark, multiplexed: Bool = false) async throws -> (StreamedResponse, URL) {
        var url = start
        var visited = [url]
        let headTimeout = configuration.connectTimeout + configuration.stallTimeout
        while true {
            // Whatever the URL came from (a stored task, the protocol), nothing invalid reaches the network layer.
            if let problem = URLCheck.problem(url) {
                throw HaulError(url == start ? .usage : .httpStatus, "cannot request \(Redaction.url(url)): \(problem)")
            }
            var fields = RedirectPolicy.headers(userHeaders, givenFor: userOrigin, sendingTo: Origin(url))
            if !fields.contains("user-agent") { fields.append("User-Agent", configuration.userAgent) }
            if !fields.contains("accept-encoding") { fields.append("Accept-Encoding", "identity") }
            for field in plan.headers { fields.append(field.name, field.value) }
            logger.debug("GET \(Redaction.url(url)) \(plan.headers.map { "\($0.name): \($0.value)" }.joined(separator: ", "))")
            let response: StreamedResponse
            let (client, proxy) = try engine.client(for: url, proxies: proxies, multiplexed: multiplexed)
            let tlsConfiguration = url.scheme?.lowercased() == "https" ? try await engine.tlsConfiguration(for: tls) : nil
            do {
                let request = try HTTPClient.Request(
                    url: Credentials.strippingUserinfo(url).absoluteString, method: .GET,
                    headers: HTTPHeaders(fields.map { ($0.name, $0.value) }), tlsConfiguration: tlsConfiguration)
                response = try await client.stream(request, headTimeout: headTimeout, readAheadChunks: readAhead)
            } catch {
                if proxy == nil, let refused = await TLSFailure.explain(error, url: url) { throw refused }
                let classified = try DownloadJob.classify(error, url: url)
                if let proxy, var failure = classified as? TransientFailure, failure.beforeConnecting || failure.reason.contains("timed out") {
                    // Through a proxy, a failed connection is the proxy's: say so (never retried without it).
                    failure.reason = "the proxy \(proxy) could not be reached (\(DownloadJob.describe(error)))"
                    throw failure
                }
                throw classified
            }
            let status = Int(response.status.code)
            guard [301, 302, 303, 307, 308].contains(status), let location = response.headers.first(name: "location"), !location.isEmpty else {
                return (response, url)
            }
            await RequestSender.drain(response.body)
            switch policy.follow(from: url, location: location, visited: visited) {
            case .success(let next):
                visited.append(next)
                url = next
            case .failure(.tooManyRedirects(let count)):
                // Named after the URL asked for, not the last hop.
                throw HaulError(.httpStatus, DownloadJob.describe(.tooManyRedirects(count), from: start))
            case .failure(let failure):
                if case .insecureRedirect(let target) = failure {
                    throw HaulError(.httpStatus, DownloadJob.describe(failure, from: url), reason: .insecureRedirect(target: Redaction.url(target)))
                }
                throw HaulError(.httpStatus, DownloadJob.describe(failure, from: url))
            }
        }
    }

    static func head(_ response: StreamedResponse) -> ResponseHead {
        ResponseHead(
            status: Int(response.status.code),
            headers: HTTPFields(response.headers.map { HTTPFields.Field(name: $0.name, value: $0.value) }))
    }

    /// The headers that matter for resuming, for the debug log.
    static func summary(_ headers: HTTPFields) -> String {
        ["content-length", "content-range", "etag", "last-modified", "accept-ranges", "location", "retry-after"]
            .compactMap { name in headers[name].map { "\(name)=\(Redaction.text($0))" } }
            .joined(separator: " ")
    }

    /// Reads and drops a small body (a redirect's), so the connection can be reused.
    static func drain(_ body: ResponseBody) async {
        var total = 0
        do {
            for try await chunk in body {
                total += chunk.readableBytes
                if total > 1 << 20 { break }
            }
        } catch {}
    }
}
