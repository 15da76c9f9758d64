import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
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
    /// `CONNECT` even for plain http through an HTTP proxy (`--proxytunnel`).
    let proxyTunnel: Bool
    /// IPv4 or IPv6 only (`nil`: either).
    let family: IPFamily?
    /// Cookies for the user's origin, matched to each request's path and scheme.
    let cookies: [Cookie]
    /// A jar's cookies, for requests to other origins (after a redirect) where their domain matches.
    let jarCookies: [Cookie]
    /// Logins for other hosts a redirect may lead to (a netrc file's), by lower-cased host name.
    let hostLogins: [String: Credentials]
    /// HTTP/1.1 requests ask for the connection to be closed after the response (``DownloadOptions/closesConnection``).
    let closesConnection: Bool
    /// Headers Haul makes that the download leaves out (curl's `-H 'Name:'`), lower-cased.
    let omitted: Set<String>
    /// The cookies the download's answers set (a download gate's redirect, the file's own first answer): every later
    /// request of the download through this sender (its segments' connections, its retries) carries those that match.
    let received = ReceivedCookies()

    /// The sender of the download `options` describe.
    init(engine: TransferEngine, options: DownloadOptions) {
        self.engine = engine
        self.configuration = engine.configuration
        var headers = options.headers
        let omitted = Set(options.settings.omittedHeaders ?? [])
        self.omitted = omitted
        // user:password@ in the URL (or given apart) becomes Basic authentication, for the URL's origin only.
        if let credentials = options.credentials ?? Credentials(userinfoOf: options.url), !headers.contains("authorization"),
           !omitted.contains("authorization") {
            headers.append("Authorization", credentials.authorization)
        }
        self.userHeaders = headers
        self.userOrigin = Origin(options.url)
        self.policy = RedirectPolicy(maxRedirects: options.maxRedirects, allowInsecureRedirects: options.allowInsecureRedirects)
        self.logger = engine.configuration.logger
        self.proxies = options.proxies
        self.tls = options.tls
        self.proxyTunnel = options.proxyTunnel
        self.family = options.ipFamily
        self.cookies = options.cookies
        self.jarCookies = options.jarCookies
        self.hostLogins = options.hostLogins
        self.closesConnection = options.closesConnection
    }

    /// The proxy (if any) a request for `url` goes through, for messages.
    func proxy(for url: URL) -> ProxyEndpoint? {
        try? engine.route(for: url, proxies: proxies, tunnel: proxyTunnel).proxy
    }

    /// The origin whose credentials (`-u`, the URL's own `user:password@`, a netrc login, an `Authorization` header)
    /// a request for `url` goes without, being of another origin: `nil` when none were given, or `url` is theirs.
    func withheldCredentials(at url: URL) -> Origin? {
        let origin = Origin(url)
        guard userHeaders.contains("authorization"), let userOrigin, origin != userOrigin, login(at: origin) == nil else { return nil }
        return userOrigin
    }

    /// The login of `origin`'s own host (``DownloadOptions/hostLogins``) a request there carries when it is another
    /// origin than the URL given; `nil` when the download leaves `Authorization` out.
    func login(at origin: Origin?) -> Credentials? {
        guard !omitted.contains("authorization"), let origin, origin != userOrigin else { return nil }
        return hostLogins[origin.host]
    }

    /// Whether `url` goes to an HTTP proxy that fetches it itself (absolute form, no tunnel): its answers may be the
    /// proxy's own.
    func forwards(_ url: URL) -> Bool {
        if case .forward? = try? engine.route(for: url, proxies: proxies, tunnel: proxyTunnel) { return true }
        return false
    }


    /// Sends `plan` to `start`; returns the first non-redirect response and the URL that gave it.
    /// `readAhead`: chunks the event loop may read ahead of the consumer; `extra`: headers for the first URL only
    /// (a timestamping check's `If-Modified-Since`). `multiplexed`: a request that may be an HTTP/2 stream
    /// (``TransferEngine/Configuration/multiplexesHTTP2``): direct through the engine's client that offers it, or
    /// through a proxy's tunnel on a pooled connection; else over HTTP/1.1.
    func send(
        _ plan: RequestPlan, to start: URL, readAhead: Int = ResponseBody.highWatermark, extra: HTTPFields = HTTPFields(),
        multiplexed: Bool = false
    ) async throws -> (StreamedResponse, URL) {
        var url = start
        var visited = [url]
        // The first of `visited` a return to is a loop (``RedirectPolicy/follow(from:location:visited:loopsSince:)``).
        var loopsSince = 0
        let headTimeout = configuration.connectTimeout + configuration.stallTimeout
        while true {
            // Whatever the URL came from (a stored task, the protocol), nothing invalid reaches the network layer.
            if let problem = URLCheck.problem(url) {
                throw HaulError(url == start ? .usage : .httpStatus, "cannot request \(Redaction.url(url)): \(problem)")
            }
            let fields = requestFields(for: url, plan: plan, extra: url == start ? extra : HTTPFields(), received: received.cookies)
            logger.debug("GET \(Redaction.url(url)) \(plan.headers.map { "\($0.name): \($0.value)" }.joined(separator: ", "))")
            let response: StreamedResponse
            let route = try engine.route(for: url, proxies: proxies, tunnel: proxyTunnel)
            let tlsConfiguration = url.scheme?.lowercased() == "https" ? try await engine.tlsConfiguration(for: tls) : nil
            let headers = HTTPHeaders(fields.map { ($0.name, $0.value) })
            if route != .direct {
                let settings = ProxyTransport.Settings(
                    trust: tls ?? configuration.tls, tls: tlsConfiguration, contexts: engine.proxyTLSContexts, family: family,
                    connectTimeout: configuration.connectTimeout, stallTimeout: configuration.stallTimeout,
                    headTimeout: headTimeout, readAhead: readAhead, multiplexed: multiplexed && engine.mayMultiplex(url),
                    pool: engine.proxyTunnels)
                do {
                    response = try await ProxyTransport.stream(url, headers: headers, route: route, settings: settings)
                } catch {
                    throw try DownloadJob.classify(error, url: url)
                }
            } else {
                var headers = headers
                // Only over HTTP/1.1: HTTP/2 forbids the field (RFC 9113 §8.2.2), and its connection is shared.
                if closesConnection, !engine.offersHTTP2(multiplexed: multiplexed), !headers.contains(name: "connection") {
                    headers.add(name: "Connection", value: "close")
                }
                do {
                    // The TLS settings choose the client (``DirectClients/Kind``), not each request.
                    let request = try HTTPClient.Request(url: Credentials.strippingUserinfo(url).absoluteString, method: .GET, headers: headers)
                    let lease = engine.directClient(
                        for: url, family: family, multiplexed: multiplexed, trust: tls ?? configuration.tls, tls: tlsConfiguration)
                    response = try await lease.client.stream(request, headTimeout: headTimeout, readAheadChunks: readAhead) {
                        engine.clients.release(lease)
                    }
                } catch {
                    if let refused = await TLSFailure.explain(error, url: url) { throw refused }
                    throw try DownloadJob.classify(error, url: url)
                }
            }
            let status = Int(response.status.code)
            // What any answer sets (a redirect's, or the file's own) goes with the download's next requests it matches.
            let changed = received.keep(response.headers["set-cookie"], from: url)
            guard RedirectPolicy.redirectStatuses.contains(status), let location = response.headers.first(name: "location"), !location.isEmpty else {
                return (response, url)
            }
            logger.debug("\(status) from \(Redaction.url(url)): redirect to \(Redaction.url(location))")
            await RequestSender.drain(response.body)
            // A cookie set on the way makes the next request another one, even to a URL already asked (a gate that
            // sets a cookie and sends the client back): not a loop. The redirect limit still bounds them all.
            if changed { loopsSince = visited.count }
            switch policy.follow(from: url, location: location, visited: visited, loopsSince: loopsSince) {
            case .success(let next):
                visited.append(next)
                url = next
            case .failure(.tooManyRedirects(let count)):
                // Named after the URL asked for, not the last hop.
                throw HaulError(.httpStatus, DownloadJob.describe(.tooManyRedirects(count), from: start), reason: .tooManyRedirects(limit: count))
            case .failure(let failure):
                if case .insecureRedirect(let target) = failure {
                    throw HaulError(.httpStatus, DownloadJob.describe(failure, from: url), reason: .insecureRedirect(target: Redaction.url(target)))
                }
                throw HaulError(.httpStatus, DownloadJob.describe(failure, from: url))
            }
        }
    }

    /// `cookies` with what the `Set-Cookie` fields of a response for `url` set, up to 50 cookies of 4 KiB (a
    /// server's cookies cannot grow the requests without bound).
    static func keeping(_ fields: [String], from url: URL, in cookies: [Cookie]) -> [Cookie] {
        var kept = cookies
        let now = Int64(Date().timeIntervalSince1970)
        for field in fields.prefix(50) where field.utf8.count <= 4096 {
            guard let setting = Cookie.setting(field, from: url, now: now, publicSuffixes: SystemPublicSuffixes.list) else { continue }
            let next = Cookie.applying(setting, to: kept)
            if next.count <= 50 { kept = next }
        }
        return kept
    }

    /// The headers of a request for `url`: the user's (to their origin only), cookies that match it (the user's to
    /// their origin only; those the redirects set where their domain and path match), `User-Agent`,
    /// `Accept-Encoding: identity` (each unless the download leaves it out), the plan's and `extra`.
    func requestFields(for url: URL, plan: RequestPlan, extra: HTTPFields, received: [Cookie] = []) -> HTTPFields {
        let origin = Origin(url)
        let sameOrigin = userOrigin != nil && userOrigin == origin
        var fields = RedirectPolicy.headers(userHeaders, givenFor: userOrigin, sendingTo: origin)
        // Another origin's own login (a netrc entry of its host), never the user's origin's.
        if let login = login(at: origin), !fields.contains("authorization") { fields.append("Authorization", login.authorization) }
        // One jar for the request, as RFC 6265 §5.4 orders it: the user's (their `-b NAME=VALUE` pairs to their origin
        // only, a jar's lines wherever their domain matches) and the ones the download's answers set.
        let candidates = omitted.contains("cookie") ? [] : (sameOrigin ? cookies : jarCookies) + received
        if !candidates.isEmpty, let cookie = Cookie.header(for: url, from: candidates, now: Int64(Date().timeIntervalSince1970)) {
            if let given = fields.combined("cookie") {
                fields.remove("cookie")
                // An empty one given (`-H 'Cookie;'`) adds nothing to the jar's: no `Cookie: ; a=1`.
                let given = given.trimmingCharacters(in: .whitespaces)
                fields.append("Cookie", given.isEmpty ? cookie : given + "; " + cookie)
            } else {
                fields.append("Cookie", cookie)
            }
        }
        if !fields.contains("user-agent"), !omitted.contains("user-agent") { fields.append("User-Agent", configuration.userAgent) }
        if !fields.contains("accept-encoding"), !omitted.contains("accept-encoding") { fields.append("Accept-Encoding", "identity") }
        for field in plan.headers { fields.append(field.name, field.value) }
        for field in extra { fields.append(field.name, field.value) }
        return fields
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

/// The cookies one download's answers set, shared by all its requests (which may run at once, one per segment).
/// Never written anywhere: they live as long as the download's run.
final class ReceivedCookies: Sendable {
    private let jar = NIOLockedValueBox<[Cookie]>([])

    /// The cookies kept so far.
    var cookies: [Cookie] { jar.withLockedValue { $0 } }

    /// Keeps what the `Set-Cookie` `fields` of a response for `url` set (``RequestSender/keeping(_:from:in:)``);
    /// `true` when that changed the cookies kept.
    func keep(_ fields: [String], from url: URL) -> Bool {
        guard !fields.isEmpty else { return false }
        return jar.withLockedValue { cookies in
            let kept = RequestSender.keeping(fields, from: url, in: cookies)
            defer { cookies = kept }
            return kept != cookies
        }
    }
}
