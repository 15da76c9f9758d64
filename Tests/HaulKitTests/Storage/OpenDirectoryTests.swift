import Foundation
import Testing
@testable import HaulCore
@testable import HaulKit

/// A download's folder, opened once by descriptor: which links it follows, what it refuses, and how its files are
/// created, replaced and published.
@Suite struct OpenDirectoryTests {
    /// Someone who is not this process's user: `nobody`.
    static let otherUser: uid_t = 65534
    static let isRoot = getuid() == 0

    private func withFolder(_ body: (String) throws -> Void) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("haul-folder-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try body(root)
    }

    private func link(_ path: String, to target: String, owner: uid_t? = nil) throws {
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        if let owner { #expect(lchown(path, owner, gid_t(owner)) == 0) }
    }

    private func mkdir(_ path: String, mode: mode_t = 0o755, owner: uid_t? = nil) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        #expect(chmod(path, mode) == 0)
        if let owner { #expect(chown(path, owner, gid_t(owner)) == 0) }
    }

    @Test func missingFoldersAreCreatedAndAFileInThePathIsRefused() throws {
        try withFolder { root in
            let folder = try OpenDirectory.open(root + "/a/b/c", create: true)
            #expect(folder.path == root + "/a/b/c")
            var info = stat()
            #expect(stat(root + "/a/b/c", &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR)
            FileManager.default.createFile(atPath: root + "/file", contents: Data())
            #expect(throws: HaulError.self) { _ = try OpenDirectory.open(root + "/file/x", create: true) }
            #expect(throws: HaulError.self) { _ = try OpenDirectory.open(root + "/missing", create: false) }
        }
    }

    @Test func aLinkOfThisUserInItsOwnFolderIsFollowedAndALoopIsNot() throws {
        try withFolder { root in
            try mkdir(root + "/real")
            try link(root + "/alias", to: "real")
            try link(root + "/absolute", to: root + "/real")
            for path in [root + "/alias", root + "/absolute", root + "/alias/../real"] {
                let folder = try OpenDirectory.open(path, create: false)
                let file = try folder.createFresh("x")
                file.close()
                #expect(FileManager.default.fileExists(atPath: root + "/real/x"), "\(path)")
                try FileManager.default.removeItem(atPath: root + "/real/x")
            }
            try link(root + "/loop1", to: "loop2")
            try link(root + "/loop2", to: "loop1")
            #expect(throws: HaulError.self) { _ = try OpenDirectory.open(root + "/loop1", create: false) }
        }
    }

    @Test(.enabled(if: OpenDirectoryTests.isRoot, "changing a file's owner needs root"))
    func aLinkAnotherUserCouldHavePlantedIsNeverFollowed() throws {
        try withFolder { root in
            try mkdir(root + "/target")
            // A folder of another user: any link in it is theirs to change.
            try mkdir(root + "/theirs", owner: Self.otherUser)
            try link(root + "/theirs/dl", to: root + "/target")
            // A link of another user in a folder of this one.
            try link(root + "/planted", to: root + "/target", owner: Self.otherUser)
            // A folder anyone may write, without the sticky bit.
            try mkdir(root + "/open", mode: 0o777)
            try link(root + "/open/dl", to: root + "/target")
            for path in [root + "/theirs/dl", root + "/planted", root + "/open/dl", root + "/theirs/dl/deeper"] {
                do throws(HaulError) {
                    _ = try OpenDirectory.open(path, create: true)
                    Issue.record("\(path) was followed")
                } catch {
                    guard case .untrustedFolder = error.reason.which else { Issue.record("\(path): \(error)"); continue }
                    #expect(error.message.contains("symbolic link"), "\(error.message)")
                }
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/target").isEmpty)
        }
    }

    @Test(.enabled(if: OpenDirectoryTests.isRoot, "changing a file's owner needs root"))
    func inAStickyFolderOnlyTheLinksOwnerIsTrusted() throws {
        try withFolder { root in
            try mkdir(root + "/target")
            try mkdir(root + "/tmp", mode: 0o1777)
            try link(root + "/tmp/mine", to: root + "/target")
            try link(root + "/tmp/theirs", to: root + "/target", owner: Self.otherUser)
            _ = try OpenDirectory.open(root + "/tmp/mine", create: false)
            #expect(throws: HaulError.self) { _ = try OpenDirectory.open(root + "/tmp/theirs", create: false) }
        }
    }

    @Test func freshFilesReplaceWhateverIsAtTheirNameWithoutOpeningIt() throws {
        try withFolder { root in
            let folder = try OpenDirectory.open(root, create: false)
            FileManager.default.createFile(atPath: root + "/canary", contents: Data("canary".utf8))
            try link(root + "/a", to: root + "/canary")
            try FileManager.default.linkItem(atPath: root + "/canary", toPath: root + "/b")
            #expect(mkfifo(root + "/c", 0o600) == 0)
            FileManager.default.createFile(atPath: root + "/d", contents: Data(repeating: 7, count: 1000))
            for name in ["a", "b", "c", "d"] {
                let file = try folder.createFresh(name)
                try file.write(Array("new".utf8), at: 0)
                #expect(try file.size() == 3, "\(name)")
                file.close()
            }
            #expect(FileManager.default.contents(atPath: root + "/canary") == Data("canary".utf8))
            // Opening (not creating) refuses what is not a regular file, a FIFO included, without blocking on it.
            #expect(mkfifo(root + "/fifo", 0o600) == 0)
            #expect(throws: HaulError.self) { _ = try folder.openFile("fifo") }
            try link(root + "/l", to: root + "/canary")
            #expect(throws: HaulError.self) { _ = try folder.openFile("l") }
        }
    }

    @Test func renamingWithoutReplacingNeverReplaces() throws {
        try withFolder { root in
            let folder = try OpenDirectory.open(root, create: false)
            FileManager.default.createFile(atPath: root + "/from", contents: Data("from".utf8))
            FileManager.default.createFile(atPath: root + "/to", contents: Data("to".utf8))
            #expect(try folder.rename("from", to: "to", replacing: false) == .destinationExists)
            #expect(FileManager.default.contents(atPath: root + "/to") == Data("to".utf8))
            #expect(try folder.rename("from", to: "free", replacing: false) == .moved)
            #expect(FileManager.default.contents(atPath: root + "/free") == Data("from".utf8))
            #expect(!FileManager.default.fileExists(atPath: root + "/from"))
            #expect(try folder.rename("free", to: "to", replacing: true) == .moved)
            #expect(FileManager.default.contents(atPath: root + "/to") == Data("from".utf8))
        }
    }

    /// A name another program moved away is said to be gone, whether or not the move may replace: the publish tells
    /// it from a failure of the disk.
    @Test func renamingANameThatIsGoneSaysSo() throws {
        try withFolder { root in
            let folder = try OpenDirectory.open(root, create: false)
            FileManager.default.createFile(atPath: root + "/to", contents: Data("to".utf8))
            #expect(try folder.rename("gone", to: "to", replacing: false) == .sourceGone)
            #expect(try folder.rename("gone", to: "to", replacing: true) == .sourceGone)
            #expect(try folder.rename("gone", to: "free", replacing: false) == .sourceGone)
            #expect(FileManager.default.contents(atPath: root + "/to") == Data("to".utf8))
            #expect(!FileManager.default.fileExists(atPath: root + "/free"))
        }
    }

    /// Below a confining folder (a URL list's dir= and out=) no link is followed, the user's own included: the
    /// folder itself is opened as any, missing folders below it are created, and a link below it is refused by name.
    @Test func belowAConfiningFolderNoLinkIsFollowed() throws {
        try withFolder { root in
            try mkdir(root + "/real")
            try mkdir(root + "/outside")
            try link(root + "/dl", to: "real")
            try link(root + "/real/link", to: root + "/outside")
            // The confining folder is the user's: reached through their own link, as any destination.
            let top = try OpenDirectory.open(root + "/dl", create: false, below: root + "/dl")
            top.close()
            let made = try OpenDirectory.open(root + "/dl/a/b", create: true, below: root + "/dl")
            #expect(made.path == root + "/dl/a/b")
            made.close()
            var info = stat()
            #expect(lstat(root + "/real/a/b", &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR)
            for path in [root + "/dl/link", root + "/dl/link/deeper"] {
                do throws(HaulError) {
                    _ = try OpenDirectory.open(path, create: true, below: root + "/dl")
                    Issue.record("\(path) was opened through the link")
                } catch {
                    #expect(error.reason == .listedThroughLink(path: root + "/dl/link"), "\(error)")
                    #expect(error.message == "\(root)/dl/link is a symbolic link, and a URL list's dir= and out= do not go through links")
                }
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/outside").isEmpty, "nothing made through the link")
            // Looking without creating: nothing there yet is no error, a link still is.
            #expect(try OpenDirectory.openIfPresent(root + "/dl/none/x", create: false, below: root + "/dl") == nil)
            #expect(!FileManager.default.fileExists(atPath: root + "/real/none"))
            #expect(throws: HaulError.self) { _ = try OpenDirectory.openIfPresent(root + "/dl/link/x", create: false, below: root + "/dl") }
            // A path that is not below the folder is refused, whatever is there.
            #expect(throws: HaulError.self) { _ = try OpenDirectory.open(root + "/outside", create: false, below: root + "/dl") }
            // A file on the way is not a folder.
            FileManager.default.createFile(atPath: root + "/real/file", contents: Data())
            #expect(throws: HaulError.self) { _ = try OpenDirectory.open(root + "/dl/file/x", create: true, below: root + "/dl") }
        }
    }

    /// One folder path opened confined and not is two folders to the downloads sharing them: a download without
    /// confinement may go through the user's link, and its folder must never serve a confined one.
    @Test func heldFoldersKeepConfinedAndFreeOpeningsApart() throws {
        try withFolder { root in
            try mkdir(root + "/dl")
            try mkdir(root + "/outside")
            try link(root + "/dl/link", to: root + "/outside")
            let folders = HeldFolders()
            let free = try folders.acquire(root + "/dl/link", create: false)
            #expect(throws: HaulError.self) { _ = try folders.acquire(root + "/dl/link", create: false, below: root + "/dl") }
            folders.release(free, as: root + "/dl/link")
            let confined = try folders.acquire(root + "/dl/sub", create: true, below: root + "/dl")
            let again = try folders.acquire(root + "/dl/sub", create: true, below: root + "/dl")
            #expect(confined === again)
            folders.release(again, as: root + "/dl/sub", below: root + "/dl")
            folders.release(confined, as: root + "/dl/sub", below: root + "/dl")
        }
    }
}
