import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The file at the destination is the download and nothing else, as a user and an attacker meet it from the
/// command line and the daemon: stale partial files, names that collide, folders another user swaps.
@Suite struct DestinationIntegrityCLITests {
    /// A partial file no record of the download knows (another HAUL_HOME's, an older Haul's, a file someone named
    /// so): never continued, never removed without a word. Refused before any request, from `haul get` (one
    /// connection or several) and the daemon alike; once it is moved away, the download is exactly the server's.
    @Test func aStalePartialFileIsNeverContinuedNorRemoved() async throws {
        try await withTestServer { server in
            let small = TestData.bytes(100_000, seed: 950), large = TestData.bytes(3 << 20, seed: 951)
            server.serve("/small.bin", Resource(body: small, etag: "\"s\""))
            server.serve("/large.bin", Resource(body: large, etag: "\"l\""))
            try await Sandbox.with { box in
                let cases: [(name: String, stale: [UInt8], args: [String], body: [UInt8])] = [
                    ("a.bin", TestData.bytes(300_000, seed: 952), [server.url("/small.bin"), "--checksum", "sha256:" + sha256Hex(small)], small),
                    ("b.bin", TestData.bytes(5 << 20, seed: 953), [server.url("/large.bin"), "--segments", "4", "--min-segment-size", "256K"], large),
                ]
                for item in cases {
                    let partial = box.path(item.name + ".haul-part")
                    try writeBytes(item.stale, to: partial)
                    let refused = try await box.run(["get", "-o", item.name] + item.args)
                    #expect(refused.exitCode == 2, "\(refused)")
                    #expect(refused.stderr.contains("is already there, and no download of this URL"), "\(refused.stderr)")
                    #expect(contentMismatch(partial, expected: item.stale) == nil, "the stale file is left as it was")
                    try FileManager.default.removeItem(atPath: partial)
                    let done = try await box.run(["get", "-o", item.name] + item.args)
                    #expect(done.exitCode == 0, "\(done.stderr)")
                    #expect(contentMismatch(box.path(item.name), expected: item.body) == nil)
                }
                #expect(server.requests("/small.bin").count == 1 && server.requests("/large.bin").count >= 1)
                // The daemon: the task fails with the same words, and runs once the file is moved away.
                let stale = TestData.bytes(300_000, seed: 954)
                try writeBytes(stale, to: box.path("c.bin.haul-part"))
                let added = try await box.run(["add", server.url("/small.bin"), "-o", "c.bin"])
                let id = try #require(added.stdoutLines.first, "add failed: \(added.stderr)")
                let failed = try await box.run(["wait", id], timeout: .seconds(60))
                #expect(failed.exitCode != 0, "\(failed)")
                #expect(failed.stderr.contains("is already there, and no download of this URL"), "\(failed.stderr)")
                #expect(contentMismatch(box.path("c.bin.haul-part"), expected: stale) == nil)
                try FileManager.default.removeItem(atPath: box.path("c.bin.haul-part"))
                _ = try await box.run(["resume", id])
                let waited = try await box.run(["wait", id], timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                #expect(contentMismatch(box.path("c.bin"), expected: small) == nil)
                _ = try await box.run(["daemon", "stop"])
            }
        }
    }

    @Test func collidingNamesInABatchAndInTheDaemonGetAFileEach() async throws {
        try await withTestServer { server in
            // Six URLs whose last segment is the same name, each with other bytes.
            var bodies: [String: [UInt8]] = [:]
            for index in 0..<6 {
                let body = TestData.bytes(20_000 + index * 1_001, seed: UInt64(960 + index))
                bodies["/u\(index)/ok"] = body
                var resource = Resource(body: body, etag: "\"u\(index)\"")
                resource.faults.throttleBytesPerSecond = 200_000
                server.serve("/u\(index)/ok", resource)
            }
            let urls = bodies.keys.sorted().map { server.url($0) }
            func expectOneFileEach(_ folder: String, _ what: String) {
                let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
                #expect(names.count == 6, "\(what): \(names)")
                var matched: Set<String> = []
                for name in names {
                    let bytes = readBytes(folder + "/" + name)
                    let owner = bodies.first { $0.value == bytes }?.key
                    #expect(owner != nil, "\(what): \(name) is no URL's bytes")
                    if let owner { matched.insert(owner) }
                }
                #expect(matched.count == 6, "\(what): every URL's bytes are in a file of their own: \(matched.sorted())")
            }
            try await Sandbox.with { box in
                for run in 0..<2 {
                    let result = try await box.run(["get"] + urls + ["--dir", "D", "-j", "3"], timeout: .seconds(60))
                    #expect(result.exitCode == 0, "run \(run): \(result.stderr)")
                    #expect(!result.stderr.contains("another haul process"), "\(result.stderr)")
                    expectOneFileEach(box.path("D"), "batch run \(run)")
                }
                var ids: [String] = []
                for url in urls {
                    let added = try await box.run(["add", url, "--dir", "E"])
                    ids.append(try #require(added.stdoutLines.first, "add failed: \(added.stderr)"))
                }
                let waited = try await box.run(["wait"] + ids, timeout: .seconds(60))
                #expect(waited.exitCode == 0, "\(waited.stderr)")
                expectOneFileEach(box.path("E"), "daemon")
                _ = try await box.run(["daemon", "stop"])
            }
        }
    }

    /// Two batches whose HAUL_HOMEs differ (two accounts, or a daemon and a batch of different homes) share no
    /// locks, and fetch the same list into one folder at once. Each must still get every file, under a name of its
    /// own: the URL's name, or its next free one. A name the other batch published between this batch's looks and its
    /// create used to fail the download ("appeared while downloading"), or its create ("File exists").
    @Test func batchesOfTwoHomesIntoOneFolderEachGetEveryFileUnderAFreeName() async throws {
        try await withTestServer { server in
            var bodies: [String: [UInt8]] = [:]
            for index in 0..<150 {
                let body = TestData.bytes(500 + index * 13, seed: UInt64(4_000 + index))
                bodies["f\(index)"] = body
                server.serve("/f\(index).bin", Resource(body: body, etag: "\"f\(index)\""))
            }
            try await Sandbox.with { box in
                let list = bodies.keys.sorted().map { server.url("/\($0).bin") }.joined(separator: "\n") + "\n"
                try list.write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let other = box.root + "/other-home"
                try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
                // A few rounds, each into a folder of its own: the race is a matter of timing.
                for round in 0..<3 {
                    let folder = "D\(round)"
                    let arguments = ["get", "-i", "list.txt", "--dir", folder, "-j", "8"]
                    let first = try box.start(arguments)
                    let second = try box.start(arguments, environment: ["HAUL_HOME": other])
                    for (run, name) in [(first, "first"), (second, "second")] {
                        let result = try await run.wait(timeout: .seconds(120))
                        #expect(result.exitCode == 0, "round \(round), \(name): \(result.stderr)")
                    }
                    let names = try FileManager.default.contentsOfDirectory(atPath: box.path(folder))
                    #expect(names.count == 2 * bodies.count, "\(names.filter { !$0.hasSuffix(".bin") })")
                    var copies: [String: Int] = [:]
                    for name in names {
                        // "f7.bin" or "f7 (1).bin": the URL's name, or the next free one.
                        let stem = String(name.prefix { $0 != "." && $0 != " " })
                        #expect(name == "\(stem).bin" || name == "\(stem) (1).bin", "\(name)")
                        #expect(readBytes(box.path(folder + "/" + name)) == bodies[stem], "\(name) holds its URL's bytes")
                        copies[stem, default: 0] += 1
                    }
                    #expect(copies.values.allSatisfy { $0 == 2 }, "each URL once per batch: \(copies.filter { $0.value != 2 })")
                }
            }
        }
    }

    /// A file put at the destination after the download began is left as it is. The line says so, where the
    /// download is kept, and to move the file away and run again: not `--continue` (nothing of that file is to be
    /// resumed) nor `--overwrite`. Run again once the name is free, the download takes its place, asking the server
    /// only for the bytes that check it.
    @Test func aFileThatAppearsWhileDownloadingIsLeftAndTheLineSaysToMoveItAway() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(200_000, seed: 975)
            let resource = Resource(body: body, etag: "\"a\"")
            try await Sandbox.with { box in
                let destination = box.path("a.bin"), theirs = Data("theirs".utf8)
                server.route("/a.bin") { request in
                    // The name was free when the download began; it is taken by the time the request arrives.
                    if request.index == 0 { FileManager.default.createFile(atPath: destination, contents: theirs) }
                    return resource.response(to: request)
                }
                let first = try await box.run(["get", server.url("/a.bin"), "-o", "a.bin"])
                #expect(first.exitCode == 2, "\(first.stderr)")
                let line = first.stderrLines.last ?? ""
                #expect(line.hasPrefix("haul: error: ") && line.contains("a.bin appeared while downloading and was left as it is"), "\(first.stderr)")
                #expect(line.contains("the download is kept in \(destination).haul-part"), "\(line)")
                #expect(line.contains("move \(destination) away, then run the same command again"), "\(line)")
                #expect(!line.contains("--continue") && !line.contains("--overwrite"), "\(line)")
                #expect(FileManager.default.contents(atPath: destination) == theirs, "the other file is left as it is")
                #expect(readBytes(destination + ".haul-part") == body, "the download is kept whole")

                try FileManager.default.moveItem(atPath: destination, toPath: box.path("theirs.bin"))
                let second = try await box.run(["get", server.url("/a.bin"), "-o", "a.bin"])
                #expect(second.exitCode == 0, "\(second.stderr)")
                #expect(contentMismatch(destination, expected: body) == nil)
                #expect(FileManager.default.contents(atPath: box.path("theirs.bin")) == theirs)
                let again = try #require(server.requests("/a.bin").last)
                #expect(again.index == 1 && again.header("Range") == "bytes=\(body.count - 65_536)-", "only the last bytes, to check them")
            }
        }
    }

