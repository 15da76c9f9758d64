import AsyncHTTPClient
import Foundation
import HaulCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS

/// Sends one request through a proxy on a connection of Haul's own, as curl does: a plain `http://` URL to an HTTP
/// proxy in absolute form (no `CONNECT`), `CONNECT` for `https://` (or when asked), SOCKS5 with or without a user
/// name and password (RFC 1929). AsyncHTTPClient tunnels every request through an HTTP proxy with `CONNECT`
/// (which squid's stock rules refuse for any port but 443), has no SOCKS authentication, and reports a proxy's
/// refusal without its status; so proxied requests do not go through it.
///
/// A request that may be an HTTP/2 stream (``Settings/multiplexed``) to an `https` server through a tunnel offers
/// `h2` by ALPN inside it, and when the server chooses it, becomes a stream of a connection the engine keeps
/// (``TunnelPool``) for the next requests to that server through that proxy. Any other request has a connection of
/// its own, closed after the response.
///
/// A proxy's refusal (`403`, `407`, SOCKS authentication refused, a SOCKS rule) is a ``HaulError`` naming the
/// proxy and its answer, never retried; a proxy that cannot reach the server (`502`–`504`, SOCKS "host
/// unreachable") is a transient failure.
struct ProxyTransport {
    /// What the request needs besides its URL and headers.
    struct Settings {
        /// The TLS trust of the download (its key in ``contexts``) and its configuration (`nil`: the system's).
        var trust: TLSTrust
        var tls: TLSConfiguration?
        var contexts: TLSContextCache
        var family: IPFamily?
        var connectTimeout: Duration
        var stallTimeout: Duration
        var headTimeout: Duration
        var readAhead: Int
        /// Offer HTTP/2 inside a tunnel to an `https` server, and share the connection through ``pool`` when the
        /// server chooses it (a request that may be a stream: see ``TransferEngine/mayMultiplex(_:)``).
        var multiplexed = false
        /// The engine's pooled HTTP/2 connections through proxies.
        var pool: TunnelPool?
    }

    /// Sends `GET url` with `headers` (a `Host` is added) along `route`; returns once the response head arrived.
    static func stream(_ url: URL, headers: HTTPHeaders, route: ProxyRoute, settings: Settings) async throws -> StreamedResponse {
        guard let proxy = route.proxy, let host = url.host, !host.isEmpty else {
            throw HaulError(.usage, "cannot request \(Redaction.url(url)) through a proxy")
        }
        let target = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let https = url.scheme?.lowercased() == "https"
        let port = url.port ?? (https ? 443 : 80)
        if https, settings.multiplexed, let pool = settings.pool, route != .forward(proxy) {
            let key = TunnelPool.Key(
                proxy: proxy, socks: route == .socks(proxy), host: target, port: port, trust: settings.trust, family: settings.family)
            return try await multiplexedStream(url, headers: headers, route: route, key: key, pool: pool, settings: settings)
        }
        // A tunnel's HTTP/1.1 connection may carry the next request of the same key (never a request to the proxy itself).
        var keepAlive: (@Sendable (any Channel) -> Void)?
        if route != .forward(proxy), let pool = settings.pool {
            let key = TunnelPool.Key(
                proxy: proxy, socks: route == .socks(proxy), tls: https, host: target, port: port, trust: settings.trust, family: settings.family)
            if let response = try await overIdleTunnel(url, headers: headers, key: key, pool: pool, settings: settings) { return response }
            keepAlive = { pool.park(key, $0) }
        }
        let channel = try await connect(to: proxy, family: settings.family, timeout: settings.connectTimeout)
        // Cancelled (Ctrl-C, a paused task) during the handshake or TLS: closing the connection ends the wait at once.
        return try await withTaskCancellationHandler { [keepAlive] in
            try await converse(over: channel, url: url, target: target, https: https, port: port, headers: headers,
                               route: route, proxy: proxy, settings: settings, keepAlive: keepAlive)
        } onCancel: {
            channel.close(promise: nil)
        }
    }

