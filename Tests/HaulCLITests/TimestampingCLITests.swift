import Foundation
import HaulTestSupport
import Testing

/// wget's `-N` against a real server (nginx answers `If-Modified-Since` with 304): an unchanged file is left as it
/// is, a newer one on the server replaces it once complete.
@Suite(.enabled(if: ExternalTools.nginxTestsEnabled, "needs nginx (apt-get install nginx-light; scripts/test installs it)"))
struct TimestampingCLITests {
    @Test func dashNFetchesOnlyWhatIsNewerOnTheServer() async throws {
        try await withNginx { nginx in
            let first = TestData.bytes(600_000, seed: 260), second = TestData.bytes(500_000, seed: 261)
            try nginx.put("data/f.bin", first)
            let served = nginx.documentRoot + "/data/f.bin"
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_700_000_000)], ofItemAtPath: served)
            try await Sandbox.with { box in
                let fetched = try await box.run(["get", nginx.url("/data/f.bin"), "-N"])
                #expect(fetched.exitCode == 0, "\(fetched.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: first) == nil, "-N saves under the URL's name")
                let time = try FileManager.default.attributesOfItem(atPath: box.path("f.bin"))[.modificationDate] as? Date
                #expect(time == Date(timeIntervalSince1970: 1_700_000_000), "the server's time is kept: -N compares it next time")

                let unchanged = try await box.run(["get", nginx.url("/data/f.bin"), "-N"])
                #expect(unchanged.exitCode == 0, "\(unchanged.stderr)")
                #expect(unchanged.stderr.contains("is up to date"), "\(unchanged.stderr)")
                #expect(nginx.accessLog().last?.hasPrefix("GET /data/f.bin 304") == true, "\(nginx.accessLog())")
                #expect(contentMismatch(box.path("f.bin"), expected: first) == nil)

                try writeBytes(second, to: served)
                try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_700_100_000)], ofItemAtPath: served)
                let newer = try await box.run(["get", nginx.url("/data/f.bin"), "-N"])
                #expect(newer.exitCode == 0, "\(newer.stderr)")
                #expect(contentMismatch(box.path("f.bin"), expected: second) == nil, "the newer file replaces the old one")
                #expect(!fileExists(box.path("f.bin (1)")))

                // A local copy newer than the server's and of its size is kept, under -o as well (nginx answers 200
                // there: its If-Modified-Since is an exact match; the answer's Last-Modified and length decide, as
                // wget's do); one of another size is fetched again.
                let mine = TestData.bytes(second.count, seed: 262)
                try writeBytes(mine, to: box.path("mine.bin"))
                let kept = try await box.run(["get", nginx.url("/data/f.bin"), "-o", "mine.bin", "--timestamping"])
                #expect(kept.exitCode == 0 && kept.stderr.contains("is up to date"), "\(kept.stderr)")
                #expect(contentMismatch(box.path("mine.bin"), expected: mine) == nil)
                try writeBytes(first, to: box.path("other.bin"))
                let resized = try await box.run(["get", nginx.url("/data/f.bin"), "-o", "other.bin", "-N"])
                #expect(resized.exitCode == 0, "\(resized.stderr)")
                #expect(contentMismatch(box.path("other.bin"), expected: second) == nil)
                let conflicting = try await box.run(["get", nginx.url("/data/f.bin"), "-N", "--overwrite"])
                #expect(conflicting.exitCode == 2, "\(conflicting.stderr)")
            }
        }
    }

    /// What is at a `-N` destination and is not a file (a link to a newer or an older file, a dangling link, a
    /// folder) has no date of its own: it is left as it is and the download refused, as without `-N`, never replaced
    /// without `--overwrite` (the probe found a user's link replaced by the download) nor written through.
    enum NotAFile: String, CaseIterable, Sendable { case linkToNewer, linkToOlder, danglingLink, folder }

    @Test(arguments: NotAFile.allCases)
    func dashNLeavesWhatIsNotAFileAsItIs(_ found: NotAFile) async throws {
        try await withNginx { nginx in
            let served = TestData.bytes(4_000, seed: 263)
            try nginx.put("data/g.bin", served)
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_700_000_000)], ofItemAtPath: nginx.documentRoot + "/data/g.bin")
            try await Sandbox.with { box in
                let mine = TestData.bytes(4_000, seed: 264), target = box.path("notes.bin"), destination = box.path("g.bin")
                try writeBytes(mine, to: target)
                let time = found == .linkToOlder ? 1_600_000_000 : 1_800_000_000
                try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: TimeInterval(time))], ofItemAtPath: target)
                switch found {
                case .linkToNewer, .linkToOlder: try FileManager.default.createSymbolicLink(atPath: destination, withDestinationPath: "notes.bin")
                case .danglingLink: try FileManager.default.createSymbolicLink(atPath: destination, withDestinationPath: "missing.bin")
                case .folder: try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: false)
                }
                // With -N, without a flag and with -c alike: refused in one line, whose advice never offers
                // --continue for what Haul never continues.
                for flags in [["-N"], [], ["-c"]] {
                    let result = try await box.run(["get", nginx.url("/data/g.bin"), "-o", destination] + flags)
                    // -c opens what it would continue, and says why a link is not (a file-system refusal, exit 6).
                    #expect(result.exitCode == (flags == ["-c"] && found != .folder ? 6 : 2), "\(flags): \(result)")
                    #expect(result.stderr.contains(found == .folder ? "\(destination) is a directory" : "\(destination)"), "\(flags): \(result.stderr)")
                    #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
                    #expect(!result.stderr.contains("--continue"), "\(flags): \(result.stderr)")
                    let kind = try FileManager.default.attributesOfItem(atPath: destination)[.type] as? FileAttributeType
                    #expect(kind == (found == .folder ? .typeDirectory : .typeSymbolicLink), "left as it was")
                    #expect(contentMismatch(target, expected: mine) == nil, "nothing written through the link")
                    #expect(!FileManager.default.fileExists(atPath: box.path("missing.bin")))
                }
                // Asked for, the download replaces a link (not what it leads to).
                if found != .folder {
                    let replaced = try await box.run(["get", nginx.url("/data/g.bin"), "-o", destination, "--overwrite"])
                    #expect(replaced.exitCode == 0, "\(replaced.stderr)")
                    #expect(contentMismatch(destination, expected: served) == nil)
                    #expect(contentMismatch(target, expected: mine) == nil)
                }
            }
        }
    }
}