    #if os(Linux)
    /// The daemon runs as root and downloads into a folder of another user, mallory. While the task is paused,
    /// mallory replaces the folder with a link to a folder only root may write. The resumed task must not write
    /// there: it fails with one line naming the link.
    @Test(.enabled(if: LocalUser.available && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser"), "needs root, useradd and runuser to act as a second user"))
    func aFolderSwappedByAnotherUserNeverRedirectsTheDaemon() async throws {
        try await withTestServer { server in
            let body = TestData.bytes(2 << 20, seed: 970)
            var resource = Resource(body: body, etag: "\"m\"")
            resource.faults.throttleBytesPerSecond = 64 << 10
            server.serve("/b.bin", resource)
            try await LocalUser.with { mallory in
                try await Sandbox.with { box in
                    let home = box.root + "/mallory", secret = box.root + "/secret"
                    #expect(chmod(box.root, 0o755) == 0)
                    for folder in [home, home + "/dl"] {
                        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                        mallory.own(folder)
                    }
                    try FileManager.default.createDirectory(atPath: secret, withIntermediateDirectories: true)
                    #expect(chmod(secret, 0o700) == 0)

                    let added = try await box.run(["add", server.url("/b.bin"), "-o", home + "/dl/b.bin"])
                    let id = try #require(added.stdoutLines.first, "add failed: \(added.stderr)")
                    var listed = ""
                    try await eventuallyAsync("the download is under way (haul ls: \(listed))", timeout: .seconds(60)) {
                        if (fileSize(home + "/dl/b.bin.haul-part") ?? 0) > 0 { return true }
                        listed = try await box.run(["ls", "--json"]).stdout
                        return false
                    }
                    let paused = try await box.run(["pause", id])
                    #expect(paused.exitCode == 0, "\(paused.stderr)")
                    try mallory.shell("mv '\(home)/dl' '\(home)/dl.old' && ln -s '\(secret)' '\(home)/dl'")

                    _ = try await box.run(["resume", id])
                    let waited = try await box.run(["wait", id], timeout: .seconds(60))
                    #expect(waited.exitCode == 6, "\(waited.stdout) \(waited.stderr)")
                    #expect(waited.stderr.contains("\(home)/dl") && waited.stderr.contains("symbolic link"), "\(waited.stderr)")
                    #expect(try FileManager.default.contentsOfDirectory(atPath: secret).isEmpty, "nothing was written in the root-only folder")
                    _ = try await box.run(["daemon", "stop"])
                }
            }
        }
    }
    #endif
}
