import Testing
@testable import HaulCore

/// What a URL list's `dir=` and `out=` may name: a file or folder inside the command's folder, nothing hidden, and
/// for `out=` a file (no `.`, empty part or trailing `/`).
@Suite struct ListedPathTests {
    @Test func aPlainFolderOrFileIsTaken() {
        for value in ["isos", "a/b", "a//b", "./a", "a/.", ".", "a b", "x.iso", "a..b"] {
            #expect(ListedPath.refusal(directory: value) == nil, "dir=\(value)")
        }
        for value in ["x.iso", "sub/x.iso", "a b/c d.bin", "x..y", "sub/x."] {
            #expect(ListedPath.refusal(output: value) == nil, "out=\(value)")
        }
    }

    @Test func leavingTheFolderIsRefused() {
        for value in ["/tmp", "..", "../x", "a/../../x", "a/.."] {
            #expect(ListedPath.refusal(directory: value)?.contains("dir=\(value) leaves the folder") == true, "dir=\(value)")
            #expect(ListedPath.refusal(output: value)?.contains("out=\(value) leaves the folder") == true, "out=\(value)")
        }
    }

    /// `out=.ssh/authorized_keys` and `dir=.config/autostart`, run from a home folder, would create what the
    /// shell or the desktop runs: a list names nothing hidden (a server's name loses its dot the same way).
    @Test func aHiddenFileOrFolderIsRefused() {
        #expect(ListedPath.refusal(directory: ".config/autostart")
            == "dir=.config/autostart names a hidden folder (.config), which a URL list may not: rename it in the list, or give the folder on the command line with --dir")
        #expect(ListedPath.refusal(directory: "a/.git")?.contains("hidden folder (.git)") == true)
        #expect(ListedPath.refusal(directory: "..a")?.contains("hidden folder (..a)") == true)
        #expect(ListedPath.refusal(output: ".ssh/authorized_keys")?.contains("out=.ssh/authorized_keys names a hidden folder (.ssh)") == true)
        #expect(ListedPath.refusal(output: ".bashrc")?.contains("out=.bashrc names a hidden file (.bashrc)") == true)
        #expect(ListedPath.refusal(output: "sub/.profile")?.contains("hidden file (.profile)") == true)
    }

    /// `out=.` saved the file as the --dir folder itself, `out=sub/.` as a file named `sub`.
    @Test func anOutThatNamesNoFileIsRefused() {
        #expect(ListedPath.refusal(output: ".") == "out=. names a folder, not a file in it; name the file: out=NAME")
        #expect(ListedPath.refusal(output: "sub/.") == "out=sub/. names a folder, not a file in it; name the file: out=sub/NAME")
        #expect(ListedPath.refusal(output: "sub/")?.hasPrefix("out=sub/ names a folder; save into it with dir=sub") == true)
        #expect(ListedPath.refusal(output: "a//b") == "out=a//b has an empty or \".\" part; write it as out=a/b")
        #expect(ListedPath.refusal(output: "./b") == "out=./b has an empty or \".\" part; write it as out=b")
        #expect(ListedPath.refusal(output: "a/./b")?.contains("write it as out=a/b") == true)
    }

    @Test func thePartsBelowAFolder() {
        #expect(ListedPath.parts(of: "/d", below: "/d") == [])
        #expect(ListedPath.parts(of: "/d/a/b", below: "/d") == ["a", "b"])
        #expect(ListedPath.parts(of: "/d//a/./b/", below: "/d/") == ["a", "b"])
        #expect(ListedPath.parts(of: "/", below: "/") == [])
        #expect(ListedPath.parts(of: "/a", below: "/") == ["a"])
        #expect(ListedPath.parts(of: "/dx/a", below: "/d") == nil)
        #expect(ListedPath.parts(of: "/e", below: "/d") == nil)
        #expect(ListedPath.parts(of: "/d/../e", below: "/d") == nil)
        #expect(ListedPath.parts(of: "d/a", below: "/d") == nil)
        #expect(ListedPath.parts(of: "a/b", below: ".") == ["a", "b"])
    }
}
