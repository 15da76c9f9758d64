import Testing
@testable import HaulKit

// Mutating calls are made before `#expect` (the macro takes its operands as constants).
@Suite struct WebLoginsTests {
    let start = ContinuousClock.now

    @Test func aTokenLogsInOnce() {
        var logins = WebLogins()
        logins.mint(token: "t1", at: start)
        #expect(logins.outstandingTokens(at: start) == 1)
        let first = logins.spend(token: "t1", at: start + .seconds(1))
        let again = logins.spend(token: "t1", at: start + .seconds(2))
        let never = logins.spend(token: "t2", at: start)
        #expect(first)
        #expect(!again, "spent")
        #expect(!never, "never minted")
        #expect(logins.outstandingTokens(at: start) == 0)
    }

    @Test func aTokenExpiresAfterFiveMinutesAndIsThenGone() {
        var logins = WebLogins()
        logins.mint(token: "late", at: start)
        logins.mint(token: "edge", at: start)
        let late = logins.spend(token: "late", at: start + .seconds(300))
        let edge = logins.spend(token: "edge", at: start + .seconds(299))
        let lateAgain = logins.spend(token: "late", at: start + .seconds(1))
        #expect(!late)
        #expect(edge)
        #expect(!lateAgain, "an expired token tried once is gone")
    }

    @Test func outstandingTokensAreBounded() {
        var logins = WebLogins()
        for index in 0..<100 { logins.mint(token: "t\(index)", at: start + .milliseconds(index)) }
        #expect(logins.outstandingTokens(at: start + .seconds(1)) == WebLogins.maxTokens)
        let oldest = logins.spend(token: "t0", at: start + .seconds(1))
        let newest = logins.spend(token: "t99", at: start + .seconds(1))
        #expect(!oldest, "the oldest made room")
        #expect(newest)
    }

    @Test func sessionsCarryTheirCSRFTokenAndExpireWhenUnused() {
        var logins = WebLogins()
        logins.open(session: "cookie", csrf: "csrf", key: "key", at: start)
        let known = logins.session("cookie", key: "key", at: start)
        let other = logins.session("other", key: "key", at: start)
        let none = logins.session(nil, key: "key", at: start)
        let empty = logins.session("", key: "key", at: start)
        #expect(known?.csrf == "csrf" && known?.key == "key")
        #expect(other == nil && none == nil && empty == nil)
        let right = logins.checkCSRF("csrf", session: "cookie", key: "key", at: start + .seconds(10))
        let wrong = logins.checkCSRF("wrong", session: "cookie", key: "key", at: start)
        let missing = logins.checkCSRF(nil, session: "cookie", key: "key", at: start)
        let elsewhere = logins.checkCSRF("csrf", session: "other", key: "key", at: start)
        let keyless = logins.checkCSRF("csrf", session: "cookie", key: nil, at: start)
        #expect(right)
        #expect(!wrong && !missing && !elsewhere && !keyless)
        // Used, so it lives on a week after its last use.
        let used = start + WebLogins.sessionLifetime - .seconds(1)
        let stillThere = logins.session("cookie", key: "key", at: used)
        let later = logins.session("cookie", key: "key", at: used + WebLogins.sessionLifetime - .seconds(1))
        let expired = logins.session("cookie", key: "key", at: used + WebLogins.sessionLifetime * 3)
        let forgotten = logins.session("cookie", key: "key", at: start)
        #expect(stillThere != nil && later != nil)
        #expect(expired == nil)
        #expect(forgotten == nil, "an expired session is forgotten")
    }

    /// A cookie travels to every port of its host; the key stays with the page's origin. Without the right key, of any
    /// length, a cookie opens nothing, and its tries do not keep the session alive.
    @Test func aCookieWithoutItsKeyOpensNothingAndDoesNotKeepTheSessionAlive() {
        var logins = WebLogins()
        let key = String(repeating: "ab", count: 32)
        logins.open(session: "cookie", csrf: "csrf", key: key, at: start)
        var sameLength = Array(key.utf8)
        sameLength[sameLength.count - 1] ^= 1
        for wrong in [nil, "", String(key.dropLast()), key + "0", String(decoding: sameLength, as: UTF8.self), key.uppercased()] as [String?] {
            let session = logins.session("cookie", key: wrong, at: start + .seconds(1))
            #expect(session == nil, "\(wrong ?? "no key")")
        }
        // Tried with wrong keys all week long, it still expires a week after its last real use.
        let lateTry = logins.session("cookie", key: nil, at: start + WebLogins.sessionLifetime - .seconds(1))
        let afterWeek = logins.session("cookie", key: key, at: start + WebLogins.sessionLifetime)
        #expect(lateTry == nil && afterWeek == nil)
    }

    @Test func sessionsAreBounded() {
        var logins = WebLogins()
        for index in 0..<(WebLogins.maxSessions + 10) { logins.open(session: "s\(index)", csrf: "c", key: "k", at: start + .milliseconds(index)) }
        let now = start + .seconds(5)
        #expect(logins.openSessions(at: now) == WebLogins.maxSessions)
        let oldest = logins.session("s0", key: "k", at: now)
        let newest = logins.session("s\(WebLogins.maxSessions + 9)", key: "k", at: now)
        #expect(oldest == nil)
        #expect(newest != nil)
    }
}
