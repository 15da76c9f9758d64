import Testing
@testable import HaulCore

/// Who else could change the bytes of a file Haul would continue and publish: every combination of type, owner,
/// group, mode and link count, against the rule written out once more in the test.
@Suite struct FileExposureTests {
    static let user: UInt32 = 1_000, group: UInt32 = 1_000

    @Test func onlyARegularFileOfThisUserAloneThatOthersCannotWriteIsUnexposed() {
        var checked = 0
        for isRegular in [true, false] {
            for owner in [Self.user, 0, 1_001] {
                for fileGroup in [Self.group, 0, 2_000] {
                    for links in [1, 2, 7] as [UInt64] {
                        // Every permission of the owner, group and others, and a few with setuid, setgid or sticky.
                        for permissions in (0...0o777).map(UInt32.init) + [0o4755, 0o2775, 0o1777, 0o6666] {
                            let facts = FileFacts(isRegular: isRegular, owner: owner, group: fileGroup, permissions: permissions, linkCount: links)
                            let found = FileExposure.of(facts, user: Self.user, group: Self.group)
                            let othersWrite = permissions & 0o002 != 0 || (permissions & 0o020 != 0 && fileGroup != Self.group)
                            let safe = isRegular && owner == Self.user && links == 1 && !othersWrite
                            #expect((found == nil) == safe, "\(isRegular) \(owner) \(fileGroup) \(links) \(String(permissions, radix: 8)): \(String(describing: found))")
                            checked += 1
                        }
                    }
                }
            }
        }
        #expect(checked > 10_000)
    }

    static func of(regular: Bool = true, owner: UInt32 = user, group fileGroup: UInt32 = group, mode: UInt32 = 0o644, links: UInt64 = 1) -> FileExposure? {
        FileExposure.of(FileFacts(isRegular: regular, owner: owner, group: fileGroup, permissions: mode, linkCount: links), user: user, group: group)
    }

    @Test func theFirstReasonIsNamed() {
        #expect(Self.of(regular: false, owner: 5, links: 3) == .notRegular)
        #expect(Self.of(owner: 5, mode: 0o666, links: 3) == .ownedByAnotherUser(uid: 5))
        #expect(Self.of(mode: 0o666, links: 3) == .hardLinked(links: 3))
        #expect(Self.of(mode: 0o666) == .writableByEveryone)
        #expect(Self.of(group: 27, mode: 0o664) == .writableByGroup(gid: 27))
        // A umask of 002 makes every file of the user group-writable, by the user's own group: not exposed.
        #expect(Self.of(mode: 0o664) == nil)
        #expect(Self.of(group: 27, mode: 0o644) == nil)
        #expect(Self.of(mode: 0o600) == nil)
        // Root's files are root's: a process of root owns them like any user its own.
        #expect(FileExposure.of(FileFacts(isRegular: true, owner: 0, group: 0, permissions: 0o644, linkCount: 1), user: 0, group: 0) == nil)
    }

    @Test func eachRefusalIsOneLineNamingThePathWhyAndWhatToDo() {
        let cases: [(FileExposure, [String])] = [
            (.notRegular, ["not a regular file"]),
            (.ownedByAnotherUser(uid: 1_234), ["another user", "uid 1234", "copy it"]),
            (.hardLinked(links: 2), ["1 other name ", "hard links", "copy it", "remove it to start over"]),
            (.hardLinked(links: 4), ["3 other names", "hard links"]),
            (.writableByEveryone, ["every user", "copy it"]),
            (.writableByGroup(gid: 27), ["group 27", "copy it"]),
        ]
        for (exposure, words) in cases {
            let line = exposure.refusal("/shared/f.iso")
            #expect(line.hasPrefix("/shared/f.iso ") && !line.contains("\n"), "\(line)")
            for word in words { #expect(line.contains(word), "\(exposure): \(line)") }
        }
    }
}
