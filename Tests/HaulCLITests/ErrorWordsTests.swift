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
    }
}
