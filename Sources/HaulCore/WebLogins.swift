/// The dashboard's logins: one-time login tokens (from `haul web`) and the browser sessions they open, each with
/// its CSRF token and its page key. Pure: the shell draws the random values and passes the time in.
///
/// A session is named by its cookie, but a cookie alone never opens it: browsers send a host's cookies to every
/// port of that host, so the cookie of `127.0.0.1:7711` also reaches a server another user runs on
/// `127.0.0.1:8000`. Every request must also carry the session's *key*, which the page keeps in its origin's
/// storage (scheme, host **and port**) and sends in a header; ``session(_:key:at:)`` asks for both.
///
/// A token is spent by its first use and expires after ``tokenLifetime``. A session expires after
/// ``sessionLifetime`` without a request. Both tables are bounded: the oldest entries make room.
package struct WebLogins: Sendable {
    public static let tokenLifetime: Duration = .seconds(300)
    public static let sessionLifetime: Duration = .seconds(7 * 24 * 3_600)
    public static let maxTokens = 32
    public static let maxSessions = 256

    /// A browser session: its CSRF token, its page key and when it was last used.
    public struct Session: Sendable, Equatable {
        public let csrf: String
        /// The secret the page holds in its origin's storage and sends with every request (`X-Haul-Key`).
        public let key: String
        public var lastUsed: ContinuousClock.Instant
    }

    private var tokens: [String: ContinuousClock.Instant] = [:]
    private var sessions: [String: Session] = [:]

    public init() {}

    /// Login tokens not yet spent nor expired at `now`.
    public func outstandingTokens(at now: ContinuousClock.Instant) -> Int {
        tokens.values.filter { now - $0 < Self.tokenLifetime }.count
    }

    /// Open sessions not expired at `now`.
    public func openSessions(at now: ContinuousClock.Instant) -> Int {
        sessions.values.filter { now - $0.lastUsed < Self.sessionLifetime }.count
    }

    /// Records a freshly drawn login token, minted at `now`.
    public mutating func mint(token: String, at now: ContinuousClock.Instant) {
        tokens = tokens.filter { now - $0.value < Self.tokenLifetime }
        while tokens.count >= Self.maxTokens, let oldest = tokens.min(by: { $0.value < $1.value }) {
            tokens[oldest.key] = nil
        }
        tokens[token] = now
    }

    /// Spends `token`: true once, for a token minted less than ``tokenLifetime`` before `now`; false for an
    /// unknown, spent or expired one. Either way the token cannot be used again.
    public mutating func spend(token: String, at now: ContinuousClock.Instant) -> Bool {
        guard let entry = tokens.first(where: { WebAccess.constantTimeEquals($0.key, token) }) else { return false }
        tokens[entry.key] = nil
        return now - entry.value < Self.tokenLifetime && now >= entry.value
    }

    /// Opens a session (after a spent token): `id` is the cookie's value, `csrf` its CSRF token, `key` the secret
    /// the page is handed once (in the login redirect's fragment) and sends with every request.
    public mutating func open(session id: String, csrf: String, key: String, at now: ContinuousClock.Instant) {
        sessions = sessions.filter { now - $0.value.lastUsed < Self.sessionLifetime }
        while sessions.count >= Self.maxSessions, let oldest = sessions.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
            sessions[oldest.key] = nil
        }
        sessions[id] = Session(csrf: csrf, key: key, lastUsed: now)
    }

    /// The session named by a cookie value whose key is `key` (compared in constant time), marked as used at `now`;
    /// nil when unknown, expired, or without its key (a cookie alone, or with a wrong key, is not marked as used).
    public mutating func session(_ id: String?, key: String?, at now: ContinuousClock.Instant) -> Session? {
        guard let id, !id.isEmpty, let session = sessions[id] else { return nil }
        guard now - session.lastUsed < Self.sessionLifetime else {
            sessions[id] = nil
            return nil
        }
        guard let key, WebAccess.constantTimeEquals(session.key, key) else { return nil }
        sessions[id]?.lastUsed = max(now, session.lastUsed)
        return sessions[id]
    }

    /// Whether `csrf` is the CSRF token of session `id` (which must be open at `now`, with its `key`).
    public mutating func checkCSRF(_ csrf: String?, session id: String?, key: String?, at now: ContinuousClock.Instant) -> Bool {
        guard let csrf, let session = session(id, key: key, at: now) else { return false }
        return WebAccess.constantTimeEquals(session.csrf, csrf)
    }
}
