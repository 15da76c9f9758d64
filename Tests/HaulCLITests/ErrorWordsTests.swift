import HaulKit
import Testing
@testable import haul

/// The next step `haul` adds to a library error, by its reason: the one the case calls for, in the form of the
/// command that failed (`haul get` run again, or a daemon task resumed).
@Suite struct ErrorWordsTests {
    /// A file that appeared at the destination while downloading: move it away, then take the download up again. Never
    /// `--continue` (nothing of the other file is resumed) nor `--overwrite` (the other file is someone's).
    @Test func aFileThatAppearedIsMovedAwayThenTheDownloadTakenUpAgain() throws {
        let reason = FailureReason.appearedWhileDownloading(path: "/d/a.iso", partialPath: "/d/a.iso.haul-part")
        let again = try #require(HaulError.hint(for: reason))
        #expect(again == "move /d/a.iso away, then run the same command again to put the download in its place")
        let task = try #require(HaulError.hint(for: reason, again: .resumeTask("5f0c")))
        #expect(task == "move /d/a.iso away, then haul resume 5f0c to put the download in its place")
        for hint in [again, task] { #expect(!hint.contains("--continue") && !hint.contains("--overwrite"), "\(hint)") }
        // A file found there before the download began keeps its own advice.
        #expect(HaulError.hint(for: .destinationExists(path: "/d/a.iso"))?.contains("--continue") == true)
        // A link is never continued: its advice offers no --continue.
        #expect(HaulError.hint(for: .destinationNotAFile(path: "/d/link")).map { !$0.contains("--continue") && $0.contains("--overwrite") } == true)
    }

    /// A proxy that asks for a login is given one in its own form: a SOCKS5 user sees socks5://, not http:// first.
    @Test(arguments: [
        ("socks5://127.0.0.1:1080", "--proxy socks5://user:password@127.0.0.1:1080"),
        ("socks5h://proxy.example:1080", "--proxy socks5h://user:password@proxy.example:1080"),
        ("http://[::1]:3128", "--proxy http://user:password@[::1]:3128"),
    ])
    func aProxyThatAsksForALoginIsGivenOneInItsOwnForm(_ proxy: String, _ expected: String) throws {
        let hint = try #require(HaulError.hint(for: .proxyAuthenticationRequired(proxy: proxy)))
        #expect(hint.hasPrefix("give them in the proxy's URL: " + expected), "\(hint)")
        let other = proxy.hasPrefix("socks5") ? "http://" : "socks5://"
        #expect(!hint.contains(other), "\(hint)")
    }

    /// An answer that does not say which proxy (AsyncHTTPClient's own 407) shows both forms.
    @Test func aProxyNotNamedShowsBothForms() throws {
        let hint = try #require(HaulError.hint(for: .proxyAuthenticationRequired))
        #expect(hint.contains("http://user:password@host:port") && hint.contains("socks5://user:password@host:port"), "\(hint)")
    }

    /// A file given to `-C -` that is longer than the server's: remove it or choose another name; not `--overwrite`
    /// (the file is someone's), not `--continue` (it was given).
    @Test func aFileLongerThanTheServersIsRemovedOrAnotherNameChosen() throws {
        let hint = try #require(HaulError.hint(for: .longerThanServerFile(path: "/d/a", length: 300, serverLength: 200)))
        #expect(hint == "remove it, or choose another name with -o")
    }
}
