import AsyncHTTPClient
import Foundation
import HaulCore
import NIOCore
import NIOHTTP1

extension ProxyTransport {
    /// A request that may be an HTTP/2 stream, to an `https` server through a tunnel (`CONNECT` or SOCKS5): a stream
    /// of a pooled connection for the same ``TunnelPool/Key``, else a new tunnel offering `h2` and `http/1.1` by
    /// ALPN. A server that chooses `h2` makes the tunnel a pooled connection; one that chooses HTTP/1.1 gets the
    /// request on it as before, and the connection closes after the response.
    static func multiplexedStream(
        _ url: URL, headers: HTTPHeaders, route: ProxyRoute, key: TunnelPool.Key, pool: TunnelPool, settings: Settings
    ) async throws -> StreamedResponse {
        let request = http2Request(url, headers: headers)
        var retries = 0
        while true {
            switch try await pool.acquire(key) {
            case .stream(let connection):
                do {
                    return try await send(request, on: connection, key: key, pool: pool, settings: settings)
                } catch where retries < maxStreamRetries && connection.isGoingAway && !Task.isCancelled {
                    // The connection went away (GOAWAY past this stream, the server's idle timeout) before the answer
                    // began: again, on another connection. A GET is safe to repeat, and a refused stream was never
                    // processed (RFC 9113 §8.7).
                    retries += 1
                }
            case .establish(let shared):
                return try await establish(url, headers: headers, request: request, route: route, key: key, shared: shared, pool: pool, settings: settings)
            }
        }
    }

    /// How often a request is sent again on another connection when its connection goes away before the answer: a
    /// server that ends each connection after a few requests (nginx's `keepalive_requests`) refuses the streams past
    /// them, and each new connection serves a few more.
    static let maxStreamRetries = 3

    /// Opens a tunnel for `key` offering HTTP/2, and sends the request on it.
    private static func establish(
        _ url: URL, headers: HTTPHeaders, request: HTTPRequestHead, route: ProxyRoute, key: TunnelPool.Key, shared: Bool, pool: TunnelPool,
        settings: Settings
    ) async throws -> StreamedResponse {
        // A server known to choose HTTP/1.1: an idle tunnel to it carries the request, if one is open.
        if !shared, let response = try await overIdleTunnel(url, headers: headers, key: key, pool: pool, settings: settings) { return response }
        let channel: any Channel
        do {
            channel = try await connect(to: key.proxy, family: settings.family, timeout: settings.connectTimeout)
        } catch {
            pool.establishmentEnded(key, shared: shared, serverChoseHTTP1: false)
            throw error
        }
        let chosen: String?
        let connection: TunnelledHTTP2Connection?
        do {
            // Cancelled (Ctrl-C, a paused task) during the handshake or TLS: closing the connection ends the wait at once.
            (chosen, connection) = try await withTaskCancellationHandler {
                let chosen = try await openTunnel(
                    over: channel, target: key.host, https: true, port: key.port, route: route, proxy: key.proxy, settings: settings,
                    offeringHTTP2: true)
                guard chosen == "h2" else { return (chosen, nil) }
                let connection = try await TunnelledHTTP2Connection.start(
                    on: channel, timeout: .nanoseconds(Int64(settings.headTimeout.seconds * 1e9))
                ) { connection in pool.changed(key, connection) }
                return (chosen, connection)
            } onCancel: {
                channel.close(promise: nil)
            }
        } catch {
            channel.close(promise: nil)
            pool.establishmentEnded(key, shared: shared, serverChoseHTTP1: false)
            throw error
        }
        if let connection {
            pool.established(key, connection)
            return try await send(request, on: connection, key: key, pool: pool, settings: settings)
        }
        // The server chose HTTP/1.1 (or offered no ALPN): this request goes on the tunnel as before.
        pool.establishmentEnded(key, shared: shared, serverChoseHTTP1: chosen != "h2")
        return try await withTaskCancellationHandler {
            do {
                return try await exchange(
                    url, headers: headers, absoluteForm: false, proxy: key.proxy, on: channel, settings: settings) { pool.park(key, $0) }
            } catch {
                channel.close(promise: nil)
                throw error
            }
        } onCancel: {
            channel.close(promise: nil)
        }
    }

    /// The request on an idle HTTP/1.1 tunnel of `key`, if one is open and answers; `nil`: open a new tunnel. A
    /// tunnel the server closed while it was idle fails before the answer begins: the request then goes on another
    /// (a GET is safe to repeat).
    static func overIdleTunnel(
        _ url: URL, headers: HTTPHeaders, key: TunnelPool.Key, pool: TunnelPool, settings: Settings
    ) async throws -> StreamedResponse? {
        while let channel = pool.takeIdle(key) {
            do {
                return try await withTaskCancellationHandler {
                    try await exchange(
                        url, headers: headers, absoluteForm: false, proxy: key.proxy, on: channel, settings: settings, reusing: true
                    ) { pool.park(key, $0) }
                } onCancel: {
                    channel.close(promise: nil)
                }
            } catch {
                channel.close(promise: nil)
                if Task.isCancelled { throw error }
            }
        }
        return nil
    }

    /// Sends `request` as a stream of `connection` (whose slot in `pool` is held, and freed when the stream ends).
    private static func send(
        _ request: HTTPRequestHead, on connection: TunnelledHTTP2Connection, key: TunnelPool.Key, pool: TunnelPool, settings: Settings
    ) async throws -> StreamedResponse {
        try await connection.send(
            request, stallTimeout: .nanoseconds(Int64(settings.stallTimeout.seconds * 1e9)),
            headTimeout: .nanoseconds(Int64(settings.headTimeout.seconds * 1e9)), readAhead: settings.readAhead
        ) { pool.streamEnded(key, on: connection) }
    }

    /// The request head of a stream: origin form, `Host` (which becomes `:authority`), the request's headers. No
    /// `Connection` header (HTTP/2 has none), and no proxy credentials: inside the tunnel only the server listens.
    static func http2Request(_ url: URL, headers: HTTPHeaders) -> HTTPRequestHead {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: originForm(url))
        if !headers.contains(name: "host") { head.headers.add(name: "Host", value: hostHeader(url)) }
        head.headers.add(contentsOf: headers)
        return head
    }
}