    /// The handshake, TLS and the exchange on a connection to the proxy; closes it when any of them fails.
    private static func converse(
        over channel: any Channel, url: URL, target: String, https: Bool, port: Int, headers: HTTPHeaders, route: ProxyRoute,
        proxy: ProxyEndpoint, settings: Settings, keepAlive: (@Sendable (any Channel) -> Void)?
    ) async throws -> StreamedResponse {
        do {
            _ = try await openTunnel(over: channel, target: target, https: https, port: port, route: route, proxy: proxy, settings: settings)
            return try await exchange(
                url, headers: headers, absoluteForm: route == .forward(proxy), proxy: proxy, on: channel, settings: settings, keepAlive: keepAlive)
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    /// The proxy's handshake (for a tunnel) and TLS to the server (for `https`) on a connection to the proxy; returns
    /// the protocol the server chose by ALPN (`h2` only when `offeringHTTP2`). The caller closes the connection if
    /// this fails.
    static func openTunnel(
        over channel: any Channel, target: String, https: Bool, port: Int, route: ProxyRoute, proxy: ProxyEndpoint, settings: Settings,
        offeringHTTP2: Bool = false
    ) async throws -> String? {
        let handshakeTimeout = TimeAmount.nanoseconds(Int64(settings.headTimeout.seconds * 1e9))
        switch route {
        case .direct, .forward:
            break
        case .tunnel:
            let handshake = HTTPConnectHandshake(host: target, port: port, proxyAuthorization: proxy.basicAuthorization)
            try await negotiate(handshake, on: channel, timeout: handshakeTimeout, proxy: proxy, target: "\(target):\(port)")
        case .socks:
            let address: SOCKS5Handshake.Target
            if let literal = IPAddress(target) {
                address = .address(literal)
            } else if proxy.resolvesNames {
                address = .name(target)
            } else {
                // socks5:// resolves here, as curl does (socks5h:// lets the proxy resolve).
                let resolved = try await HostResolver.addresses(of: target, port: port, family: settings.family)
                guard let first = resolved.first?.ipAddress, let literal = IPAddress(first) else {
                    throw TransientFailure(reason: "the host name could not be resolved (\(target))")
                }
                address = .address(literal)
            }
            let handshake = SOCKS5Handshake(target: address, port: port, credentials: proxy.credentials)
            try await negotiate(handshake, on: channel, timeout: handshakeTimeout, proxy: proxy, target: "\(target):\(port)")
        }
        guard https else { return nil }
        return try await startTLS(on: channel, host: target, port: port, settings: settings, offeringHTTP2: offeringHTTP2)
    }

    // MARK: Connecting to the proxy

    static func connect(to proxy: ProxyEndpoint, family: IPFamily?, timeout: Duration) async throws -> any Channel {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.nanoseconds(Int64(timeout.seconds * 1e9)))
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
        do {
            guard let family else { return try await bootstrap.connect(host: proxy.host, port: proxy.port).get() }
            var lastError: (any Error)?
            for address in try await HostResolver.addresses(of: proxy.host, port: proxy.port, family: family) {
                do {
                    return try await bootstrap.connect(to: address).get()
                } catch {
                    lastError = error
                }
            }
            throw lastError ?? ChannelError.connectPending
        } catch let failure as TransientFailure {
            var named = TransientFailure(reason: "the proxy \(proxy) could not be reached (\(failure.reason))")
            named.beforeConnecting = true
            throw named
        } catch {
            var failure = TransientFailure(reason: "the proxy \(proxy) could not be reached (\(DownloadJob.describe(error)))")
            failure.beforeConnecting = true
            throw failure
        }
    }

    // MARK: The handshake

    private static func negotiate<Negotiation: TunnelNegotiation>(
        _ negotiation: Negotiation, on channel: any Channel, timeout: TimeAmount, proxy: ProxyEndpoint, target: String
    ) async throws {
        let established = try await channel.eventLoop.submit { () throws -> EventLoopFuture<Void> in
            let handler = TunnelHandler(negotiation, timeout: timeout, eventLoop: channel.eventLoop)
            try channel.pipeline.syncOperations.addHandler(handler)
            return handler.established.futureResult
        }.get()
        do {
            try await established.get()
        } catch {
            throw refusal(error, proxy: proxy, target: target)
        }
    }

    /// A failed handshake in words: the proxy, what was asked, its answer.
    static func refusal(_ error: any Error, proxy: ProxyEndpoint, target: String) -> any Error {
        let shown = proxy.description
        switch error {
        case HTTPConnectHandshake.Failure.refused(let status, let phrase):
            let answer = "\(status)\(phrase.isEmpty ? "" : " " + phrase)"
            // 407 is the standard answer; tinyproxy answers a wrong password with 401. Before the tunnel is open, either
            // is the proxy's own.
            if status == 407 || status == 401 { return proxyAuthentication(proxy, answer: answer) }
            let message = "the proxy \(shown) refused to connect to \(target): \(answer)"
            if HTTPConnectHandshake.Failure.refused(status: status, phrase: phrase).isTransient {
                return TransientFailure(reason: message)
            }
            return HaulError(.network, message, reason: .proxyRefused(proxy: shown, status: status))
        case HTTPConnectHandshake.Failure.notHTTP:
            return HaulError(.network, "the proxy \(shown) did not answer CONNECT with HTTP; check that it is an HTTP proxy")
        case let failure as SOCKS5Handshake.Failure:
            switch failure {
            case .noAcceptableMethod(requiresCredentials: true):
                return HaulError(.network, "the SOCKS5 proxy \(shown) requires a user name and password", reason: .proxyAuthenticationRequired(proxy: shown))
            case .authenticationRefused:
                return HaulError(.network, "the SOCKS5 proxy \(shown) refused the login: wrong user name or password",
                                 reason: .proxyCredentialsRefused(proxy: shown))
            case .connectFailed where failure.isTransient:
                return TransientFailure(reason: "the SOCKS5 proxy \(shown) could not connect to \(target): \(failure.description)")
            case .connectFailed(let code):
                return HaulError(.network, "the SOCKS5 proxy \(shown) refused to connect to \(target): \(failure.description)",
                                 reason: .proxyRefused(proxy: shown, status: Int(code)))
            case .noAcceptableMethod, .notSOCKS5:
                return HaulError(.network, "the SOCKS5 proxy \(shown) refused the connection: \(failure.description)")
            }
        case ProxyHandshakeError.proxyDidNotAnswer:
            return TransientFailure(reason: "the proxy \(shown) did not answer in time")
        case ProxyHandshakeError.proxyClosed:
            return TransientFailure(reason: "the proxy \(shown) closed the connection before the tunnel to \(target) was open")
        default:
            return TransientFailure(reason: "the proxy \(shown) failed: \(DownloadJob.describe(error))")
        }
    }

    /// A 407: the proxy wants credentials, or refused the ones given.
    static func proxyAuthentication(_ proxy: ProxyEndpoint, answer: String) -> HaulError {
        if proxy.user == nil {
            return HaulError(.network, "the proxy \(proxy) asks for a user and password (\(answer))",
                             reason: .proxyAuthenticationRequired(proxy: proxy.description))
        }
        return HaulError(.network, "the proxy \(proxy) answered \(answer): wrong user or password", reason: .proxyCredentialsRefused(proxy: proxy.description))
    }

    // MARK: TLS to the server, inside the tunnel

    /// TLS to the server inside the tunnel; returns the protocol it chose by ALPN.
    private static func startTLS(on channel: any Channel, host: String, port: Int, settings: Settings, offeringHTTP2: Bool) async throws -> String? {
        let literal = IPAddress(host)
        var configuration = settings.tls ?? TLSConfiguration.makeClientConfiguration()
        configuration.applicationProtocols = offeringHTTP2 ? ["h2", "http/1.1"] : ["http/1.1"]
        // NIOSSL checks an address against the connection's peer, which is the proxy here: the server's
        // address is checked below instead.
        let checkAddress = literal != nil && configuration.certificateVerification == .fullVerification
        if checkAddress { configuration.certificateVerification = .noHostnameVerification }
        let context = try settings.contexts.context(for: settings.trust, addressCheckedHere: checkAddress, offeringHTTP2: offeringHTTP2) { configuration }
        let handshake = try await channel.eventLoop.submit { () throws -> EventLoopFuture<(NIOSSLCertificate?, String?)> in
            let ssl = try NIOSSLClientHandler(context: context, serverHostname: literal == nil ? host : nil)
            let waiter = TLSHandshakeWaiter(eventLoop: channel.eventLoop)
            try channel.pipeline.syncOperations.addHandler(ssl)
            try channel.pipeline.syncOperations.addHandler(waiter)
            // A server that never finishes the handshake fails it (other requests may be waiting for this tunnel).
            let completed = waiter.completed
            let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(settings.headTimeout.seconds * 1e9))) {
                completed.fail(HTTPClientError.tlsHandshakeTimeout)
                channel.close(promise: nil)
            }
            completed.futureResult.whenComplete { _ in timer.cancel() }
            return waiter.completed.futureResult.assumeIsolated()
                .map { chosen in (ssl.peerCertificate, chosen) }
                // The certificate a refusal is about, while the handshake still holds it: its cause is said from it,
                // as for a direct connection (the server cannot be asked again around the proxy).
                .flatMapErrorThrowing { error in throw RefusedHandshake(error: error, certificate: ssl.peerCertificate.map(PeerCertificate.init(_:))) }
                .nonisolated()
        }.get()
        let certificate: NIOSSLCertificate?
        let chosen: String?
        do {
            (certificate, chosen) = try await handshake.get()
        } catch {
            let url = URL(string: "https://\(literal.map { $0.isIPv4 ? $0.description : "[\($0)]" } ?? host):\(port)/") ?? URL(fileURLWithPath: "/")
            guard let refused = error as? RefusedHandshake else { throw try DownloadJob.classify(error, url: url) }
            if let explained = await TLSFailure.explain(refused.error, url: url, certificate: { refused.certificate }) { throw explained }
            throw try DownloadJob.classify(refused.error, url: url)
        }
        if checkAddress, let literal {
            let names = certificate?._subjectAlternativeNames().compactMap { name -> [UInt8]? in
                name.nameType == .ipAddress ? Array(name.contents) : nil
            } ?? []
            guard names.contains(literal.bytes) else {
                // In the words a direct connection's refusal has (``TLSFailure``).
                let shown = certificate.map(PeerCertificate.init(_:))?.names ?? []
                let server = "\(literal.isIPv4 ? host : "[\(host)]"):\(port)"
                throw HaulError(.network, CertificateProblem.wrongHostName(certificateNames: shown).message(server: server))
            }
        }
        return chosen
    }

    /// A TLS handshake inside a tunnel that failed, with the server's certificate if it had arrived.
    private struct RefusedHandshake: Error {
        let error: any Error
        let certificate: PeerCertificate?
    }

    // MARK: The exchange

    /// Sends the request on `channel` (over HTTP/1.1) and returns once the response head arrived. `keepAlive`: takes
    /// the connection once the response ended cleanly, if the server keeps it open (`nil`: `Connection: close`);
    /// `reusing`: the connection carried a request before (its HTTP handlers are in place).
    static func exchange(
        _ url: URL, headers: HTTPHeaders, absoluteForm: Bool, proxy: ProxyEndpoint, on channel: any Channel, settings: Settings,
        reusing: Bool = false, keepAlive: (@Sendable (any Channel) -> Void)? = nil
    ) async throws -> StreamedResponse {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: absoluteForm ? absoluteURI(url) : originForm(url))
        if !headers.contains(name: "host") { head.headers.add(name: "Host", value: hostHeader(url)) }
        head.headers.add(contentsOf: headers)
        if absoluteForm, let authorization = proxy.basicAuthorization {
            head.headers.add(name: "Proxy-Authorization", value: authorization)
        }
        if keepAlive == nil { head.headers.add(name: "Connection", value: "close") }
        let request = head
        let feeder = ProxiedFeeder()
        let readAhead = ReadAhead(chunks: settings.readAhead)
        let made = ResponseBody.Producer.makeSequence(
            elementType: ByteBuffer.self, failureType: (any Error).self, backPressureStrategy: readAhead,
            finishOnDeinit: false, delegate: BodyDemand(feeder))
        let source = made.source
        let stall = TimeAmount.nanoseconds(Int64(settings.stallTimeout.seconds * 1e9))
        let responseHead = try await channel.eventLoop.submit { () throws -> EventLoopFuture<HTTPResponseHead> in
            // A reused tunnel closed by the server while idle: it would never see the close again.
            guard channel.isActive else { throw HTTPClientError.remoteConnectionClosed }
            if reusing { IdleConnectionGuard.release(from: channel.pipeline.syncOperations) }
            let promise = channel.eventLoop.makePromise(of: HTTPResponseHead.self)
            let exchange = ProxiedExchange(request: request, stallTimeout: stall, source: source, head: promise, keepAlive: keepAlive)
            if !reusing { try channel.pipeline.syncOperations.addHTTPClientHandlers(leftOverBytesStrategy: .dropBytes) }
            try channel.pipeline.syncOperations.addHandler(exchange)
            TLSHandshakeWaiter.release(from: channel.pipeline.syncOperations)
            feeder.attach(NIOLoopBound(exchange, eventLoop: channel.eventLoop))
            let timeout = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(settings.headTimeout.seconds * 1e9))) {
                promise.fail(HTTPClientError.deadlineExceeded)
                channel.close(promise: nil)
            }
            promise.futureResult.whenComplete { _ in timeout.cancel() }
            return promise.futureResult
        }.get()
        let received: HTTPResponseHead
        do {
            received = try await responseHead.get()
        } catch let error as HTTPClientError where absoluteForm {
            // A request to the proxy itself (no tunnel): the proxy is who did not answer, whatever it waits for.
            switch error {
            case .deadlineExceeded:
                throw TransientFailure(reason: "the proxy \(proxy) did not answer in time (asked for \(hostHeader(url)))")
            case .remoteConnectionClosed:
                throw TransientFailure(reason: "the proxy \(proxy) closed the connection before answering (asked for \(hostHeader(url)))")
            default:
                throw error
            }
        }
        if absoluteForm, received.status.code == 407 {
            channel.close(promise: nil)
            throw proxyAuthentication(proxy, answer: "407 \(received.status.reasonPhrase)")
        }
        return StreamedResponse(status: received.status, headers: received.headers, body: ResponseBody(producer: made.sequence, readAhead: readAhead))
    }

    /// The whole URL without userinfo or fragment: an absolute-form request target (RFC 9112 §3.2.2).
    static func absoluteURI(_ url: URL) -> String {
        let plain = Credentials.strippingUserinfo(url)
        guard var components = URLComponents(url: plain, resolvingAgainstBaseURL: true) else { return plain.absoluteString }
        components.fragment = nil
        if components.percentEncodedPath.isEmpty { components.percentEncodedPath = "/" }
        return components.string ?? plain.absoluteString
    }

    /// The path and query: an origin-form request target.
    static func originForm(_ url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        let path = components?.percentEncodedPath ?? "/"
        let query = components?.percentEncodedQuery.map { "?" + $0 } ?? ""
        return (path.isEmpty ? "/" : path) + query
    }

    /// `host[:port]` as the `Host` header carries it (the port only when it is not the scheme's).
    static func hostHeader(_ url: URL) -> String {
        let host = url.host ?? ""
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let defaultPort = url.scheme?.lowercased() == "https" ? 443 : 80
        guard let port = url.port, port != defaultPort else { return bracketed }
        return "\(bracketed):\(port)"
    }
}

/// The TLS contexts of proxied connections, made once per trust (loading a trust store is not free) and kind of
/// server name check.
final class TLSContextCache: Sendable {
    private struct Key: Hashable {
        var trust: TLSTrust
        var addressCheckedHere: Bool
        /// ALPN offers `h2` too (else `http/1.1` only).
        var offeringHTTP2: Bool
    }

    private let contexts = NIOLockedValueBox<[Key: NIOSSLContext]>([:])

    func context(for trust: TLSTrust, addressCheckedHere: Bool, offeringHTTP2: Bool = false, _ configuration: () -> TLSConfiguration) throws -> NIOSSLContext {
        let key = Key(trust: trust, addressCheckedHere: addressCheckedHere, offeringHTTP2: offeringHTTP2)
        if let known = contexts.withLockedValue({ $0[key] }) { return known }
        let made = try NIOSSLContext(configuration: configuration())
        contexts.withLockedValue { $0[key] = made }
        return made
    }
}

extension ProxyEndpoint {
    /// `Basic …` for an HTTP proxy's user and password, if any.
    var basicAuthorization: String? { credentials?.authorization }

    /// The proxy's user and password, if any.
    var credentials: Credentials? { user.map { Credentials(user: $0, password: password ?? "") } }
}
