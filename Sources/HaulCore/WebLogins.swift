/// The dashboard's logins: one-time login tokens (from `haul web`) and the browser sessions they open, each with
/// its CSRF token. Pure: the shell draws the random values and passes the time in.
///
/// A token is spent by its first use and expires after ``tokenLifetime``. A session expires after
/// ``sessionLifetime`` without a request. Both tables are bounded: the oldest entries make room.
package struct WebLogins: Sendable {
    public static let tokenLifetime: Duration = .seconds(300)
    public static let sessionLifetime: Duration = .seconds(7 * 24 * 3_600)
    public static let maxTokens = 32
    public static let maxSessions = 256

    /// A browser session: its CSRF token and when it was last used.
    public struct Session: Sendable, Equatable {
        public let csrf: String
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

    /// Opens a session (after a spent token): `id` is the cookie's value, `csrf` its CSRF token.
    public mutating func open(session id: String, csrf: String, at now: ContinuousClock.Instant) {
        sessions = sessions.filter { now - $0.value.lastUsed < Self.sessionLifetime }
        while sessions.count >= Self.maxSessions, let oldest = sessions.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
            sessions[oldest.key] = nil
        }
        sessions[id] = Session(csrf: csrf, lastUsed: now)
    }

    /// The session named by a cookie value, marked as used at `now`; nil when unknown or expired.
    public mutating func session(_ id: String?, at now: ContinuousClock.Instant) -> Session? {
        guard let id, !id.isEmpty, let session = sessions[id] else { return nil }
        guard now - session.lastUsed < Self.sessionLifetime else {
            sessions[id] = nil
            return nil
        }
        sessions[id]?.lastUsed = max(now, session.lastUsed)
        return sessions[id]
    }

    /// Whether `csrf` is the CSRF token of session `id` (which must be open at `now`).
    public mutating func checkCSRF(_ csrf: String?, session id: String?, at now: ContinuousClock.Instant) -> Bool {
        guard let csrf, let session = session(id, at: now) else { return false }
        return WebAccess.constantTimeEquals(session.csrf, csrf)
    }
}
